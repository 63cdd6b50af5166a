"""What a function's own code shows about its parameters, whatever their annotations say."""

import torch


def converts(x: torch.Tensor):
    x  # where: host-tensor medium (x is used as a host tensor: x.numpy())
    return x.numpy()


def pins(lengths: torch.Tensor):
    lengths  # where: host-tensor medium (used as a host tensor: lengths.pin_memory())
    return lengths.pin_memory()


def uploads(mask: torch.Tensor, device: torch.device):
    mask  # where: host-tensor medium (used as a host tensor)
    return mask.to(device, non_blocking=True)


def requires_cpu(t: torch.Tensor):
    assert t.device.type == "cpu"
    t  # where: host-tensor medium (used as a host tensor: assert t.device.type == "cpu")


def refuses_gpu(t: torch.Tensor):
    if not t.is_cpu:
        raise ValueError("t must be on the CPU")
    t  # where: host-tensor high (t is on the CPU where `not t.is_cpu` is False)


def plain(t: torch.Tensor):
    t  # where: device low
