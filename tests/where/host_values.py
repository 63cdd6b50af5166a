"""Values that are never tensors: Python numbers, strings, shapes, tests on tensors' metadata."""

import torch


def values(gpu_ids):
    x = torch.zeros(4, device="cuda")
    x.item()  # where: host high
    x.tolist()  # where: host high
    x.shape  # where: host high
    x.dtype  # where: host high
    x.size(0)  # where: host high
    x.numel()  # where: host high
    len(x)  # where: host high
    x.is_cuda  # where: host high
    x is None  # where: host high
    x.dtype == torch.float16  # where: host high
    "ids" in gpu_ids  # where: host high
    not x  # where: host high
    f"{x}"  # where: host high
    [x, x]  # where: host high
    torch.float32  # where: host high
    torch.is_tensor(x)  # where: host high
    None  # where: host high
