"""A small training loop (an MLP, AdamW, `loss.item()` every step): its median step time, for the
overhead of `synclint trace`. argv: OUT.json WIDTH STEPS (the first fifth of the steps is warm-up)."""

import json
import statistics
import sys
import time

import torch

out, width, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
model = torch.nn.Sequential(*layers).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
times, losses = [], []
for step in range(steps):
    begin = time.perf_counter()
    x = torch.randn(64, width, device="cuda")
    loss = model(x).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    losses.append(loss.item())
    times.append(time.perf_counter() - begin)
with open(out, "w") as fh:
    json.dump({"width": width, "steps": steps, "median_step_ms": statistics.median(times[steps // 5:]) * 1e3}, fh)
