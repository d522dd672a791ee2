"""A rank killed in the middle of training: every survivor's next operation
raises an exception naming it, within seconds, and nobody hangs: a blocking
all_reduce, and the wait() of an asynchronous one (torch 2.15's Work made from
a Future returned True there). Processes
started as torchrun starts them (env://: MASTER_ADDR, MASTER_PORT, RANK,
WORLD_SIZE), the "tcomms" backend bootstrapping through torch's store."""
import multiprocessing as mp
import os
import signal
import time

import pytest

torch = pytest.importorskip("torch")

VICTIM = 2
SIZE = 4


def _rank(rank, port, q, done, ready, async_op):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(SIZE))
    import datetime

    import torch.distributed as dist

    import tcomms.torch  # noqa: F401
    dist.init_process_group("tcomms", timeout=datetime.timedelta(seconds=60))
    t = torch.ones(1 << 16)
    dist.all_reduce(t)
    dist.barrier()
    if async_op and rank != VICTIM:
        # issued before the victim dies: its wait() must raise, not the next call's issue
        work = dist.all_reduce(t, async_op=True)
    ready.wait(60)
    if rank == VICTIM:
        os.kill(os.getpid(), signal.SIGKILL)
    t0 = time.monotonic()
    try:
        if async_op:
            q.put((rank, f"wait() returned {work.wait()}", time.monotonic() - t0))
        else:
            for _ in range(1000):
                dist.all_reduce(t)
            q.put((rank, "no error", 0.0))
    except Exception as e:  # what the survivor saw, and when
        q.put((rank, f"{type(e).__name__}: {e}", time.monotonic() - t0))
    q.close()
    q.join_thread()
    done.wait(60)  # stay until every survivor has reported (an exit is a failure too)
    os._exit(0)  # the group cannot be torn down cleanly with a dead member


@pytest.mark.parametrize("async_op", [False, True])
def test_killed_rank_named_within_seconds(async_op, free_port):
    ctx = mp.get_context("spawn")
    q, done, ready = ctx.Queue(), ctx.Event(), ctx.Barrier(SIZE)
    port = free_port
    procs = [ctx.Process(target=_rank, args=(r, port, q, done, ready, async_op))
             for r in range(SIZE)]
    for p in procs:
        p.start()
    # reap the victim as soon as it dies, as a launcher does: tcomms spreads a
    # failure only once the process is gone (a zombie still answers kill(pid, 0))
    import threading
    threading.Thread(target=procs[VICTIM].join, daemon=True).start()
    results = {}
    deadline = time.monotonic() + 90
    while len(results) < SIZE - 1 and time.monotonic() < deadline:
        try:
            r, what, secs = q.get(timeout=1)
            results[r] = (what, secs)
        except Exception:  # queue.Empty: keep waiting until the deadline
            pass
    done.set()
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    assert sorted(results) == [r for r in range(SIZE) if r != VICTIM], results
    for r, (what, secs) in results.items():
        assert f"rank {VICTIM}" in what, (r, what)
        assert secs < 10, (r, what, secs)
