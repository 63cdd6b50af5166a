"""Inside an nn.Module: its buffers, parameters, activations and the attributes its methods keep."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, device: torch.device):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.cache = torch.zeros(dim, device=device)
        self.table = torch.arange(dim)
        self.register_buffer("mask", torch.ones(dim))
        self.scale = nn.Parameter(torch.ones(dim))
        self.lengths_cpu = torch.zeros(dim, dtype=torch.int32)

    def forward(self, x, positions: torch.Tensor, residual: torch.Tensor | None = None):
        x  # where: device medium (argument of nn.Module.forward)
        positions  # where: device medium (positions is annotated torch.Tensor)
        residual  # where: device medium
        self.cache  # where: device high (made by torch.zeros(...) on device)
        self.table  # where: host-tensor low (follows the default device while the module is built)
        self.mask  # where: device medium (a buffer of an nn.Module)
        self.scale  # where: device medium (moves with the module)
        self.lengths_cpu  # where: host-tensor low
        self.step(x)  # where: device medium
        return x * self.scale  # where: device medium

    def step(self, hidden: torch.Tensor):
        return hidden  # where: device medium (hidden is annotated torch.Tensor)

    def load_weights(self, weight: torch.Tensor):
        weight  # where: host-tensor medium (a checkpoint tensor given to the weight loader)


def helper(values: torch.Tensor, logits: torch.Tensor):
    values  # where: device low (outside an nn.Module)
    logits  # where: device medium (logits is annotated torch.Tensor)


class Gate(nn.Module):
    def forward(self, hidden, flags):
        flags.any()  # where: device medium (`flags` has .any(), as only a tensor or an array has)
