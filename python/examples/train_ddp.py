"""Train a small model with DistributedDataParallel over tcomms.

    tools/setup/install-deps.sh --python
    python/run_tests.sh --quick            # builds build/python (the package)
    PYTHONPATH=build/python build/py-venv/bin/python -m torch.distributed.run \\
        --nproc_per_node 2 python/examples/train_ddp.py

Each rank fits its own shard of a synthetic regression problem; DDP averages
the gradients through tcomms' all_reduce. Then the same communicator is used
through tcomms' own API for one all_gather of the final losses.
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tcomms.torch  # registers the "tcomms" backend


def main():
    dist.init_process_group("tcomms")  # bootstraps through torchrun's store
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    true_w = torch.randn(16, 1)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(256, 16, generator=g)
    y = x @ true_w + 0.01 * torch.randn(256, 1, generator=g)

    model = DDP(torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(50):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    # the torchcomms-shaped API on the same communicator
    comm = tcomms.torch.backend_of().comm()  # the default group's communicator
    losses = [torch.zeros(1) for _ in range(size)]
    comm.all_gather(losses, loss.detach().reshape(1))
    if rank == 0:
        print(f"{size} ranks, final losses {[round(l.item(), 5) for l in losses]}, "
              f"weight error {(model.module.weight.t() - true_w).abs().max().item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
