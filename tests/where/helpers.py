"""Helpers whose results other modules use (see callers.py)."""

import torch


def make_ids(n: int):
    return torch.arange(n, device="cuda")  # where: device high


def make_counts(n: int):
    return torch.zeros(n)  # where: host-tensor high


def split(n: int):
    return torch.ones(n, device="cuda"), n


class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.zeros(3, device="cuda")
