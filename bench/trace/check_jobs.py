#!/usr/bin/env python3
"""`synclint trace` on the jobs of issue 39, on a CUDA GPU. From the repository root on a GPU machine:

    python3 bench/trace/check_jobs.py --out DIR [--old PATH] [--rounds 2]

1. `queued_item.py` under the timer of this synclint (`timing.CallStarts` on Python 3.12+): the mean
   wait at the `.item()` line against the GPU time of the queued products (CUDA events).
2. `torchrun --nproc-per-node 2 rank_item.py` (gloo, both ranks on cuda:0): per-rank counts at the line
   only rank 0 runs (ITEM_LINE) and at the line both run (GRAD_LINE), with `--report` and `--timeline`;
   the timeline checked against the Chrome trace event format, its slices' total against the report's
   total wait; then the same with NCCL, both ranks on cuda:0 (NCCL may refuse one GPU for two ranks).
3. `pageable.py`: the non-blocking copies from pageable memory found with their counts, pinned ones not.
4. Overhead: the median step time of `step_loop.py` (4-layer MLP, AdamW, `loss.item()` every step)
   plain, traced, traced `--no-times`, and traced by the synclint at `--old` (a checkout of the code
   before this change: its `TorchFunctionMode` timer), alternating, `--rounds` runs each, two widths.
Prints a table per part; writes DIR/trace-jobs.json and DIR/trace-jobs.log. Asserts nothing.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYNCLINT_HOME = Path(__import__("synclint").__file__).resolve().parent.parent
EVENT_PHASES = {"X", "i", "M"}


def log(out: Path, text: str) -> None:
    print(text, flush=True)
    with open(out / "trace-jobs.log", "a") as fh:
        fh.write(text + "\n")


def trace(args: list[str], cwd: Path, home: Path = SYNCLINT_HOME, timeout: int = 240) -> tuple[int, str, float]:
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(home), os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run([sys.executable, "-m", "synclint", "trace", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=timeout, env=env)
        return proc.returncode, proc.stderr, time.perf_counter() - start
    except subprocess.TimeoutExpired as exc:
        return -1, f"timed out after {timeout} s\n{exc.stderr or ''}", time.perf_counter() - start


def line_of(program: str, mark: str) -> int:
    return next(i for i, text in enumerate((HERE / program).read_text().splitlines(), 1) if mark in text)


def check_timeline(path: Path) -> dict:
    """The Chrome trace event format's required fields, per phase; the slices' total wait."""
    data = json.loads(path.read_text())
    problems, total_us, slices = [], 0.0, 0
    for event in data["traceEvents"]:
        if event.get("ph") not in EVENT_PHASES or not isinstance(event.get("pid"), int) \
                or not isinstance(event.get("tid"), int) or not isinstance(event.get("name"), str):
            problems.append(event)
        elif event["ph"] in ("X", "i") and not (isinstance(event.get("ts"), (int, float)) and event["ts"] >= 0):
            problems.append(event)
        elif event["ph"] == "X" and not (isinstance(event.get("dur"), (int, float)) and event["dur"] >= 0):
            problems.append(event)
        elif event["ph"] == "X" and event.get("cat") in ("sync", "wait"):
            total_us += event["dur"]
            slices += 1
    return {"events": len(data["traceEvents"]), "bad_events": len(problems), "sync_slices": slices,
            "slices_total_s": total_us / 1e6}


def per_rank(report: dict, file: str, line: int) -> dict:
    counts: dict[str, int] = {}
    for site in report["sites"]:
        if site["file"] and site["file"].endswith(file) and site["line"] == line:
            for r in site.get("ranks", []):
                counts[r["name"]] = counts.get(r["name"], 0) + r["count"]
    return counts


def queued(out: Path, work: Path, results: dict) -> None:
    truth, report = work / "queued_truth.json", work / "queued.json"
    code, err, _ = trace(["--no-check", "--report", str(report), "--", "python", str(HERE / "queued_item.py"),
                          str(truth)], work)
    log(out, f"## 1. 20 ms queued, then .item() (exit {code})\n{err}")
    line = line_of("queued_item.py", "# ITEM_LINE")
    data, gpu = json.loads(report.read_text()), json.loads(truth.read_text())
    site = next(s for s in data["sites"] if s["file"].endswith("queued_item.py") and s["line"] == line)
    mean_wait_ms, gpu_ms = site["wait_s"] / site["count"] * 1e3, statistics.mean(gpu["gpu_ms"])
    results["queued"] = {"count": site["count"], "mean_wait_ms": round(mean_wait_ms, 3), "mean_gpu_ms": round(gpu_ms, 3),
                         "ratio": round(mean_wait_ms / gpu_ms, 4), "python": sys.version.split()[0]}
    log(out, json.dumps(results["queued"]))


def ranks(out: Path, work: Path, results: dict, steps: int = 30) -> None:
    for backend in ("gloo", "nccl"):
        report, timeline = work / f"ranks-{backend}.json", work / f"ranks-{backend}.trace.json"
        code, err, seconds = trace(["--no-check", "--report", str(report), "--timeline", str(timeline), "--",
                                    "torchrun", "--nproc-per-node", "2", str(HERE / "rank_item.py"), str(steps), backend],
                                   work, timeout=120 if backend == "gloo" else 60)
        tail = "\n".join(line for line in err.splitlines() if not line.startswith(("*", "Setting OMP")))[-6000:]
        log(out, f"## 2. torchrun --nproc-per-node 2 rank_item.py {steps} {backend} (exit {code}, {seconds:.1f} s)\n{tail}")
        if not report.exists():
            results[f"ranks_{backend}"] = {"exit": code}
            continue
        data = json.loads(report.read_text())
        row = {"exit": code, "item_line": per_rank(data, "rank_item.py", line_of("rank_item.py", "# ITEM_LINE")),
               "grad_line": per_rank(data, "rank_item.py", line_of("rank_item.py", "# GRAD_LINE")),
               "report_wait_s": data["wait_s"], "processes": [(p["name"], p["finished"]) for p in data["processes"]]}
        if timeline.exists():
            row["timeline"] = check_timeline(timeline)
            if data["wait_s"]:
                row["slices_over_table"] = row["timeline"]["slices_total_s"] / data["wait_s"]
            if backend == "gloo":
                (out / "ranks-gloo.trace.json").write_text(timeline.read_text())
        results[f"ranks_{backend}"] = row
        log(out, json.dumps(row))


def pageable(out: Path, work: Path, results: dict, n: int = 10) -> None:
    report = work / "pageable.json"
    code, err, _ = trace(["--no-check", "--report", str(report), "--", "python", str(HERE / "pageable.py"), str(n)], work)
    log(out, f"## 3. pageable.py {n} (exit {code})\n{err}")
    data = json.loads(report.read_text())
    found = {}
    for mark in ("PAGEABLE_LINE", "PINNED_LINE", "SMALL_LINE", "D2H_LINE"):
        line = line_of("pageable.py", "# " + mark)
        at = [s for s in data["sites"] if s["file"] and s["file"].endswith("pageable.py") and s["line"] == line]
        found[mark] = [(s["kind"], s["count"], round((s["wait_s"] or 0) * 1e3 / s["count"], 3)) for s in at]
    results["pageable"] = found
    log(out, json.dumps(found))


def overhead(out: Path, work: Path, results: dict, old: Path | None, rounds: int) -> None:
    configs = {"plain": None, "traced": ([], SYNCLINT_HOME), "no_times": (["--no-times"], SYNCLINT_HOME)}
    if old is not None:
        configs["traced_old"] = ([], old)
    table = []
    for width, steps in ((256, 600), (2048, 400)):
        times: dict[str, list[float]] = {name: [] for name in configs}
        target = work / "loop.json"
        loop = [str(HERE / "step_loop.py"), str(target), str(width), str(steps)]
        for _ in range(rounds):
            for name, config in configs.items():
                if config is None:
                    subprocess.run([sys.executable, *loop], check=True, timeout=180)
                else:
                    options, home = config
                    code, err, _ = trace(["--no-check", *options, "--", "python", *loop], work, home=home)
                    if code not in (0, 1):
                        log(out, f"{name}: exit {code}\n{err}")
                times[name].append(json.loads(target.read_text())["median_step_ms"])
        plain = statistics.median(times["plain"])
        row = {"width": width, "steps": steps, **{f"{k}_ms": v for k, v in times.items()}}
        for name in configs:
            if name != "plain":
                row[f"{name}_overhead_percent"] = round(100 * (statistics.median(times[name]) / plain - 1), 1)
        table.append(row)
        log(out, f"## 4. overhead, width {width}: {json.dumps(row)}")
    results["overhead"] = table
    names = [n for n in configs if n != "plain"]
    log(out, "| width | plain ms | " + " | ".join(f"{n} ms (overhead)" for n in names) + " |")
    for row in table:
        cells = [f"{statistics.median(row[n + '_ms']):.3f} ({row[n + '_overhead_percent']:+.1f}%)" for n in names]
        log(out, f"| {row['width']} | {statistics.median(row['plain_ms']):.3f} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--old", type=Path, help="a folder holding the synclint package to compare the overhead with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--parts", default="queued,ranks,pageable,overhead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (the CPU simulation)"
    results: dict = {"torch": torch.__version__, "gpu": gpu, "python": sys.version.split()[0]}
    log(args.out, f"# synclint trace jobs on {results['gpu']}, torch {results['torch']}, Python {results['python']}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for part in args.parts.split(","):
            try:
                if part == "queued":
                    queued(args.out, work, results)
                elif part == "ranks":
                    ranks(args.out, work, results)
                elif part == "pageable":
                    pageable(args.out, work, results)
                elif part == "overhead":
                    overhead(args.out, work, results, args.old, args.rounds)
            except Exception as exc:  # one part failing leaves the others measured
                log(args.out, f"## {part} failed: {type(exc).__name__}: {exc}")
    (args.out / "trace-jobs.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
