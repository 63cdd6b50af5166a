"""nn.Modules known by what they do (a base defined elsewhere), their containers and their calls."""

import torch
from torch import nn

from elsewhere import ModelMixin


class Tower(ModelMixin):
    def __init__(self, dim: int):
        super().__init__()
        self.layers = nn.ModuleDict(dict(wte=nn.Embedding(10, dim), ln=nn.LayerNorm(dim)))
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])
        self.pad = nn.Parameter(torch.zeros(dim))

    def forward(self, idx, sizes: torch.Tensor):
        sizes  # where: device medium (sizes is annotated torch.Tensor)
        h = self.layers.wte(idx)  # where: device medium (self.layers.wte(...) is a module's output)
        for block in self.blocks:
            block  # where: module low
            h = block(h)
        self.layers.keys()  # where: unknown
        torch.tanh(h)  # where: device medium (self.layers.wte(...) is a module's output)
        return h


def wrap(model: nn.Module):
    model  # where: module low (model is annotated as an nn.Module)
    model.cuda()  # where: module high
    torch.compile(model)  # where: module high (model.cuda())
    nn.parallel.DistributedDataParallel(model)  # where: module high (model.cuda())
    model.load_model()  # where: unknown
