#!/usr/bin/env python3
"""Does a traced job end as it would untraced? Issue 46's 2-rank gloo job (`rank0_item.py`), on the CPU:

    python bench/trace/exit_clean.py [--runs 100] [--control N] [--out FILE.json]

1. `synclint trace --no-check --device cpu --report R -- torchrun --nproc-per-node 2 rank0_item.py`,
   `--runs` times in a row, as a user runs it (a process each): synclint's exit status, each rank's
   end from the report, and whether a rank aborted ("terminate called", SIGABRT, exitcode -6).
   Clean: exit 1 (rank 0's 5 syncs), both ranks finished, no abort.
2. `--control N`: the same job untraced, N times, with `import torch._dynamo` after
   `init_process_group` (what the simulation's dispatch mode did before issue 46's fix): the process
   group outlives `destroy_process_group()`, and a rank may abort at exit without synclint.
Prints a table; asserts nothing. Stdlib only (torch in the processes it runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
JOB = HERE / "rank0_item.py"
LATE_DYNAMO = 'dist.init_process_group("gloo")\nimport torch._dynamo  # noqa: E402,F401  (the control)\n'


def aborted(text: str) -> bool:
    return "terminate called" in text or "SIGABRT" in text or "exitcode: -6" in text


def traced(work: Path, run: int) -> dict:
    report = work / f"report-{run}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "synclint", "trace", "--no-check", "--device", "cpu", "--report",
                           str(report), "--", "torchrun", "--nproc-per-node", "2", str(JOB)],
                          cwd=work, capture_output=True, text=True, env=env, timeout=300)
    seconds = time.perf_counter() - start
    processes, syncs = [], None
    if report.exists():
        document = json.loads(report.read_text())
        processes = [(p["name"], p["finished"]) for p in document.get("processes", [])]
        syncs = sum(s["count"] for s in document["sites"])
    clean = (proc.returncode == 1 and processes == [("rank 0", True), ("rank 1", True)] and syncs == 5
             and not aborted(proc.stderr))
    return {"run": run, "exit": proc.returncode, "processes": processes, "syncs": syncs,
            "aborted": aborted(proc.stderr), "clean": clean, "seconds": round(seconds, 2),
            "tail": "" if clean else proc.stderr[-2000:]}


def control(work: Path, run: int) -> dict:
    script = work / "late_dynamo.py"
    if not script.exists():
        script.write_text(JOB.read_text().replace('dist.init_process_group("gloo")\n', LATE_DYNAMO))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(script)],
                          cwd=work, capture_output=True, text=True, timeout=300)
    return {"run": run, "exit": proc.returncode, "aborted": aborted(proc.stderr), "clean": proc.returncode == 0,
            "seconds": round(time.perf_counter() - start, 2)}


def summary(name: str, results: list[dict]) -> str:
    exits: dict[int, int] = {}
    for r in results:
        exits[r["exit"]] = exits.get(r["exit"], 0) + 1
    shown = ", ".join(f"{code}: {count}" for code, count in sorted(exits.items()))
    seconds = statistics.median(r["seconds"] for r in results) if results else 0.0
    clean = sum(r["clean"] for r in results)
    aborts = sum(r["aborted"] for r in results)
    return f"| {name} | {len(results)} | {clean} | {aborts} | {shown} | {seconds:.1f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--control", type=int, default=0, help="untraced runs of the job with a late torch._dynamo")
    parser.add_argument("--out", type=Path, help="write every run's outcome here (JSON)")
    args = parser.parse_args()
    import torch

    print(f"# {platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, torch {torch.__version__}",
          flush=True)
    results: dict[str, list[dict]] = {"traced": [], "control": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for run in range(args.runs):
            outcome = traced(work, run)
            results["traced"].append(outcome)
            print(f"traced {run + 1}/{args.runs}: exit {outcome['exit']}, {outcome['processes']}, "
                  f"{outcome['syncs']} syncs, {'clean' if outcome['clean'] else 'NOT CLEAN'} ({outcome['seconds']} s)",
                  flush=True)
            if not outcome["clean"]:
                print(outcome["tail"], flush=True)
        for run in range(args.control):
            outcome = control(work, run)
            results["control"].append(outcome)
            print(f"control {run + 1}/{args.control}: exit {outcome['exit']}, "
                  f"{'aborted' if outcome['aborted'] else 'no abort'} ({outcome['seconds']} s)", flush=True)
    print("\n| job | runs | clean | a rank aborted | exit statuses | median s |\n|---|---:|---:|---:|---|---:|")
    print(summary("traced (`synclint trace --device cpu -- torchrun ...`)", results["traced"]))
    if args.control:
        print(summary("control: untraced, `import torch._dynamo` after init", results["control"]))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
