"""Host-to-device copies asked to be non-blocking, from pageable and from pinned memory, and
device-to-host copies into pageable memory, each behind queued GPU work. argv: N.

PAGEABLE_LINE (16 MB, pageable): waits, unflagged by the debug mode; PINNED_LINE (16 MB, pinned): no
wait; SMALL_LINE (1 MB, pageable): under the 4 MB threshold, not recorded; D2H_LINE (4 MB into pageable
memory, non_blocking): waits for the queue."""

import sys

import torch

n = int(sys.argv[1])
pinned = torch.cuda.is_available()
big = torch.from_numpy(__import__("numpy").ones(4 << 20, dtype="float32"))  # 16 MB, built from host data
small = torch.from_numpy(__import__("numpy").ones(256 << 10, dtype="float32"))  # 1 MB
staged = big.pin_memory() if pinned else big
a = torch.randn(2048, 2048, device="cuda" if pinned else "cpu")
host = torch.empty(1 << 20)
for _ in range(n):
    for _ in range(4):
        a = a @ a / 2048  # queued GPU work
    on_gpu = big.to("cuda", non_blocking=True)  # PAGEABLE_LINE
    fast = staged.to("cuda", non_blocking=True)  # PINNED_LINE
    tiny = small.to("cuda", non_blocking=True)  # SMALL_LINE
    if pinned:
        host.copy_(a.flatten()[: 1 << 20], non_blocking=True)  # D2H_LINE
torch.cuda.synchronize() if pinned else None
