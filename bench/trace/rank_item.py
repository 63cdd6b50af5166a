"""Two ranks train one small model on one GPU (or the CPU); the gradients are averaged through a host
copy (gloo: `.cpu()`, GRAD_LINE, a sync on every rank, every step), and only rank 0 reads the loss on
the host (`loss.item()`, ITEM_LINE, every step). argv: STEPS [BACKEND]. Run it under torchrun."""

import sys

import torch
import torch.distributed as dist

steps = int(sys.argv[1])
backend = sys.argv[2] if len(sys.argv) > 2 else "gloo"
dist.init_process_group(backend)
rank = dist.get_rank()
device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(steps):
    x = torch.randn(256, 512, device=device)
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    flat = torch.cat([p.grad.flatten() for p in model.parameters()])
    if backend == "gloo":
        flat = flat.cpu()  # GRAD_LINE
    dist.all_reduce(flat)
    opt.step()
    if rank == 0:
        print(f"step {step} loss {loss.item():.4f}")  # ITEM_LINE
dist.destroy_process_group()
