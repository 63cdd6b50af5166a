"""A private helper's parameter, settled by what every call in the module passes."""

import torch


def _tiles(crop: torch.Tensor, size: int):
    crop  # where: host-tensor medium (every call passes a host value, like `shape_cpu` to _tiles())
    return crop


def _scale(values: torch.Tensor):
    values  # where: device low
    return values


def run(n: int, gpu_values: torch.Tensor):
    shape_cpu = torch.tensor([n, n])
    _tiles(shape_cpu, n)
    _tiles(torch.zeros(2), n)
    _scale(torch.zeros(n))
    _scale(gpu_values)
