"""A file of CPU kernels (its path says so): a tensor of unknown device here is a host tensor."""

import torch


def kernel(x: torch.Tensor, device: torch.device):
    x  # where: host-tensor medium (x is a tensor in host-side code)
    torch.zeros(3, device=device)  # where: unknown
    torch.zeros(3, device="cuda")  # where: device high
