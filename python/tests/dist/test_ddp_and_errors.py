"""DDP training with tcomms and with gloo gives equal parameters; bad input
raises instead of crashing or hanging."""
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tcomms
from tcomms.torch import backend_of


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 4))


def train(group, rank, steps=8):
    m = DDP(model(), process_group=group, bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    for _ in range(steps):
        x, y = torch.randn(16, 32, generator=g), torch.randn(16, 4, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in m.parameters()]


def test_ddp_equal_parameters(rank, gloo):
    ours = train(None, rank)
    theirs = train(gloo, rank)
    for a, b in zip(ours, theirs):
        # the same gradients summed in the same order of two ranks: bitwise at 2 ranks;
        # at 4 the order of summation may differ between the libraries
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (a - b).abs().max()
    # and every rank holds the same parameters
    for p in ours:
        ref = p.clone()
        dist.broadcast(ref, 0, group=gloo)
        assert torch.equal(p, ref)


def _hooked(group, rank, hook, state, steps=5, extra=0, bucket_mb=0.01):
    """train()'s model under DDP with comm hook @p hook; rank r runs @p extra * r more steps
    inside Join (uneven inputs)."""
    from torch.distributed.algorithms.join import Join
    m = DDP(model(), process_group=group, bucket_cap_mb=bucket_mb)
    if hook is not None:
        m.register_comm_hook(state(group) if state else group, hook)
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    with Join([m]):
        for _ in range(steps + extra * rank):
            x, y = torch.randn(16, 32, generator=g), torch.randn(16, 4, generator=g)
            opt.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            opt.step()
    return [p.detach().clone() for p in m.parameters()]


def _power_sgd(group):
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as P
    return P.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                           start_powerSGD_iter=2)


@pytest.mark.parametrize("name", ["fp16", "bf16", "power_sgd", "join"])
def test_ddp_comm_hooks_and_join(rank, gloo, name):
    """DDP's communication hooks (compressing, and PowerSGD, whose callbacks issue further
    all-reduces and wait for them: it hung) and Join with uneven inputs: the same parameters
    as with gloo. PowerSGD with one bucket: with several, its callbacks issue all-reduces
    while the backward issues the next buckets', in an order that differs between ranks
    under any backend that matches operations by issue order (docs/python.md)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as D
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as P
    hook, state, extra = {"fp16": (D.fp16_compress_hook, None, 0),
                          "bf16": (D.bf16_compress_hook, None, 0),
                          "power_sgd": (P.powerSGD_hook, _power_sgd, 0),
                          "join": (None, None, 1)}[name]
    mb = 25 if name == "power_sgd" else 0.01
    ours = _hooked(None, rank, hook, state, extra=extra, bucket_mb=mb)
    theirs = _hooked(gloo, rank, hook, state, extra=extra, bucket_mb=mb)
    # compressed: at 4 ranks the libraries sum the half-precision gradients in different
    # orders, a unit in the last place of bf16 (2**-8) apart; a gradient not reduced at all
    # moves the parameters by about 1e-2
    tol = 1e-4 if name in ("fp16", "bf16") else 1e-6
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, rtol=1e-5, atol=tol), (a - b).abs().max()


def test_wrong_dtype_raises():
    with pytest.raises(TypeError, match="no reduction on element type torch.int16"):
        dist.all_reduce(torch.zeros(4, dtype=torch.int16))


def test_unsupported_reduction_named():
    with pytest.raises(ValueError, match="reduction PREMUL_SUM is not supported"):
        dist.all_reduce(torch.ones(4), op=dist._make_nccl_premul_sum(2.0))
    dist.barrier()


def test_mismatched_sizes_raise(size):
    x = torch.zeros(10)
    with pytest.raises(ValueError, match="all_gather_into_tensor output has"):
        dist.all_gather_into_tensor(torch.zeros(10 * size + 1), x)
    with pytest.raises(ValueError, match="allgather tensor 1 is"):
        dist.all_gather([torch.zeros(10), torch.zeros(3)] + [torch.zeros(10)] * (size - 2), x)
    with pytest.raises(ValueError, match="reduce_scatter_tensor input has"):
        dist.reduce_scatter_tensor(torch.zeros(10), torch.zeros(10 * size - 1))
    # a root out of range is refused by tcomms with its own message
    with pytest.raises(tcomms.InvalidArgumentError, match="root"):
        backend_of().comm().broadcast(x, size + 3)
    dist.barrier()  # the communicator still works after refused calls


def test_destroyed_group_raises(rank, size):
    g = dist.new_group(list(range(size)), backend="tcomms")
    pg = backend_of(g)
    dist.all_reduce(torch.ones(2), group=g)
    dist.destroy_process_group(g)  # shuts the backend down: its communicator is destroyed
    with pytest.raises(tcomms.Error, match="destroyed"):
        pg.comm().all_reduce(torch.ones(2))
    with pytest.raises(tcomms.Error, match="destroyed"):
        g.allreduce([torch.ones(2)])  # the group object itself still reaches the backend
    with pytest.raises(ValueError, match="not initialized"):
        dist.all_reduce(torch.ones(2), group=g)
    pg.shutdown()  # again: nothing happens
    dist.barrier()  # the default group is unaffected


def test_ddp_async_failure_raises(rank, size):
    """An all_reduce that fails after it was issued (rank 0's DDP backward that
    no other rank joins, timing out) fails the backward with the tcomms error,
    for DDP's reducer (C++) reads the work's future: before, the error was set
    for Python only and the reducer, reading it as tensors, crashed."""
    g = dist.new_group(list(range(size)), backend="tcomms", timeout=timedelta(seconds=5))
    m = DDP(model(), process_group=g)  # collective: every rank
    if rank == 0:
        loss = m(torch.randn(4, 32)).sum()
        with pytest.raises(RuntimeError, match="all_reduce .* timed out after 5000 ms"):
            loss.backward()
        with pytest.raises(tcomms.Error, match="unusable since an earlier failure"):
            dist.all_reduce(torch.ones(4), group=g, async_op=True)
    dist.barrier()
    dist.destroy_process_group(g)
