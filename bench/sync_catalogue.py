"""Measure which PyTorch operations make the host wait for the GPU (rows of ../shared/reference/sync-catalogue.md).

Run on a machine with a CUDA GPU:

    python3 bench/sync_catalogue.py            # every case, a markdown table on stdout
    python3 bench/sync_catalogue.py copy_ arange   # the cases whose name holds one of these words

For each case: whether `torch.cuda.set_sync_debug_mode("error")` raised, how many syncs "warn"
counted, and how long the call took to return on the host with about 20 ms of GPU work queued
(`torch.cuda._sleep`; a call that waits cannot return before the queue drains, so about 20,000 us
means "waited") and with an idle GPU (median of five). The waits that the debug mode does not see
show here as a busy time near 20,000 us with no sync counted.
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from typing import Any, Callable

import torch
import torch.nn.functional as F

QUEUE_MS = 20.0
CUDA = torch.device("cuda")


def inputs() -> dict[str, Any]:
    """Fresh inputs for one case, made before any timing (their GPU work finished)."""
    x = torch.randn(4096, device=CUDA)
    env = {
        "x": x,
        "x2d": torch.randn(64, 64, device=CUDA),
        "pos": torch.arange(64 * 64, device=CUDA).view(64, 64),
        "mask": x > 0,
        "mask_rows": torch.rand(64, device=CUDA) > 0.5,
        "lengths": torch.randint(1, 4, (64,), device=CUDA),
        "n": torch.tensor(48, device=CUDA),
        "gpu_0dim": torch.tensor(2.0, device=CUDA),
        "pinned": torch.empty(4096).pin_memory(),
        "pageable": torch.empty(4096),
        "coo": (torch.rand(64, 64, device=CUDA) > 0.9).float().to_sparse(),
        "normal": torch.distributions.Normal(torch.zeros(4096, device=CUDA), torch.ones(4096, device=CUDA)),
        **optimizers(),
        "host_mask": torch.rand(64, 64) > 0.5,
        "host_pos": torch.zeros(64, 64),
    }
    torch.cuda.synchronize()
    return env


def optimizers() -> dict[str, Any]:
    """Optimizers over a small model's parameters on the GPU, with gradients, each stepped once already
    (the first step allocates its state)."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256)).to(CUDA)
    params = list(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    scaler.scale(model(torch.randn(32, 256, device=CUDA)).sum()).backward()  # (gradients scaled: fine for timing)
    made = {
        "params": params,
        "adam": torch.optim.Adam(params, lr=1e-3),
        "adamw": torch.optim.AdamW(params, lr=1e-3),
        "adamw_fused": torch.optim.AdamW(params, lr=1e-3, fused=True),
        "sgd": torch.optim.SGD(params, lr=1e-3, momentum=0.9),
    }
    for name in ("adam", "adamw", "adamw_fused", "sgd"):
        made[name].step()
    made["scaler"] = scaler
    made["scaler"].step(made["adam"])
    made["scaler"].update()
    return made


def deterministic(op: Callable[[], Any]) -> Any:
    """`op()` with `torch.use_deterministic_algorithms(True)`, as training frameworks set it for reproducibility."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        return op()
    finally:
        torch.use_deterministic_algorithms(False)


def _block_mask(e: dict[str, Any]) -> Any:
    from torch.nn.attention.flex_attention import create_block_mask

    def causal(b: Any, h: Any, q: Any, kv: Any) -> Any:
        return q >= kv

    return create_block_mask(causal, B=None, H=None, Q_LEN=e["n"], KV_LEN=e["n"], device="cuda")


# name, group, the operation (on fresh inputs)
CASES: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = [
    ("pinned.copy_(gpu)", "D2H copy_", lambda e: e["pinned"].copy_(e["x"])),
    ("pinned.copy_(gpu, non_blocking=True)", "D2H copy_", lambda e: e["pinned"].copy_(e["x"], non_blocking=True)),
    ("pageable.copy_(gpu)", "D2H copy_", lambda e: e["pageable"].copy_(e["x"])),
    ("pageable.copy_(gpu, non_blocking=True)", "D2H copy_", lambda e: e["pageable"].copy_(e["x"], non_blocking=True)),
    ("gpu.copy_(pageable)", "H2D copy_", lambda e: e["x"].copy_(e["pageable"])),
    ("gpu.copy_(pinned, non_blocking=True)", "H2D copy_", lambda e: e["x"].copy_(e["pinned"], non_blocking=True)),
    ("gpu.copy_(gpu) (control)", "control", lambda e: e["x"].clone().copy_(e["x"])),
    ("x[mask] = 0.0 (mask of x's shape)", "masked write", lambda e: e["x"].__setitem__(e["mask"], 0.0)),
    ("x2d[row_mask] = 0.0 (mask of fewer dims)", "masked write", lambda e: e["x2d"].__setitem__(e["mask_rows"], 0.0)),
    ("pos[pos > i] = 0 (long, mask of pos's shape)", "masked write", lambda e: e["pos"].__setitem__(e["pos"] > 7, 0)),
    ("x[mask] = gpu_0dim", "masked write", lambda e: e["x"].__setitem__(e["mask"], e["gpu_0dim"])),
    ("pos[:, col_mask] = 0 (mask after a slice)", "masked write", lambda e: e["pos"].__setitem__((slice(None), e["mask_rows"]), 0)),
    ("pos[row_mask, 0] = 0 (mask and an integer)", "masked write", lambda e: e["pos"].__setitem__((e["mask_rows"], 0), 0)),
    ("pos[host_mask] = 0 (mask on the host)", "masked write", lambda e: e["pos"].__setitem__(e["host_mask"], 0)),
    ("host_pos[gpu_mask] = 0 (a host tensor, a GPU mask)", "masked write", lambda e: e["host_pos"].__setitem__(e["mask_rows"], 0)),
    ("x[mask] = 0.0 under use_deterministic_algorithms", "masked write", lambda e: deterministic(lambda: e["x"].__setitem__(e["mask"], 0.0))),
    ("x2d[row_mask] = 0.0 under use_deterministic_algorithms", "masked write", lambda e: deterministic(lambda: e["x2d"].__setitem__(e["mask_rows"], 0.0))),
    ("x.masked_fill_(mask, 0.0) (control)", "control", lambda e: e["x"].masked_fill_(e["mask"], 0.0)),
    ("torch.arange(n) (n a 0-d GPU tensor)", "0-d size", lambda e: torch.arange(e["n"], device=CUDA)),
    ("torch.zeros(n, device=cuda)", "0-d size", lambda e: torch.zeros(e["n"], device=CUDA)),
    ("torch.full((n,), 1.0, device=cuda)", "0-d size", lambda e: torch.full((e["n"],), 1.0, device=CUDA)),
    ("x.new_zeros(n)", "0-d size", lambda e: e["x"].new_zeros(e["n"])),
    ("x2d.view(-1)[:n] (slice)", "0-d size", lambda e: e["x2d"].view(-1)[: e["n"]]),
    ("x.narrow(0, 0, n)", "0-d size", lambda e: e["x"].narrow(0, 0, e["n"])),
    ("x2d.reshape(n, -1) (n = 64 here)", "0-d size", lambda e: e["x2d"].reshape(e["n"] + 16, -1)),
    ("x.expand(n, -1) on x[None]", "0-d size", lambda e: e["x"][None].expand(e["n"], -1)),
    ("torch.topk(x, k=n)", "0-d size", lambda e: torch.topk(e["x"], k=e["n"])),
    ("torch.repeat_interleave(x[:64], lengths) no output_size", "data-dependent shape",
     lambda e: torch.repeat_interleave(e["x"][:64], e["lengths"])),
    ("torch.repeat_interleave(lengths) no output_size", "data-dependent shape", lambda e: torch.repeat_interleave(e["lengths"])),
    ("x.repeat_interleave(n) (0-d repeats)", "0-d size", lambda e: e["x"][:8].repeat_interleave(e["n"])),
    ("range(n)", "0-d size", lambda e: range(e["n"])),
    ("max(n, 1) (Python builtin)", "0-d size", lambda e: max(e["n"], 1)),
    ("torch.randint(0, n, (4,), device=cuda)", "0-d size", lambda e: torch.randint(0, e["n"], (4,), device=CUDA)),
    ("F.pad(x, (0, n))", "0-d size", lambda e: F.pad(e["x"], (0, e["n"]))),
    ("x[n] (0-d GPU index)", "index", lambda e: e["x"][e["n"]]),
    ("torch.tensor([n, 1]) (list of 0-d GPU)", "H2D", lambda e: torch.tensor([e["n"], 1])),
    ("torch.stack([n, n]) (control)", "control", lambda e: torch.stack([e["n"], e["n"]])),
    ("create_block_mask(..., Q_LEN=n)", "0-d size", _block_mask),
    ("host[n] (a host tensor indexed by a 0-d GPU tensor)", "index", lambda e: e["host_pos"][e["n"]]),
    ("host_1d[gpu_idx] (a host tensor, a GPU index tensor)", "index", lambda e: e["pageable"][e["lengths"]]),
    ("torch.eye(64).type_as(gpu)", "H2D", lambda e: torch.eye(64).type_as(e["x2d"])),
    ("x2d.to_sparse() (dense GPU)", "data-dependent shape", lambda e: e["x2d"].to_sparse()),
    ("x2d.to_sparse_csr() (dense GPU)", "data-dependent shape", lambda e: e["x2d"].to_sparse_csr()),
    ("coo.to_sparse_csr() (sparse GPU)", "data-dependent shape", lambda e: e["coo"].to_sparse_csr()),
    ("coo.coalesce() (sparse GPU)", "data-dependent shape", lambda e: e["coo"].coalesce()),
    ("Normal(mu, sd) (validate_args default)", "sampling", lambda e: torch.distributions.Normal(e["x"], e["x"].abs() + 1)),
    ("normal.log_prob(x) (validate_args default)", "sampling", lambda e: e["normal"].log_prob(e["x"])),
    ("Adam.step() (defaults)", "optimizer", lambda e: e["adam"].step()),
    ("AdamW.step() (defaults)", "optimizer", lambda e: e["adamw"].step()),
    ("AdamW.step() (fused=True)", "optimizer", lambda e: e["adamw_fused"].step()),
    ("SGD(momentum=0.9).step()", "optimizer", lambda e: e["sgd"].step()),
    ("clip_grad_norm_ then Adam.step()", "optimizer", lambda e: (torch.nn.utils.clip_grad_norm_(e["params"], 1.0), e["adam"].step())),
    ("GradScaler.step(opt) + update()", "optimizer", lambda e: (e["scaler"].step(e["adam"]), e["scaler"].update())),
    ("x[mask] -= 1.0 (augmented masked write)", "masked write", lambda e: e["x"].__setitem__(e["mask"], e["x"][e["mask"]] - 1.0)),
]


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> "Counter":
        self._catch = warnings.catch_warnings(record=True)
        self._records = self._catch.__enter__()
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        return self

    def __exit__(self, *exc: Any) -> None:
        torch.cuda.set_sync_debug_mode("default")
        self.count = sum("synchronizing" in str(w.message) for w in self._records)
        self._catch.__exit__(*exc)


def cycles_per_ms() -> float:
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / start.elapsed_time(end)


def host_us(op: Callable[[dict[str, Any]], Any], queue_cycles: int) -> float:
    env = inputs()
    if queue_cycles:
        torch.cuda._sleep(queue_cycles)
    t0 = time.perf_counter()
    op(env)
    took = (time.perf_counter() - t0) * 1e6
    torch.cuda.synchronize()
    return took


def measure(op: Callable[[dict[str, Any]], Any], queue_cycles: int) -> tuple[str, str, float, float]:
    op(inputs())  # warm-up: first-call costs (compilation, allocator) are not the op's
    torch.cuda.synchronize()
    env = inputs()
    torch.cuda.set_sync_debug_mode("error")
    try:
        op(env)
        raised = "no"
    except RuntimeError:
        raised = "yes"
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    env = inputs()
    with Counter() as counter:
        op(env)
    torch.cuda.synchronize()
    busy = statistics.median(host_us(op, queue_cycles) for _ in range(3))
    idle = statistics.median(host_us(op, 0) for _ in range(5))
    return raised, str(counter.count), busy, idle


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("sync_catalogue: no CUDA GPU", file=sys.stderr)
        return 2
    cycles_per_ms()  # the first sleep runs while the clocks ramp up: calibrate on the second
    queue = int(cycles_per_ms() * QUEUE_MS)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {QUEUE_MS:.0f} ms queued = {queue} cycles\n")
    print("| op | group | raises under 'error' | syncs counted under 'warn' | host µs busy | host µs idle |")
    print("|---|---|---|---:|---:|---:|")
    for name, group, op in CASES:
        if argv and not any(word in name for word in argv):
            continue
        try:
            raised, count, busy, idle = measure(op, queue)
        except Exception as error:  # a case that cannot run here is reported, not fatal
            print(f"| `{name}` | {group} | failed: {type(error).__name__}: {str(error)[:80]} | | | |")
            continue
        print(f"| `{name}` | {group} | {raised} | {count} | {busy:,.0f} | {idle:,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
