"""The flow walker: straight-line code, both arms of a branch, loops, early returns."""

import torch


def straight(n: int):
    t = torch.zeros(n)
    t  # where: host-tensor high
    t = t.cuda()
    t  # where: device high
    t += 1
    t  # where: device high


def branches(flag: bool, n: int):
    if flag:
        t = torch.zeros(n, device="cuda")
    else:
        t = torch.zeros(n)
    t  # where: device medium (on one path)
    if flag:
        u = torch.zeros(n, device="cuda")
    u  # where: device medium
    if flag:
        return torch.zeros(n)
    v = torch.zeros(n, device="cuda")
    v  # where: device high


def loops(items, n: int):
    total = torch.zeros(n, device="cuda")
    for step in range(n):
        step  # where: host high
        total = total + step
    total  # where: device high
    for i, x in enumerate(torch.ones(n, n, device="cuda")):
        i  # where: host high
        x  # where: device high
    for a, b in zip(torch.ones(n), torch.ones(n, device="cuda")):
        a  # where: host-tensor high
        b  # where: device high
    for row in torch.ones(n, n, device="cuda"):
        row  # where: device high
    parts = []
    for _ in range(n):
        parts.append(torch.ones(n, device="cuda"))
    torch.cat(parts)  # where: device high
    for item in items:
        item  # where: unknown
    while n:
        w = torch.ones(n, device="cuda")
        n -= 1
    w  # where: device medium


def dispatch(x: torch.Tensor, device: torch.device):
    if x.is_cpu:
        x  # where: host-tensor high (x is on the CPU where `x.is_cpu` is True)
        return x
    if device.type == "cpu":
        torch.zeros(3, device=device)  # where: host-tensor high (device is on the CPU where)
    x  # where: device medium (x is annotated torch.Tensor)


def comprehension(n: int):
    [torch.ones(n, device="cuda") for _ in range(n)]  # where: host high
    (y := torch.ones(n, device="cuda"))  # where: device high
    with torch.no_grad() as ctx:
        ctx  # where: unknown


def carried(batches):
    previous = None
    for batch in batches:
        if previous is not None:
            previous  # where: device high (made by torch.zeros(...) on "cuda")
        previous = torch.zeros(2, device="cuda")
