"""A library module that places nothing on a device: tensors it does not make are of unknown device."""

import torch
import torch.nn.functional as F


def scores(logits, mask):
    probs = F.softmax(logits, dim=-1)  # where: device low (of unknown device)
    logits.detach()  # where: device low (logits is used as a tensor (`logits.detach()`), of unknown device)
    mask  # where: unknown
    return probs


def maybe_tensor(value):
    if isinstance(value, torch.Tensor):
        value  # where: device low (value is a tensor where `isinstance(value, torch.Tensor)` holds)
        return value
    value  # where: unknown


def per_key(lengths: torch.Tensor, parts: list[torch.Tensor]):
    parts[0]  # where: device low (parts is annotated torch.Tensor, outside an nn.Module)
    [chunk.sum() for chunk in torch.split(lengths, 2)]  # where: host high
    counts: list[torch.Tensor] = list(lengths.split(2))
    counts[0]  # where: device low (lengths is annotated torch.Tensor, outside an nn.Module)


class Runner:
    """Not an nn.Module, but it runs one: the tensors it is given are the model's."""

    def __init__(self, model):
        self.model = model

    def step(self, hidden: torch.Tensor):
        hidden  # where: device medium (in code that runs a model (`self.model(...)`))
        return self.model(hidden)


class Optim(torch.optim.Optimizer):
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                torch.linalg.norm(p.grad)  # where: device medium (in an optimizer's code)
