#!/usr/bin/env python3
"""What timing the waits costs per torch call, on any machine (no GPU needed):

    python bench/trace/call_cost.py [--calls 100000]

A loop of `x.add(1)` on a small CPU tensor, plain, under the `TorchFunctionMode` timer
(`synclint.verify.cuda.WaitTimer`, what `synclint trace` used before, and still uses before Python 3.12)
and under `synclint.trace.timing.CallStarts` (Python 3.12+: `sys.monitoring`); best of 5 each. Prints
a table: nanoseconds per call, and what the timer adds.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from synclint.trace import timing
from synclint.verify.cuda import WaitTimer
from synclint.verify.sites import Recording


def per_call_ns(calls: int) -> float:
    x = torch.ones(4)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            x.add(1)
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100_000)
    calls = parser.parse_args().calls
    rows = [("plain", per_call_ns(calls))]
    with WaitTimer(Recording()):
        rows.append(("TorchFunctionMode (WaitTimer)", per_call_ns(calls)))
    if timing.available():
        with timing.CallStarts():
            rows.append(("sys.monitoring (CallStarts)", per_call_ns(calls)))
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {calls:,} calls of x.add(1)")
    print(f"{'timer':32}  {'ns/call':>8}  {'added':>8}")
    for name, ns in rows:
        print(f"{name:32}  {ns:8.0f}  {ns - rows[0][1]:+8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
