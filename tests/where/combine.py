"""What arithmetic, comparisons and torch operations on tensors give."""

import torch


def combined(scale: float):
    gpu = torch.ones(3, device="cuda")
    cpu = torch.ones(3)
    gpu * scale  # where: device high
    gpu + cpu  # where: device high
    gpu > 0  # where: device high
    cpu > 0  # where: host-tensor high
    torch.softmax(gpu, dim=-1)  # where: device high
    torch.cat([gpu, gpu])  # where: device high
    torch.where(gpu > 0, gpu, 0.0)  # where: device high
    scale * 2  # where: host high
    max(gpu[0], gpu[1])  # where: device high
    gpu.sum() if scale else cpu.sum()  # where: device medium (on one path)
