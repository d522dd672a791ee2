"""Every torch.distributed operation on the tcomms group against gloo on the
same inputs, element by element. Values are small integers (also in floating
types) so that sums are exact whatever the order of reduction."""
import pytest
import torch
import torch.distributed as dist

import tcomms

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.int8, torch.uint8]


def data(rank, n, dtype, salt=0):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    return torch.randint(0, 5, (n,), generator=g).to(dtype)


def both(fn, dtype=None):
    """fn(group) on tcomms (the default group) and on gloo; both results. With
    @p dtype bfloat16 or bool (which gloo lacks), fn(group, dtype) runs on gloo
    in float32 or uint8 (exact for these small integers) and its result is
    cast back."""
    if dtype is None:
        return fn(None), fn(pytest.gloo_group)
    ref = {torch.bfloat16: torch.float32, torch.bool: torch.uint8}.get(dtype, dtype)
    return fn(None, dtype), fn(pytest.gloo_group, ref).to(dtype)


@pytest.fixture(autouse=True)
def _gloo(gloo):
    pytest.gloo_group = gloo


def check(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(a, b), f"tcomms {a.tolist()} != gloo {b.tolist()}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 4096])
def test_all_reduce(rank, dtype, n):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN]
    if dtype not in (torch.float16, torch.bfloat16):
        ops.append(dist.ReduceOp.PRODUCT)
    for op in ops:
        x = data(rank, n, dtype, 1)
        if op == dist.ReduceOp.PRODUCT:
            x = x.clamp(max=2)
        a, b = both(lambda g, dt: (lambda t: (dist.all_reduce(t, op, group=g), t)[1])(
            x.clone().to(dt)), dtype)
        check(a, b)


@pytest.mark.parametrize("n", [1, 7, 4096])
def test_bool_reductions(rank, size, n):
    """Booleans reduce logically, as torch's gloo backend reduces them: sum is or, product
    is and (tcomms refused them before). The reference is every rank's data, made here."""
    every = torch.stack([data(r, n, torch.int64, 11) > 2 for r in range(size)])
    want = {dist.ReduceOp.SUM: every.any(0), dist.ReduceOp.MAX: every.any(0),
            dist.ReduceOp.BOR: every.any(0), dist.ReduceOp.PRODUCT: every.all(0),
            dist.ReduceOp.MIN: every.all(0), dist.ReduceOp.BAND: every.all(0),
            dist.ReduceOp.BXOR: every.sum(0) % 2 == 1}
    for op, ref in want.items():
        x = every[rank].clone()
        dist.all_reduce(x, op)
        check(x, ref)
    x = every[rank].clone()
    dist.reduce(x, size - 1, dist.ReduceOp.SUM)
    if rank == size - 1:
        check(x, want[dist.ReduceOp.SUM])
    out = torch.zeros(n, dtype=torch.bool)
    dist.reduce_scatter_tensor(out, every[rank].repeat(size), dist.ReduceOp.PRODUCT)
    check(out, want[dist.ReduceOp.PRODUCT])
    with pytest.raises(ValueError, match="no average of torch.bool"):
        dist.all_reduce(every[rank].clone(), dist.ReduceOp.AVG)


def test_ranks_differ_in_async_op(rank):
    """torch lets ranks differ in async_op: rank 0 asynchronous, the others blocking, for
    small messages (which tcomms runs on another path when blocking) and a large one."""
    for n in (1, 100, 1 << 16):
        def run(g):
            t = data(rank, n, torch.float32, 3)
            if rank == 0:
                dist.all_reduce(t, group=g, async_op=True).wait()
            else:
                dist.all_reduce(t, group=g)
            return t
        check(*both(run))


def test_all_reduce_bitwise(rank):
    for op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        x = data(rank, 33, torch.int64, 2) * 37
        a, b = both(lambda g: (lambda t: (dist.all_reduce(t, op, group=g), t)[1])(x.clone()))
        check(a, b)


def test_all_reduce_coalesced(rank):
    xs = [data(rank, n, torch.float32, 3 + n) for n in (3, 17, 1000)]
    a, b = both(lambda g: (lambda ts: (dist.all_reduce_coalesced(ts, group=g), ts)[1])(
        [x.clone() for x in xs]))
    for x, y in zip(a, b):
        check(x, y)


def test_all_reduce_non_contiguous(rank):
    x = data(rank, 64, torch.float32, 4).reshape(8, 8).t()
    a, b = both(lambda g: (lambda t: (dist.all_reduce(t, group=g), t)[1])(x.clone().t().t()))
    assert not x.is_contiguous()
    check(a, b)


@pytest.mark.parametrize("root", [0, -1])
def test_broadcast_and_reduce(rank, size, root):
    root = root % size
    x = data(rank, 100, torch.float64, 5)
    check(*both(lambda g: (lambda t: (dist.broadcast(t, root, group=g), t)[1])(x.clone())))
    x = data(rank, 100, torch.int32, 6)
    a, b = both(lambda g: (lambda t: (dist.reduce(t, root, group=g), t)[1])(x.clone()))
    if rank == root:
        check(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_all_gather(rank, size, dtype):
    x = data(rank, 10, dtype, 7)

    def lst(g, dt):
        out = [torch.zeros(10, dtype=dt) for _ in range(size)]
        dist.all_gather(out, x.to(dt), group=g)
        return torch.stack(out)

    check(*both(lst, dtype))
    # into one tensor (gloo's list form is the reference: gloo lacks bfloat16 and bool here)
    out = torch.zeros(size * 10, dtype=dtype)
    dist.all_gather_into_tensor(out, x)
    check(out, both(lst, dtype)[1].reshape(-1))


def test_reduce_scatter(rank, size):
    xs = [data(rank, 9, torch.float32, 8 + k) for k in range(size)]

    def lst(g):
        out = torch.zeros(9)
        dist.reduce_scatter(out, [x.clone() for x in xs], group=g)
        return out

    def flat(g):
        out = torch.zeros(9)
        inp = torch.cat(xs)
        dist.reduce_scatter_tensor(out, inp, group=g)
        return out

    a = lst(None)
    # gloo has no reduce_scatter: the reference is the sum of every rank's block
    ref = torch.zeros(size * 9)
    dist.all_reduce(ref.copy_(torch.cat(xs)), group=pytest.gloo_group)
    check(a, ref[rank * 9:(rank + 1) * 9])
    check(flat(None), ref[rank * 9:(rank + 1) * 9])


def test_all_to_all(rank, size):
    x = data(rank, 6 * size, torch.float32, 9)
    check(*both(lambda g: (lambda o: (dist.all_to_all_single(o, x, group=g), o)[1])(
        torch.zeros_like(x))))
    # uneven splits: rank r sends r + q + 1 rows of 3 to rank q
    ins = [rank + q + 1 for q in range(size)]
    outs = [q + rank + 1 for q in range(size)]
    xi = data(rank, sum(ins) * 3, torch.int64, 10).reshape(-1, 3)

    def uneven(g):
        o = torch.zeros(sum(outs), 3, dtype=torch.int64)
        dist.all_to_all_single(o, xi, outs, ins, group=g)
        return o
    check(*both(uneven))

    # the list form (gloo has none: all_to_all_single is the reference)
    inp = [data(rank, 4, torch.float32, 11 + q) for q in range(size)]
    out = [torch.zeros(4) for _ in range(size)]
    dist.all_to_all(out, inp)
    ref = torch.zeros(4 * size)
    dist.all_to_all_single(ref, torch.cat(inp), group=pytest.gloo_group)
    check(torch.cat(out), ref)


def test_gather_scatter(rank, size):
    root = size - 1
    x = data(rank, 5, torch.float32, 12)

    def gather(g):
        out = [torch.zeros(5) for _ in range(size)] if rank == root else None
        dist.gather(x, out, dst=root, group=g)
        return torch.stack(out) if out else torch.zeros(0)

    def scatter(g):
        out = torch.zeros(5)
        ins = [data(q, 5, torch.float32, 13) for q in range(size)] if rank == root else None
        dist.scatter(out, ins, src=root, group=g)
        return out
    check(*both(gather))
    check(*both(scatter))


def test_send_recv(rank, size):
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    x = data(rank, 50, torch.float32, 14)

    def ring(g):
        out = torch.zeros(50)
        if rank % 2 == 0:
            dist.send(x, nxt, group=g)
            dist.recv(out, prv, group=g)
        else:
            dist.recv(out, prv, group=g)
            dist.send(x, nxt, group=g)
        return out
    check(*both(ring))

    def batch(g):
        out = torch.zeros(50)
        ops = [dist.P2POp(dist.isend, x, nxt, g), dist.P2POp(dist.irecv, out, prv, g)]
        for r in dist.batch_isend_irecv(ops):
            r.wait()
        return out
    check(*both(batch))


def test_barrier_and_async_overlap(rank, size):
    dist.barrier()
    xs = [data(rank, 1 << 16, torch.float32, 20 + k) for k in range(4)]
    ts = [x.clone() for x in xs]
    works = [dist.all_reduce(t, async_op=True) for t in ts]  # all in flight at once
    for w in works:
        w.wait()
    for x, t in zip(xs, ts):
        ref = x.clone()
        dist.all_reduce(ref, group=pytest.gloo_group)
        check(t, ref)
    # futures complete without anyone waiting on the work
    t = data(rank, 1000, torch.float32, 30)
    fut = dist.all_reduce(t, async_op=True).get_future()
    import time
    deadline = time.time() + 30
    while not fut.done() and time.time() < deadline:
        time.sleep(0.001)
    assert fut.done()


def test_subgroups_concurrently(rank, size):
    evens = [r for r in range(size) if r % 2 == 0]
    odds = [r for r in range(size) if r % 2 == 1]
    ge = dist.new_group(evens, backend="tcomms")
    go = dist.new_group(odds, backend="tcomms") if odds else None
    gw = dist.new_group(list(range(size)), backend="tcomms")
    mine, members = (ge, evens) if rank % 2 == 0 else (go, odds)
    x = data(rank, 256, torch.float32, 40)
    y = data(rank, 256, torch.float32, 41)
    w1 = dist.all_reduce(x, group=mine, async_op=True)
    w2 = dist.all_reduce(y, group=gw, async_op=True)
    w1.wait()
    w2.wait()
    want_x = sum(data(r, 256, torch.float32, 40) for r in members)
    want_y = sum(data(r, 256, torch.float32, 41) for r in range(size))
    check(x, want_x)
    check(y, want_y)


@pytest.mark.parametrize("device", [None, torch.device("cpu")])
@pytest.mark.parametrize("async_ops", [False, True])
def test_coalescing_manager(rank, size, device, async_ops):
    """all_reduce, all_gather_into_tensor and reduce_scatter_tensor inside
    dist._coalescing_manager (one coalesced call to the backend; with a device
    also its start/end coalescing hooks: one work), each against gloo one by one."""
    ns = (3, 17, 1000)
    xs = [data(rank, n, torch.float32, 50 + n) for n in ns]
    outs = [torch.zeros(n * size) for n in ns]
    rss = [torch.zeros(n) for n in ns]
    ars = [x.clone() for x in xs]
    rins = [torch.cat([data(rank, n, torch.float32, 60 + q) for q in range(size)]) for n in ns]
    for what in ("all_reduce", "all_gather", "reduce_scatter"):
        with dist._coalescing_manager(device=device, async_ops=async_ops) as cm:
            for k in range(len(ns)):
                if what == "all_reduce":
                    dist.all_reduce(ars[k])
                elif what == "all_gather":
                    dist.all_gather_into_tensor(outs[k], xs[k])
                else:
                    dist.reduce_scatter_tensor(rss[k], rins[k])
        if async_ops:
            assert len(cm.works) == 1
            cm.wait()
    for k, n in enumerate(ns):
        ref = xs[k].clone()
        dist.all_reduce(ref, group=pytest.gloo_group)
        check(ars[k], ref)
        parts = [torch.zeros(n) for _ in range(size)]
        dist.all_gather(parts, xs[k], group=pytest.gloo_group)
        check(outs[k], torch.cat(parts))
        ref = rins[k].clone()
        dist.all_reduce(ref, group=pytest.gloo_group)
        check(rss[k], ref[rank * n:(rank + 1) * n])


def test_all_gather_coalesced(rank, size):
    xs = [data(rank, n, torch.int64, 70 + n) for n in (2, 9)]

    def run(g):
        outs = [[torch.zeros_like(x) for _ in range(size)] for x in xs]
        dist.all_gather_coalesced(outs, xs, group=g)
        return torch.cat([torch.cat(o) for o in outs])
    ours = run(None)
    ref = torch.cat([torch.cat(o) for o in [[torch.zeros_like(x) for _ in range(size)]
                                            for x in xs]])
    k = 0
    for x in xs:  # gloo one tensor at a time
        parts = [torch.zeros_like(x) for _ in range(size)]
        dist.all_gather(parts, x, group=pytest.gloo_group)
        ref[k:k + x.numel() * size] = torch.cat(parts)
        k += x.numel() * size
    check(ours, ref)


def test_batch_isend_irecv_is_one_batch(rank, size):
    """Sends and receives to both neighbours in one batch_isend_irecv: one tcomms
    batch, one work, the data as gloo moves it."""
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    a, b = data(rank, 40, torch.float64, 80), data(rank, 7, torch.int32, 81)

    def run(g):
        ra, rb = torch.zeros(40, dtype=torch.float64), torch.zeros(7, dtype=torch.int32)
        ops = [dist.P2POp(dist.irecv, ra, prv, g), dist.P2POp(dist.isend, a, nxt, g),
               dist.P2POp(dist.isend, b, prv, g), dist.P2POp(dist.irecv, rb, nxt, g)]
        works = dist.batch_isend_irecv(ops)
        for w in works:
            w.wait()
        return works, torch.cat([ra, rb.to(torch.float64)])
    works, ours = run(None)
    assert len(works) == 1
    check(ours, run(pytest.gloo_group)[1])


def test_send_recv_tag_refused(rank, size):
    with pytest.raises(ValueError, match="takes no tags"):
        dist.send(torch.zeros(1), (rank + 1) % size, tag=5)
    dist.barrier()


def test_recv_any_source_refused(rank):
    for recv in (dist.recv, dist.irecv):
        with pytest.raises(tcomms.UnsupportedError, match=f"recv from any source \\(src=None\\) "
                                                          f"on rank {rank}: .* pass src") as e:
            recv(torch.zeros(2))
        assert e.value.status_name == "TC_ERR_UNSUPPORTED"
    dist.barrier()  # the group still works

