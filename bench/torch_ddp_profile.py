"""Where one DDP step's time goes with the "tcomms" backend, beside gloo.

    PYTHONPATH=build/python-opt build/py-venv/bin/python -m torch.distributed.run \\
        --nproc_per_node 2 bench/torch_ddp_profile.py [--steps 20]

The model and step of bench/torch_backend.py (an MLP of 16.8 MB of parameters,
DDP's default buckets). Rank 0 prints, per configuration: the medians of the
forward, backward (DDP's all-reduces included: backward returns once they are
done) and optimizer phases, the CPU time per step of each of its threads
(/proc: the measure a loaded machine does not distort), and for the last step
a timeline of each bucket's all_reduce (issued, its issuing call's length,
when the completion thread completed its future). Configurations, in one run:
no DDP (the compute alone); tcomms; gloo; twice, interleaved.
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist

import tcomms.torch as tt
from tcomms import _torch_work

EVENTS = []  # the buckets of the current step: (issued, issue returned, completed, bytes)


def instrument():
    allreduce, settle = tt.ProcessGroupTcomms.allreduce, _torch_work.TorchWork._settle

    def timed_allreduce(self, tensors, opts):
        t0 = time.perf_counter()
        w = allreduce(self, tensors, opts)
        w._prof = (t0, time.perf_counter(), sum(t.numel() * t.element_size() for t in tensors))
        return w

    def timed_settle(self, works):
        settle(self, works)
        if hasattr(self, "_prof"):
            EVENTS.append(self._prof[:2] + (time.perf_counter(), self._prof[2]))
    tt.ProcessGroupTcomms.allreduce = timed_allreduce
    _torch_work.TorchWork._settle = timed_settle


def thread_cpu():
    """CPU seconds of each thread of this process, by (tid, name)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        out[(tid, name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def model(width):
    torch.manual_seed(0)
    return torch.nn.Sequential(*[m for _ in range(4) for m in
                                 (torch.nn.Linear(width, width), torch.nn.ReLU())],
                               torch.nn.Linear(width, 10))


def profile(group, steps, width, names, ddp=True):
    m = model(width)
    if ddp:
        m = torch.nn.parallel.DistributedDataParallel(m, process_group=group)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x, y = torch.randn(32, width), torch.randint(0, 10, (32,))
    phases, warmup = {"fwd": [], "bwd": [], "opt": []}, 3
    for i in range(warmup + steps):
        if i == warmup:
            cpu0 = thread_cpu()
        dist.barrier(group=GLOO)
        EVENTS.clear()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if i >= warmup:
            for k, v in zip(phases, (t1 - t0, t2 - t1, t3 - t2)):
                phases[k].append(v)
    cpu1 = thread_cpu()
    lines = []
    for a, b, c, nbytes in EVENTS:
        lines.append(f"    bucket {nbytes:>9} B: issued {(a - t1) * 1e3:6.2f} ms into backward, "
                     f"issue {(b - a) * 1e6:5.0f} us, completed {(c - t1) * 1e3:6.2f} ms; "
                     f"backward ended {(t2 - t1) * 1e3:6.2f} ms")
    cpu = {names.get(k[0], f"{k[1]}:{k[0]}"): round((cpu1[k] - cpu0.get(k, 0)) * 1e3 / steps, 1)
           for k in cpu1 if cpu1[k] - cpu0.get(k, 0) > 0}
    med = {k: statistics.median(v) * 1e3 for k, v in phases.items()}
    return (" ".join(f"{k} {v:6.2f}" for k, v in med.items()) + f" all {sum(med.values()):6.2f}"
            + f"\n    cpu ms/step: {cpu}\n" + "\n".join(lines))


def main():
    global GLOO
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--width", type=int, default=1024)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    GLOO = dist.group.WORLD
    ours = dist.new_group(backend="tcomms")
    instrument()
    # threads by id; the others by name:id (tcomms' progress thread shows as python:<id>)
    names = {str(tt.backend_of(ours)._done._t.native_id): "completion", str(os.getpid()): "main"}
    out = [("no DDP", profile(None, a.steps, a.width, names, ddp=False))]
    for k in range(2):
        out.append((f"tcomms {k}", profile(ours, a.steps, a.width, names)))
        out.append((f"gloo {k}", profile(GLOO, a.steps, a.width, names)))
    if dist.get_rank() == 0:
        print(f"# torch {torch.__version__}, {dist.get_world_size()} ranks, medians of "
              f"{a.steps} steps (ms), rank 0")
        for label, text in out:
            print(f"{label:<18} {text}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
