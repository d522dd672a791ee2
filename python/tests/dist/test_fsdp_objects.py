"""What training code above torch.distributed calls on the tcomms group: FSDP2
(fully_shard) training, tensor parallelism, functional collectives (with
autograd), DTensor redistribution, distributed checkpoints and the object
collectives. References are computed here from every rank's inputs
(each rank can make any rank's data), not by another backend: gloo has no
reduce_scatter_tensor for FSDP2 to use."""
import os

import pytest
import torch
import torch.distributed as dist

STEPS = 3


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 5)
                               ).double()


def _batch(rank, step):
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(6, 12, generator=g, dtype=torch.float64)


def test_fsdp2_trains_as_one_process_would(rank, size):
    """fully_shard over the tcomms group (all-gathers and reduce-scatters of every layer's
    shards): the parameters after some SGD steps are those of one process that averages
    every rank's gradient itself, to float64 rounding."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    m = _model()
    mesh = init_device_mesh("cpu", (size,))
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(m, mesh=mesh)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    ref = _model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(STEPS):
        m(_batch(rank, step)).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
        # FSDP averages the ranks' gradients: the gradient of the mean of their losses
        (sum(ref(_batch(r, step)).pow(2).sum() for r in range(size)) / size).backward()
        ref_opt.step()
        ref_opt.zero_grad()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.full_tensor(), q.detach(), rtol=1e-12, atol=1e-12)


def test_tensor_parallel_as_one_process(rank, size):
    """parallelize_module (column-wise, then row-wise Linear): the output and the gradients
    equal those of the whole module in one process, to float64 rounding."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 4 * size), torch.nn.ReLU(),
                            torch.nn.Linear(4 * size, 8)).double()
    ref = torch.nn.Sequential(torch.nn.Linear(8, 4 * size), torch.nn.ReLU(),
                              torch.nn.Linear(4 * size, 8)).double()
    ref.load_state_dict(m.state_dict())
    parallelize_module(m, init_device_mesh("cpu", (size,)),
                       {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = _batch(0, 0)[:, :8]
    out = m(x)
    out.pow(2).sum().backward()
    want = ref(x)
    want.pow(2).sum().backward()
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    for i in (0, 2):
        torch.testing.assert_close(m[i].weight.grad.full_tensor(), ref[i].weight.grad,
                                   rtol=1e-12, atol=1e-12)


def test_functional_collectives_and_autograd(rank, size):
    """torch's functional collectives (what DTensor and compiled code issue) and
    torch.distributed.nn.functional, whose backward is a collective too."""
    import torch.distributed._functional_collectives as F
    import torch.distributed.nn.functional as NF
    t = torch.arange(4, dtype=torch.int64) + rank
    assert F.all_reduce(t, "sum", dist.group.WORLD).tolist() == \
        [size * i + size * (size - 1) // 2 for i in range(4)]
    assert F.all_gather_single(t, 0, dist.group.WORLD).tolist() == \
        [i + r for r in range(size) for i in range(4)]
    rs = F.reduce_scatter_single(torch.arange(4 * size, dtype=torch.int64), "sum", 0,
                                 dist.group.WORLD)
    assert rs.tolist() == [size * (4 * rank + i) for i in range(4)]
    x = torch.full((3,), float(rank + 1), dtype=torch.float64, requires_grad=True)
    y = NF.all_reduce(x)
    y.sum().backward()  # the gradient of a sum over ranks: every rank's ones, summed
    assert y.tolist() == [size * (size + 1) / 2] * 3
    assert x.grad.tolist() == [float(size)] * 3


def test_dtensor_redistribute(rank, size):
    """A DTensor sharded by rows, made whole (all_gather) and resharded by columns
    (all_to_all), holds the tensor it was made from, element by element."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (size,))
    whole = torch.arange(size * 3 * size * 2, dtype=torch.int64).reshape(size * 3, size * 2)
    t = distribute_tensor(whole, mesh, [Shard(0)])
    assert torch.equal(t.to_local(), whole.chunk(size, 0)[rank])
    assert torch.equal(t.full_tensor(), whole)
    cols = t.redistribute(mesh, [Shard(1)])
    assert torch.equal(cols.to_local(), whole.chunk(size, 1)[rank])
    assert torch.equal(cols.redistribute(mesh, [Replicate()]).to_local(), whole)


def test_checkpoint_of_a_sharded_tensor(rank, size, tmp_path_factory):
    """torch.distributed.checkpoint saves a row-sharded DTensor (each rank its rows; the
    plan agreed through gather_object and broadcast) and loads it back into one sharded by
    columns."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (size,))
    # one directory for every rank: rank 0 names it
    where = [str(tmp_path_factory.mktemp("dcp")) if rank == 0 else None]
    dist.broadcast_object_list(where, src=0)
    whole = torch.arange(size * 4 * size, dtype=torch.float32).reshape(size * 4, size) * 0.5
    dcp.save({"w": distribute_tensor(whole, mesh, [Shard(0)])}, checkpoint_id=where[0])
    back = {"w": distribute_tensor(torch.zeros_like(whole), mesh, [Shard(1)])}
    dcp.load(back, checkpoint_id=where[0])
    assert torch.equal(back["w"].to_local(), whole.chunk(size, 1)[rank])
    assert os.path.isdir(where[0])


def test_object_collectives(rank, size):
    mine = {"rank": rank, "text": "x" * (rank * 1000), "t": torch.arange(rank + 1)}
    every = [None] * size
    dist.all_gather_object(every, mine)
    for r, o in enumerate(every):
        assert o["rank"] == r and o["text"] == "x" * (r * 1000)
        assert torch.equal(o["t"], torch.arange(r + 1))
    root = size - 1
    objs = [("from", rank), [1, 2, 3], None] if rank == root else [None, None, None]
    dist.broadcast_object_list(objs, src=root)
    assert objs == [("from", root), [1, 2, 3], None]
    got = [None] * size if rank == 0 else None
    dist.gather_object(("g", rank, "y" * rank), got, dst=0)
    if rank == 0:
        assert got == [("g", r, "y" * r) for r in range(size)]
    out = [None]
    dist.scatter_object_list(out, [("s", r) for r in range(size)] if rank == root else None,
                             src=root)
    assert out == [("s", rank)]


def test_monitored_barrier_is_gloos_alone():
    """torch itself refuses monitored_barrier on any backend but gloo (said, not hung)."""
    with pytest.raises(RuntimeError, match="only GLOO supports monitored barrier"):
        dist.monitored_barrier()
