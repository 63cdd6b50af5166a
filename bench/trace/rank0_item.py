"""Issue 46's job: two gloo ranks on the CPU, `.item()` on rank 0 only (`exit_clean.py` traces it)."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(4)
for step in range(5):
    y = x * step
    if rank == 0 and y.sum().item() > 100:
        print("big")
    dist.all_reduce(y)
dist.destroy_process_group()
