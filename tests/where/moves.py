"""Where `.cuda()`, `.to()`, `.cpu()` and `.pin_memory()` put a tensor."""

import torch


def moved(t, device, dtype):
    t.cuda()  # where: device high (t.cuda())
    t.to("cuda")  # where: device high (moved by .to("cuda"))
    t.to(device)  # where: device high (moved by .to(device))
    t.to(device="cuda:1", non_blocking=True)  # where: device high
    t.cpu()  # where: host-tensor high
    t.to("cpu")  # where: host-tensor high
    t.pin_memory()  # where: host-tensor high (pinned host tensor)
    t.to(torch.float16)  # where: unknown
    host = torch.zeros(3)
    host.to(torch.float16)  # where: host-tensor high
    host.to(dtype)  # where: host-tensor high
    gpu = host.cuda()
    gpu.to(host.device)  # where: host-tensor high
    host.to(gpu.device)  # where: device high (gpu.device)
    gpu.float()  # where: device high
    gpu.T  # where: device high
    gpu[0]  # where: device high
    gpu.max().values  # where: device high
