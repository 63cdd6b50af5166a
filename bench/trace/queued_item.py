"""Queues about 20 ms of matrix products on the GPU, then reads one value with `.item()` (line `ITEM_LINE`).

The host waits at that line for the queue to drain. The GPU time of each queued batch (CUDA events
around the products) is written to the JSON file named by argv[1], to compare with the wait
`synclint trace` measures at that line.
"""

import json
import sys

import torch

TARGET_MS, TRIALS, N = 20.0, 20, 4096
a = torch.randn(N, N, device="cuda")
b = torch.randn(N, N, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):
    c = a @ b
start.record()
for _ in range(10):
    c = a @ b
end.record()
end.synchronize()
products = max(1, round(TARGET_MS / (start.elapsed_time(end) / 10)))

gpu_ms = []
for trial in range(TRIALS):
    torch.cuda.synchronize()
    start.record()
    for _ in range(products):
        c = a @ b
    end.record()
    value = c[0, 0].item()  # ITEM_LINE: the host waits here for the queued products
    gpu_ms.append(start.elapsed_time(end))

with open(sys.argv[1], "w") as out:
    json.dump({"products": products, "gpu_ms": gpu_ms}, out)
