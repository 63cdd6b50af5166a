#!/usr/bin/env python3
"""What `synclint trace` costs a small training step, on a CUDA GPU, beside the untraced run in one run:

    python bench/trace/overhead.py --out DIR [--rounds 8] [--widths 256] [--before PATH] [--parts cli,parts]

`cli`: the median step of `step_loop.py` (4-layer MLP, AdamW, `loss.item()` every step: the bench's
small training step, about 1.5 ms at width 256) run as `python step_loop.py`, as `synclint trace --no-check
-- python step_loop.py`, with `--no-times`, and (`--before PATH`: a folder holding another synclint
package) traced by that synclint; the four alternate, `--rounds` times, each a process of its own,
all on one CPU core (this process's affinity, which they inherit), so that the rounds differ less.
The overhead is the median over rounds of each configuration's median step, against plain's.

`parts`: in one process, the same step with each part of what the trace enters (the CUDA detector:
the sync debug mode and its warning hook; the pageable-copy wrappers; the optimizer-step hook; the
timer) alone and all together, in alternating blocks: where the overhead comes from.
Prints tables; writes DIR/overhead.json and DIR/overhead.log. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYNCLINT_HOME = HERE.parent.parent


def log(out: Path, text: str) -> None:
    print(text, flush=True)
    with open(out / "overhead.log", "a") as fh:
        fh.write(text + "\n")


def step_ms(loop: list[str], target: Path, trace: list[str] | None, home: Path) -> float:
    if trace is None:
        command = [sys.executable, *loop]
    else:
        command = [sys.executable, "-m", "synclint", "trace", "--no-check", *trace, "--", "python", *loop]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(home), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    if trace is None and proc.returncode != 0 or trace is not None and proc.returncode not in (0, 1):
        raise RuntimeError(f"{command}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(target.read_text())["median_step_ms"]


def cli(out: Path, rounds: int, widths: list[int], before: Path | None, results: dict) -> None:
    configs: dict[str, tuple[list[str] | None, Path]] = {"plain": (None, SYNCLINT_HOME), "traced": ([], SYNCLINT_HOME),
                                                         "no_times": (["--no-times"], SYNCLINT_HOME)}
    if before is not None:
        configs["traced_before"] = ([], before)
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "loop.json"
        for width in widths:
            steps = 600
            loop = [str(HERE / "step_loop.py"), str(target), str(width), str(steps)]
            times: dict[str, list[float]] = {name: [] for name in configs}
            for number in range(rounds):
                for name, (trace, home) in configs.items():
                    times[name].append(step_ms(loop, target, trace, home))
                log(out, f"width {width} round {number + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in times.items()))
            plain = statistics.median(times["plain"])
            row = {"width": width, "steps": steps, "rounds": rounds, **{f"{k}_ms": v for k, v in times.items()}}
            for name in configs:
                row[f"{name}_median_ms"] = round(statistics.median(times[name]), 4)
                if name != "plain":
                    row[f"{name}_overhead_percent"] = round(100 * (statistics.median(times[name]) / plain - 1), 1)
            table.append(row)
    results["cli"] = table
    names = [n for n in configs if n != "plain"]
    log(out, "\n| width | plain ms (rounds' range) | " + " | ".join(f"{n} ms (overhead)" for n in names) + " |")
    log(out, "|---:|---:|" + "---:|" * len(names))
    for row in table:
        spread = f"{min(row['plain_ms']):.3f}-{max(row['plain_ms']):.3f}"
        cells = [f"{row[n + '_median_ms']:.3f} ({row[n + '_overhead_percent']:+.1f}%)" for n in names]
        log(out, f"| {row['width']} | {row['plain_median_ms']:.3f} ({spread}) | " + " | ".join(cells) + " |")


def parts(out: Path, rounds: int, results: dict) -> None:
    import torch

    from synclint.trace import timing
    from synclint.trace.copies import PageableCopies
    from synclint.trace.recording import Limits, TraceRecording
    from synclint.trace.session import Settings, detector, watching

    width, block = 256, 200
    layers: list[torch.nn.Module] = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def run() -> float:
        times = []
        for _ in range(block):
            begin = time.perf_counter()
            x = torch.randn(64, width, device="cuda")
            loss = model(x).pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss.item()
            times.append(time.perf_counter() - begin)
        return statistics.median(times[block // 5:]) * 1e3

    timed, untimed = detector(Settings("cuda")), detector(Settings("cuda", no_times=True))

    def enter(name: str, stack: ExitStack) -> None:
        recording = TraceRecording(Limits())
        if name == "debug mode (CudaDetector)":
            stack.enter_context(untimed.detector.watch(recording))
        elif name == "pageable-copy wrappers":
            stack.enter_context(PageableCopies(untimed.detector.is_user, recording))
        elif name == "optimizer-step hook":
            from torch.optim.optimizer import register_optimizer_step_post_hook

            stack.callback(register_optimizer_step_post_hook(lambda *a: recording.step()).remove)
        elif name == "timer (CallStarts)":
            stack.enter_context(timing.CallStarts())
        elif name == "all, --no-times":
            stack.enter_context(watching(untimed, recording))
        elif name == "all, timed":
            stack.enter_context(watching(timed, recording))

    names = ["plain", "debug mode (CudaDetector)", "pageable-copy wrappers", "optimizer-step hook",
             "timer (CallStarts)", "all, --no-times", "all, timed"]
    if not timing.available():
        names.remove("timer (CallStarts)")
    run()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            if timing.available():
                getattr(sys, "monitoring").restart_events()  # a block starts with no call site switched off
            with ExitStack() as stack:
                enter(name, stack)
                times[name].append(run())
    plain = statistics.median(times["plain"])
    rows = {name: {"ms": times[name], "median_ms": round(statistics.median(times[name]), 4),
                   "overhead_percent": round(100 * (statistics.median(times[name]) / plain - 1), 1)} for name in names}
    results["parts"] = {"width": width, "block": block, "rounds": rounds, "rows": rows}
    log(out, f"\n| in one process, width {width}, {rounds} rounds of {block} steps | median step ms | overhead |\n|---|---:|---:|")
    for name in names:
        log(out, f"| {name} | {rows[name]['median_ms']:.3f} | {rows[name]['overhead_percent']:+.1f}% |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--widths", default="256")
    parser.add_argument("--before", type=Path, help="a folder holding the synclint package to compare with")
    parser.add_argument("--parts", default="cli,parts")
    parser.add_argument("--cpu", type=int, default=None, help="the core to run on (default: the last one)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(SYNCLINT_HOME))  # `parts` imports this synclint
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {args.cpu if args.cpu is not None else cores[-1]})
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    results: dict = {"torch": torch.__version__, "gpu": gpu, "python": sys.version.split()[0],
                     "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    log(args.out, f"# synclint trace overhead on {gpu}, torch {torch.__version__}, Python {results['python']}, "
                  f"cores {results['cpu_affinity']}")
    for part in args.parts.split(","):
        try:
            if part == "cli":
                cli(args.out, args.rounds, [int(w) for w in args.widths.split(",")], args.before, results)
            elif part == "parts":
                parts(args.out, args.rounds, results)
        except Exception as exc:  # one part failing leaves the others measured
            log(args.out, f"## {part} failed: {type(exc).__name__}: {exc}")
        (args.out / "overhead.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
