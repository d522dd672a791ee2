"""Collectives whose output and input share memory, as torch's callers write them, on the
tcomms group against gloo and against the result computed here from every rank's input
(each rank can make every other's): the output gets the result of the input as it was, on
every rank. Sizes: the small-message path and the large one."""
import pytest
import torch
import torch.distributed as dist

SIZES = [3, 40000]


def data(rank, n, salt):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    return torch.randint(0, 5, (n,), generator=g).to(torch.float32)


def every(fn, size, n, salt):
    return [fn(q, n, salt) for q in range(size)]


def check(what, got, want):
    assert torch.equal(got, want), f"{what}: {got[:8].tolist()} != {want[:8].tolist()}"


def on_both(gloo, fn):
    """fn(group) on tcomms (the default group), then on gloo."""
    return fn(None), fn(gloo)


@pytest.mark.parametrize("n", SIZES)
def test_reduce_scatter_into_the_start_of_its_input(gloo, rank, size, n):
    """reduce_scatter_tensor(x[:n], x): the result in x[:n], the rest of x as it was (it was
    taken for tcomms' in-place form on ranks >= 1: the result at block rank, x[:n] unchanged)."""
    def run(g):
        x = data(rank, size * n, 1)
        dist.reduce_scatter_tensor(x[:n], x, group=g)
        return x
    ours, theirs = on_both(gloo, run)
    total = sum(every(data, size, size * n, 1))
    want = data(rank, size * n, 1)
    want[:n] = total[rank * n:(rank + 1) * n]
    check("tcomms", ours, want)
    check("gloo", theirs, want)


@pytest.mark.parametrize("n", SIZES)
def test_reduce_scatter_in_place_nccl_form(gloo, rank, size, n):
    """reduce_scatter_tensor(x.chunk(W)[rank], x), as FSDP calls it (refused on ranks >= 1
    while rank 0 waited for them)."""
    def run(g):
        x = data(rank, size * n, 2)
        dist.reduce_scatter_tensor(x.chunk(size)[rank], x, group=g)
        return x.chunk(size)[rank].clone()
    ours, theirs = on_both(gloo, run)
    want = sum(every(data, size, size * n, 2))[rank * n:(rank + 1) * n]
    check("tcomms", ours, want)
    check("gloo", theirs, want)


@pytest.mark.parametrize("n", SIZES)
def test_all_gather_in_place_and_from_the_start_of_its_output(gloo, rank, size, n):
    """all_gather_into_tensor(out, out.chunk(W)[rank]) (the library's in-place form) and
    all_gather_into_tensor(out, out[:n]) on every rank (the input overlaps another block)."""
    want = torch.cat(every(data, size, n, 3))
    for where in ("own block", "start"):
        def run(g):
            out = torch.full((size * n,), -1.0)
            inp = out.chunk(size)[rank] if where == "own block" else out[:n]
            inp.copy_(data(rank, n, 3))
            dist.all_gather_into_tensor(out, inp, group=g)
            return out
        ours, theirs = on_both(gloo, run)
        check(f"tcomms, input at the {where}", ours, want)
        check(f"gloo, input at the {where}", theirs, want)


@pytest.mark.parametrize("n", SIZES)
def test_all_to_all_single_output_overlapping_its_input(rank, size, n):
    """all_to_all_single with the output one element past the input's start (equal splits:
    blocks of n; uneven: rank r sends q + 1 elements to rank q). Against the result computed
    here only: gloo overwrites input it has not sent yet and gives another."""
    buf = torch.zeros(size * n + 1)
    buf[:size * n] = data(rank, size * n, 4)
    dist.all_to_all_single(buf[1:], buf[:size * n])
    ins = every(data, size, size * n, 4)
    check("tcomms", buf[1:], torch.cat([ins[q][rank * n:(rank + 1) * n] for q in range(size)]))

    splits_in = [q + 1 for q in range(size)]   # to rank q
    splits_out = [rank + 1] * size             # from each rank
    got = torch.zeros(size * (rank + 1) + sum(splits_in))
    got[:sum(splits_in)] = data(rank, sum(splits_in), 5)
    dist.all_to_all_single(got[1:1 + sum(splits_out)], got[:sum(splits_in)], splits_out,
                           splits_in)
    src = every(data, size, sum(splits_in), 5)
    check("tcomms, uneven", got[1:1 + sum(splits_out)],
          torch.cat([src[q][sum(splits_in[:rank]):sum(splits_in[:rank + 1])]
                     for q in range(size)]))
