"""A process group destroyed and made again in the same processes, as a test
suite or a restarting trainer does: init_process_group("tcomms"),
destroy_process_group(), init_process_group("tcomms") again on the same store,
and the new group works (torch names the default group "0" every time, so
both groups meet under the same keys of the store). Subgroups too. And
torchrun's restarts, whose attempts meet in one store. Results are checked
element by element against sums computed here."""
import multiprocessing as mp
import os
import time

import pytest

torch = pytest.importorskip("torch")

SIZE = 3
ROUNDS = 3


def _expect(n, rnd):
    """The sum over the ranks of rank r's data in round @p rnd."""
    return [sum((i + 1) * (r + 1) + rnd for r in range(SIZE)) for i in range(n)]


def _rank(rank, port, q):
    try:
        import datetime

        import torch.distributed as dist

        import tcomms.torch  # noqa: F401
        store = dist.TCPStore("127.0.0.1", port, SIZE, rank == 0,
                              timeout=datetime.timedelta(seconds=60))
        got = []
        for rnd in range(ROUNDS):
            dist.init_process_group("tcomms", store=store, rank=rank, world_size=SIZE,
                                    timeout=datetime.timedelta(seconds=60))
            t = (torch.arange(1, 1001, dtype=torch.int64) * (rank + 1) + rnd)
            dist.all_reduce(t)
            got.append(t.tolist())
            sub = dist.new_group([0, 1])  # the same subgroup name every round too
            if rank < 2:
                u = torch.full((8,), rank + rnd, dtype=torch.int32)
                dist.all_reduce(u, group=sub)
                got.append(u.tolist())
            dist.destroy_process_group()
        q.put((rank, None, got))
    except BaseException as e:  # handed to the test
        q.put((rank, f"{type(e).__name__}: {e}", None))


def test_destroy_then_init_again(free_port):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, free_port, q)) for r in range(SIZE)]
    for p in procs:
        p.start()
    results = {}
    deadline = time.monotonic() + 120
    while len(results) < SIZE and time.monotonic() < deadline:
        try:
            r, err, got = q.get(timeout=1)
            results[r] = (err, got)
        except Exception:  # queue.Empty: keep waiting until the deadline
            pass
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    assert sorted(results) == list(range(SIZE)), results
    for r, (err, got) in results.items():
        assert err is None, (r, err)
        want = []
        for rnd in range(ROUNDS):
            want.append(_expect(1000, rnd))
            if r < 2:
                want.append([2 * rnd + 1] * 8)  # ranks 0 and 1: (0 + rnd) + (1 + rnd)
        assert got == want, r


_ELASTIC_WORKER = """
import os, sys, datetime
import torch, torch.distributed as dist
import tcomms.torch
dist.init_process_group("tcomms", timeout=datetime.timedelta(seconds=30))
r, n = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
t = torch.arange(5, dtype=torch.int64) * (r + 1) + attempt
dist.all_reduce(t)
print(f"rank {r} attempt {attempt}: {t.tolist()}", flush=True)
if attempt == 0 and r == n - 1:
    os._exit(3)  # the first attempt fails: torchrun restarts every worker
dist.barrier()
dist.destroy_process_group()
"""


def test_torchrun_restart(tmp_path, free_port):
    """torchrun --max-restarts 1, a worker of the first attempt exiting: the second attempt's
    workers meet in the same agent store, where the first attempt's keys remain (its rank
    claims counted twice: "rank 0 is taken"), and the second attempt works."""
    import subprocess
    import sys
    script = tmp_path / "worker.py"
    script.write_text(_ELASTIC_WORKER)
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(SIZE),
         "--max-restarts", "1", "--monitor-interval", "0.5", "--master_port", str(free_port),
         str(script)], env=env, capture_output=True, text=True, timeout=150)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    tri = SIZE * (SIZE + 1) // 2
    for attempt in (0, 1):
        want = [i * tri + SIZE * attempt for i in range(5)]
        for r in range(SIZE):
            assert f"rank {r} attempt {attempt}: {want}" in out, out[-3000:]
