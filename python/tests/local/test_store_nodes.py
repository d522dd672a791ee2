"""Ranks on several hosts, started through a caller's store (torch's TCPStore, as
the torch backend starts): a host that holds consecutive ranks gives each its
local rank, so the ranks agree on the nodes and the hierarchical algorithms may
run; ranks placed round robin are refuted (local rank -1) and run flat. Each rank is a process
in a UTS namespace of its own with its host's name (root only). Results are
checked element by element against NumPy computed here; the placement tcomms
agreed is read from each rank's log."""
import ctypes
import multiprocessing as mp
import os
import re
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")

CLONE_NEWUTS = 0x04000000
N = 4096


def _can_unshare():
    if os.geteuid() != 0:
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(0 if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUTS) == 0 else 1)
    return os.waitpid(pid, 0)[1] == 0


pytestmark = pytest.mark.skipif(not _can_unshare(), reason="needs root and unshare(CLONE_NEWUTS)")


def _data(rank):
    return (np.arange(N, dtype=np.int64) * (rank + 3) + rank) % 1000


def _rank(rank, size, host, port, logdir, q):
    try:
        if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUTS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS)")
        socket.sethostname(host)
        os.environ.update(TC_LOG="info", TC_LOG_FILE=os.path.join(logdir, "r%r.log"))
        import datetime

        import torch.distributed as dist

        import tcomms
        store = dist.TCPStore("127.0.0.1", port, size, False, datetime.timedelta(seconds=60))
        c = tcomms.new_comm(store=store, rank=rank, size=size, name="nodes", timeout=60)
        got = []
        for hints in (None, {"algo": "hierarchical"}):
            x = _data(rank)
            c.all_reduce(x, hints=hints)
            got.append(x)
        b = _data(rank) if rank == size - 1 else np.zeros(N, dtype=np.int64)
        c.broadcast(b, size - 1, hints={"algo": "hierarchical"})
        got.append(b)
        info = c.info()
        c.finalize()
        q.put((rank, None, got, info["host"]))
    except BaseException as e:  # handed to the test
        q.put((rank, f"{type(e).__name__}: {e}", None, None))


@pytest.mark.parametrize("hosts, geometry", [
    (["n0", "n0", "n1", "n1"], r"\(local rank {lr}\): equal nodes, hierarchical algorithms may run"),
    (["n0", "n0", "n1", "n1", "n2"], r"\(local rank {lr}\): equal nodes, the last holding fewer, "
                                     r"hierarchical algorithms may run"),
    # local ranks known, but the hierarchical schedules take nodes of one size
    (["n0", "n0", "n0", "n1", "n1", "n2"], r"\(local rank {lr}\): the nodes are not consecutive "
                                           r"blocks of one size, hierarchical algorithms off"),
    (["n0", "n1", "n0", "n1"], r"\(local rank -1\): the nodes are not consecutive blocks"),  # round robin
])
def test_nodes_through_store(tmp_path, hosts, geometry, free_port):
    size = len(hosts)
    port = free_port
    server = torch.distributed.TCPStore("127.0.0.1", port, size + 1, True, wait_for_workers=False)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, size, hosts[r], port, str(tmp_path), q))
             for r in range(size)]
    for p in procs:
        p.start()
    results = {}
    try:
        for _ in range(size):
            r, err, got, host = q.get(timeout=120)
            results[r] = (err, got, host)
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    del server
    total = sum(_data(r) for r in range(size))
    for r in range(size):
        err, got, host = results[r]
        assert err is None, f"rank {r}: {err}"
        assert host == hosts[r]
        np.testing.assert_array_equal(got[0], total, err_msg=f"rank {r}: all_reduce")
        np.testing.assert_array_equal(got[1], total, err_msg=f"rank {r}: hierarchical all_reduce")
        np.testing.assert_array_equal(got[2], _data(size - 1), err_msg=f"rank {r}: broadcast")
        log = (tmp_path / f"r{r}.log").read_text()
        lr = r - hosts.index(hosts[r])
        assert re.search(geometry.format(lr=lr), log), f"rank {r}'s log:\n{log[-2000:]}"
