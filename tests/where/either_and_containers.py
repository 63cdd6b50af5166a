"""Device specs joined over branches (the GPU on one path), and containers that carry where their
elements live: a dict's values through each accessor, its keys on the host, lists and tuples
through indexing, unpacking and iteration; what only a tensor can do overrules a host guess."""

from pathlib import Path

import numpy as np
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def specs(x_np: np.ndarray, flag: bool, rank: int):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dev  # where: host high
    host = torch.from_numpy(x_np)  # where: host-tensor high
    host.to(dev)  # where: device medium (device 'cuda' on one path)
    torch.zeros(3, device=dev)  # where: device medium (on one path)
    host.to(device)  # where: device medium (on one path)
    host.to(torch.device("cuda"))  # where: device high
    host.to(torch.device("cuda:0"))  # where: device high
    host.to(torch.device(f"cuda:{rank}"))  # where: device high
    host.to(f"cuda:{rank}")  # where: device high
    host.to("cuda")  # where: device high
    gpu = torch.device("cuda")
    host.to(gpu)  # where: device high
    place = torch.device("cpu")
    host.to(place)  # where: host-tensor high
    if flag:
        target = "cuda"
    else:
        target = "cpu"
    host.to(target)  # where: device medium (on one path)
    maybe = "cuda" if flag else None
    torch.ones(2, device=maybe)  # where: device medium


class Trainer:
    def __init__(self, model: nn.Module):
        self.model = model.cuda()
        self.device = torch.device("cuda:0")

    def losses(self, batch):
        out = self.model(batch)
        return {"loss": out.mean(), "aux": out.abs().mean()}

    def moved(self, x_np: np.ndarray):
        torch.from_numpy(x_np).to(self.device)  # where: device high

    def step(self, batch):
        d = self.losses(batch)
        d["loss"]  # where: device medium
        d.get("aux")  # where: device medium
        d.get("aux", 0.0)  # where: device medium
        d.pop("aux")  # where: device medium
        d.setdefault("loss", None)  # where: device medium
        d.popitem()  # where: host high
        key, loss = d.popitem()
        key  # where: host high
        loss  # where: device medium
        for k, v in d.items():
            k  # where: host high
            v  # where: device medium
        for pair in d.items():
            pair[1]  # where: device medium
        for k in d:
            k  # where: host high
        for k in d.keys():
            k  # where: host high
        for v in d.values():
            v  # where: device medium
        total = sum(d.values())  # where: device medium
        list(d.values())[0]  # where: device medium
        return total


def sequences(n: int):
    a = torch.ones(n, device="cuda")
    parts = list(a.split(2))
    parts[0]  # where: device high
    first, second = parts
    second  # where: device high
    for t in parts:
        t  # where: device high
    kept = tuple(t.cuda() for t in range(n))
    kept[0]  # where: device high
    head, *rest = parts
    rest  # where: host high
    names = ["a", "b"]
    left, right = names
    left  # where: host high


def loaded(data, steps: int):
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    for x, y in loader:
        x  # where: host-tensor medium (a batch of a torch DataLoader)
    for batch in loader:
        batch["ids"]  # where: host-tensor medium (a batch of a torch DataLoader)


class Helper:
    def run(self, batch):
        return batch


def overruled(batch, x_np: np.ndarray):
    store = {}
    loss = store["loss"]  # where: host low (an element of a container whose elements are not known)
    loss.backward()
    loss  # where: device medium (loss is used as a tensor (`loss.backward()`))
    out = Helper().run(batch)
    out.detach()
    out  # where: device (out is used as a tensor (`out.detach()`))
    weight = store.get("w")
    weight.requires_grad
    weight  # where: device (weight is used as a tensor)
    grads = store["g"]
    grads.grad
    grads  # where: device (grads is used as a tensor (`grads.grad`))
    item = store["x"]
    if isinstance(item, torch.Tensor):
        item  # where: device (is a tensor where `isinstance(item, torch.Tensor)` holds)
    moved = torch.ones(2).cpu()
    moved.detach()
    moved  # where: host-tensor high
    arr = np.zeros(3)
    if isinstance(arr, torch.Tensor):
        arr  # where: host high
    text = "abc"
    text  # where: host high


def keyed(n: int):
    a = torch.ones(n, device="cuda")
    stats = {"acc": a.mean(), "count": n}
    stats["acc"]  # where: device high
    stats["count"]  # where: host high
    stats.get("acc")  # where: device high
    found = {}
    found["norm"] = a.norm()
    found["norm"]  # where: device high
    found[str(n)] = a.sum()
    found.popitem()[1]  # where: device high
    a_key, *others = stats
    a_key  # where: host high
    a.ndimension()  # where: host high
    cache: dict[str, torch.Tensor] = {}
    cache["k"]  # where: device medium (annotated torch.Tensor)


def unknown_or_the_cpu(tokenizer, text, dev, device=None):
    # `x if x is not None else "cpu"` is the CPU on one path only: with `x` unknown, so is the
    # result; with a `device=None` parameter (the GPU where a caller passes one), the GPU on one path.
    place = dev if dev is not None else torch.device("cpu")
    torch.zeros(2, device=place)  # where: unknown
    chosen = device if device is not None else torch.device("cpu")
    torch.zeros(2, device=chosen)  # where: device medium (on one path)
    # A value put under one key of a dict whose keys are not known here leaves the others as they were.
    inputs = tokenizer(text, return_tensors="pt")
    inputs["input_ids"] = inputs["input_ids"].to("cuda")
    inputs["input_ids"]  # where: device high
    inputs["attention_mask"]  # where: host-tensor high (tokenizer(..., return_tensors="pt") makes CPU tensors)


def named_members(model: nn.Module):
    gpu_model = nn.Linear(3, 3).cuda()
    for name, param in gpu_model.named_parameters():
        name  # where: host high
        param  # where: device high
    for name, buf in model.named_buffers():
        name  # where: host high
    for name, child in gpu_model.named_children():
        name  # where: host high


def narrowed_to_the_host(ims: list, x):
    for im in ims:
        if isinstance(im, (str, Path)):
            im  # where: host high
    if isinstance(x, np.ndarray):
        x  # where: host high
