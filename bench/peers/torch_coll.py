#!/usr/bin/python3
"""PyTorch's torch.distributed collectives on its gloo backend (CPU, float32 sum, root 0), timed
the way tcperf times tcomms' (warm-up, then the mean of iters back-to-back operations around
time.perf_counter, max over ranks), for bench/run_collectives.sh. Start one process per rank:

  torch_coll.py -r RANK -s NRANKS -p INIT_FILE [-c all_reduce,...] [-b 8] [-e 64M] [-f 2]
                [-n iters] [-w warmup] [-L large_bytes -N large_iters -W large_warmup]

Prints "<coll> <bytes> <time_us> <algbw GB/s> <busbw GB/s>" like bench/peers/coll_sweep.h
(same bytes and busbw definitions), and "# <coll> n/a: <why>" for what the backend lacks.
torch.distributed's API shapes what is measured: all_reduce, reduce and broadcast are in place;
all_gather fills a list of views of one tensor; INIT_FILE must not exist yet."""
import argparse
import datetime
import os
import sys
import time

COLLS = ["all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all",
         "gather", "scatter", "barrier"]
CHUNKED = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"}


def parse_size(s):
    mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}.get(s[-1:].lower(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def bus_factor(coll, n):
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n if n > 1 else 0.0
    if coll in ("reduce", "broadcast"):
        return 1.0
    if coll == "barrier":
        return 0.0
    return (n - 1) / n


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-r", type=int, required=True, help="rank")
    p.add_argument("-s", type=int, required=True, help="number of ranks")
    p.add_argument("-p", required=True, help="rendezvous file (must not exist yet)")
    p.add_argument("-c", default="all_reduce", help="comma-separated collectives")
    p.add_argument("-b", type=parse_size, default=8)
    p.add_argument("-e", type=parse_size, default=64 << 20)
    p.add_argument("-f", type=int, default=2)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("-L", type=parse_size, default=1 << 62)
    p.add_argument("-N", type=int, default=5)
    p.add_argument("-W", type=int, default=2)
    a = p.parse_args()
    a.c = a.c.split(",")
    bad = [c for c in a.c if c not in COLLS]
    if bad or a.f < 2 or not 0 < a.b <= a.e or not 0 <= a.r < a.s:
        p.error("bad arguments: " + (("unknown collective " + bad[0]) if bad else "sizes/ranks"))
    return a


def make_op(dist, torch, coll, count, rank, n):
    """Returns a function doing one operation on count elements (per rank, or per chunk)."""
    total = count * n if coll in CHUNKED else count
    s = torch.ones(total, dtype=torch.float32)
    r = torch.zeros(total, dtype=torch.float32)
    if coll == "all_reduce":
        return lambda: dist.all_reduce(r)
    if coll == "reduce":
        return lambda: dist.reduce(r, dst=0)
    if coll == "broadcast":
        return lambda: dist.broadcast(r, src=0)
    if coll == "all_gather":
        outs, mine = list(r.chunk(n)), s[:count]
        return lambda: dist.all_gather(outs, mine)
    if coll == "reduce_scatter":
        ins, out = list(s.chunk(n)), r[:count]
        return lambda: dist.reduce_scatter(out, ins)
    if coll == "all_to_all":
        return lambda: dist.all_to_all_single(r, s)
    if coll == "gather":
        outs, mine = (list(r.chunk(n)) if rank == 0 else None), s[:count]
        return lambda: dist.gather(mine, gather_list=outs, dst=0)
    if coll == "scatter":
        ins, out = (list(s.chunk(n)) if rank == 0 else None), r[:count]
        return lambda: dist.scatter(out, scatter_list=ins, src=0)
    return dist.barrier


def main():
    a = parse_args()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + a.p, rank=a.r, world_size=a.s,
                            timeout=datetime.timedelta(seconds=300))
    n = a.s

    def max_over_ranks(v):
        t = torch.tensor([v], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    if a.r == 0:
        print("# torch_coll: %d ranks, torch %s gloo backend, float32 sum, root 0"
              % (n, torch.__version__), flush=True)
    for coll in a.c:
        sizes, req, prev = [], a.b, 0
        while req <= a.e:
            count = req // 4 // (n if coll in CHUNKED else 1)
            nbytes = count * 4 * (n if coll in CHUNKED else 1)
            if count > 0 and nbytes != prev:
                sizes.append((count, nbytes))
                prev = nbytes
            req *= a.f
        if coll == "barrier":
            sizes = [(0, 0)]
        for count, nbytes in sizes:
            op = make_op(dist, torch, coll, count, a.r, n)
            iters, warmup = (a.N, a.W) if nbytes > a.L else (a.n, a.w)
            try:
                op()  # outside the warm-up count: finds a missing op on every rank at once
            except RuntimeError as e:
                if a.r == 0:
                    print("# %s n/a: %s" % (coll, str(e).splitlines()[0]), flush=True)
                break
            for _ in range(warmup):
                op()
            max_over_ranks(0.0)  # align the ranks' start
            t0 = time.perf_counter()
            for _ in range(iters):
                op()
            us = max_over_ranks((time.perf_counter() - t0) * 1e6 / iters)
            if a.r == 0:
                algbw = nbytes / us / 1e3 if us > 0 else 0.0
                print("%s %d %.2f %.3f %.3f" % (coll, nbytes, us, algbw,
                                                algbw * bus_factor(coll, n)), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
