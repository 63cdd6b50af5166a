"""Tensors made by torch's factories, and what `device=` says."""

import numpy as np
import torch


def made(n: int, device: torch.device):
    torch.zeros(n, device="cuda")  # where: device high (made by torch.zeros(...) on "cuda")
    torch.ones(n, device=0)  # where: device high
    torch.empty(n, device=device)  # where: device high (made by torch.empty(...) on device)
    torch.arange(n, device="cpu")  # where: host-tensor high
    torch.zeros(n)  # where: host-tensor high (without device= is a host tensor)
    torch.tensor([1, 2], device="meta")  # where: host-tensor high
    torch.full((n,), 1.0, pin_memory=True)  # where: host-tensor high (in pinned host memory)
    torch.zeros(n, device=torch.device("cuda", 0))  # where: device high
    torch.zeros(n, device=torch.cuda.current_device())  # where: device high
    # A device chosen by a condition is the GPU on one path: made there, it may be on the GPU.
    torch.zeros(n, device="cuda" if n else "cpu")  # where: device medium (on one path)


def like(x: torch.Tensor, a: np.ndarray):
    gpu = torch.randn(4, device="cuda")
    torch.zeros_like(gpu)  # where: device high
    torch.from_numpy(a)  # where: host-tensor high (torch.from_numpy() is a host tensor)
    np.zeros(4)  # where: host high
    a  # where: host high
    gpu.new_zeros(4)  # where: device high
    gpu.new_tensor([1, 2], device="cpu")  # where: host-tensor high
    torch.cuda.FloatTensor(4)  # where: device high
    torch.FloatTensor(4)  # where: host-tensor high


def parameters(model: torch.nn.Module):
    torch.nn.Parameter(torch.zeros(3))  # where: device medium (moves with the module)
    model.parameters()  # where: device medium (are a module's tensors)
