"""torch.distributed with the "tcomms" backend beside "gloo", in one run:
all_reduce, all_gather (the list form) and all_to_all_single from
--min-bytes to --max-bytes (x4 steps), then the time of one DDP training step
of an MLP. Launched by bench/run_torch_backend.sh under torchrun; rank 0
prints one table. Bus bandwidth as nccl-tests defines it: all_reduce
2(n-1)/n x bytes / time, all_gather and all_to_all (n-1)/n x the bytes of the
whole output / time. (Not --max: torchrun 2.x takes it for --max-restarts.)"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import tcomms.torch  # noqa: F401  registers "tcomms"


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    dist.barrier()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    # the slowest rank's median is the operation's time
    t = torch.tensor([statistics.median(times)], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=GLOO)
    return t.item()


def coll(name, group, nbytes, n):
    count = max(1, nbytes // 4)
    if name == "all_reduce":
        x = torch.ones(count)
        return lambda: dist.all_reduce(x, group=group), 2 * (n - 1) / n * count * 4
    if name == "all_gather":
        per = max(1, count // n)
        x, outs = torch.ones(per), [torch.empty(per) for _ in range(n)]
        return lambda: dist.all_gather(outs, x, group=group), (n - 1) / n * per * n * 4
    per = max(1, count // n)
    x, out = torch.ones(per * n), torch.empty(per * n)
    return lambda: dist.all_to_all_single(out, x, group=group), (n - 1) / n * per * n * 4


def ddp_step_time(group, steps, width):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(4) for m in
                                  (torch.nn.Linear(width, width), torch.nn.ReLU())],
                                torch.nn.Linear(width, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x, y = torch.randn(32, width), torch.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return timed(step, steps, 3), sum(p.numel() for p in model.parameters()) * 4


def main():
    global GLOO
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--ddp-steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=1024)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    GLOO = dist.group.WORLD
    ours = dist.new_group(backend="tcomms")
    n, me = dist.get_world_size(), dist.get_rank()
    if me == 0:
        print(f"# torch {torch.__version__}, {n} ranks, medians of {a.iters} "
              "(fewer above 1 MiB); busbw GB/s")
        print(f"{'coll':<11}{'bytes':>10}{'tcomms us':>12}{'gloo us':>12}"
              f"{'tcomms bw':>11}{'gloo bw':>9}{'ratio':>7}")
    for name in ("all_reduce", "all_gather", "all_to_all"):
        b = a.min_bytes
        while b <= a.max_bytes:
            iters = a.iters if b <= 1 << 20 else max(3, a.iters // 4)
            res = []
            for g in (ours, GLOO):
                fn, moved = coll(name, g, b, n)
                res.append((timed(fn, iters, 2), moved))
            (t1, m1), (t2, m2) = res
            if me == 0:
                print(f"{name:<11}{b:>10}{t1 * 1e6:>12.1f}{t2 * 1e6:>12.1f}"
                      f"{m1 / t1 / 1e9:>11.3f}{m2 / t2 / 1e9:>9.3f}{t2 / t1:>7.2f}")
            b *= 4
    (t1, pb), (t2, _) = ddp_step_time(ours, a.ddp_steps, a.width), \
        ddp_step_time(GLOO, a.ddp_steps, a.width)
    if me == 0:
        print(f"ddp_step  params {pb} B: tcomms {t1 * 1e3:.2f} ms, gloo {t2 * 1e3:.2f} ms, "
              f"speed-up {t2 / t1:.2f}x")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
