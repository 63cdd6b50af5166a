"""What a module learns from its own helpers and from the rest of the package."""

import torch

from app.helpers import Base, make_counts, make_ids, split


def local_ids(n: int):
    return torch.arange(n, device="cuda")


def local_pair(n: int):
    return torch.ones(n, device="cuda"), n


def use(n: int):
    local_ids(n)  # where: device high (returned by local_ids())
    ids, count = local_pair(n)
    ids  # where: device high
    count  # where: host high
    # A result that is used: the package's facts answer for it.
    made = make_ids(n)  # where: device high (returned by make_ids() (app/helpers.py:6))
    counts = make_counts(n)  # where: host-tensor high
    pair = split(n)  # where: unknown
    return made, counts, pair


class Child(Base):
    def forward(self, n: int):
        return self.table  # where: device high (made by torch.zeros(...) on "cuda")
