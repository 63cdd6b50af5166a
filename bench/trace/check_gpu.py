#!/usr/bin/env python3
"""`synclint trace` on a CUDA GPU: is the measured wait right, what does tracing cost, and does it
find what the runtime ground truth found. Run from the repository root on a GPU machine:

    python3 bench/trace/check_gpu.py --out DIR      # DIR/trace-gpu.json (numbers), DIR/trace-gpu.log (tables)

1. `queued_item.py`: about 20 ms of matrix products queued, then `.item()`; the mean wait that
   `synclint trace` reports at the `.item()` line against the mean GPU time of the queued products
   (CUDA events): within 10%.
2. `step_loop.py`: the median step time of a small training loop, plain, under `synclint trace` and
   under `synclint trace --no-times` (alternating, two runs each), for two widths: the tracing overhead;
   then `--skip-first 10 --max-steps 30` on it (the limits on CUDA).
3. The training script and the generation loop of `tests/test_trace.py` traced on CUDA and in the
   CPU simulation: the same sites and counts?
4. Scenarios of `../runtime/workloads/timm.py` through `run_scenario.py` with `--source` the timm
   package: the trace's table, and its sites and counts beside those `../runtime/timm/sync_sites.jsonl`
   recorded with `trace_syncs.py`.
Stdlib only; each program runs in its own process. Asserts nothing: it prints and writes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCENARIOS = ("train_resnet_prefetch", "train_vit_mixup")


def log(out: Path, text: str) -> None:
    print(text, flush=True)
    with open(out / "trace-gpu.log", "a") as fh:
        fh.write(text + "\n")


def trace(args: list[str], cwd: Path, timeout: int = 240, env: dict | None = None) -> tuple[int, str, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "synclint", "trace", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(REPO), os.environ.get("PYTHONPATH", "")]), **(env or {})})
    return proc.returncode, proc.stderr, time.perf_counter() - start


def queued(out: Path, work: Path, results: dict) -> None:
    truth, report = work / "queued_truth.json", work / "queued.json"
    code, err, _ = trace(["--no-check", "--report", str(report), "--", "python", str(HERE / "queued_item.py"), str(truth)],
                         work)
    log(out, f"## 1. 20 ms queued, then .item()  (exit {code})\n{err}")
    line = next(i for i, text in enumerate((HERE / "queued_item.py").read_text().splitlines(), 1) if "# ITEM_LINE" in text)
    data, gpu = json.loads(report.read_text()), json.loads(truth.read_text())
    site = next(s for s in data["sites"] if s["file"].endswith("queued_item.py") and s["line"] == line)
    mean_wait_ms = site["wait_s"] / site["count"] * 1e3
    gpu_ms = statistics.mean(gpu["gpu_ms"])
    results["queued"] = {"products": gpu["products"], "trials": len(gpu["gpu_ms"]), "count": site["count"],
                         "mean_wait_ms": round(mean_wait_ms, 3), "mean_gpu_ms": round(gpu_ms, 3),
                         "ratio": round(mean_wait_ms / gpu_ms, 4), "within_10_percent": abs(mean_wait_ms / gpu_ms - 1) <= 0.10,
                         "op": site["op"]}
    log(out, json.dumps(results["queued"]))


def overhead(out: Path, work: Path, results: dict) -> None:
    rows = []
    for width, steps in ((256, 400), (2048, 300)):
        times: dict[str, list[float]] = {"plain": [], "traced": [], "no_times": []}
        target = work / "loop.json"
        loop = [str(HERE / "step_loop.py"), str(target), str(width), str(steps)]
        for _ in range(2):
            subprocess.run([sys.executable, *loop], check=True, timeout=180)
            times["plain"].append(json.loads(target.read_text())["median_step_ms"])
            code, err, _ = trace(["--no-check", "--", "python", *loop], work)
            times["traced"].append(json.loads(target.read_text())["median_step_ms"])
            trace(["--no-check", "--no-times", "--", "python", *loop], work)
            times["no_times"].append(json.loads(target.read_text())["median_step_ms"])
        plain = statistics.median(times["plain"])
        row = {"width": width, "steps": steps, **{f"{k}_ms": [round(x, 4) for x in v] for k, v in times.items()},
               "overhead_percent": round(100 * (statistics.median(times["traced"]) / plain - 1), 1),
               "overhead_no_times_percent": round(100 * (statistics.median(times["no_times"]) / plain - 1), 1)}
        rows.append(row)
        log(out, f"## 2. overhead, width {width}: {json.dumps(row)}\n{err}")
    results["overhead"] = rows


def limits(out: Path, work: Path, results: dict) -> None:
    report = work / "limits.json"
    code, err, _ = trace(["--no-check", "--skip-first", "10", "--max-steps", "30", "--report", str(report), "--", "python",
                          str(HERE / "step_loop.py"), str(work / "loop.json"), "256", "100"], work)
    log(out, f"## 2b. --skip-first 10 --max-steps 30 (exit {code})\n{err}")
    data = json.loads(report.read_text())
    results["limits"] = {"skipped": data["skipped"], "stopped": data["stopped"],
                         "counts": [s["count"] for s in data["sites"]]}
    log(out, json.dumps(results["limits"]))


def test_programs() -> dict[str, str]:
    tree = ast.parse((REPO / "tests" / "test_trace.py").read_text())
    wanted = {"TRAIN": "train.py", "HELPERS": "helpers.py", "GENERATE": "generate.py"}
    return {wanted[node.targets[0].id]: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in wanted}


def cuda_vs_simulation(out: Path, work: Path, results: dict) -> None:
    folder = work / "programs"
    folder.mkdir()
    for name, text in test_programs().items():
        (folder / name).write_text(text)
    results["cuda_vs_cpu"] = {}
    for program, args in (("train.py", []), ("generate.py", ["10"])):
        sites = {}
        for device in ("cuda", "cpu"):
            report = folder / f"{program}.{device}.json"
            # The simulation's run sees no GPU, as on a CPU machine: the program puts its tensors on the CPU.
            hidden = {"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else None
            code, err, _ = trace(["--device", device, "--report", str(report), "--", "python", program, *args], folder,
                                 env=hidden)
            log(out, f"## 3. {program} on {device} (exit {code})\n{err}")
            sites[device] = sorted((s["line"], s["count"]) for s in json.loads(report.read_text())["sites"])
        results["cuda_vs_cpu"][program] = {**sites, "same": sites["cuda"] == sites["cpu"]}
        log(out, json.dumps(results["cuda_vs_cpu"][program]))


def ground_truth(out: Path, work: Path, results: dict) -> None:
    import timm

    root = os.path.dirname(os.path.realpath(timm.__file__))
    rows = [json.loads(line) for line in (REPO / "bench" / "runtime" / "timm" / "sync_sites.jsonl").read_text().splitlines()]
    results["ground_truth"] = {"timm": timm.__version__}
    for scenario in SCENARIOS:
        report = work / f"{scenario}.json"
        code, err, seconds = trace(["--source", root, "--report", str(report), "--", "python", str(HERE / "run_scenario.py"),
                                    str(REPO / "bench" / "runtime" / "workloads" / "timm.py"), scenario], work, timeout=300)
        log(out, f"## 4. timm {timm.__version__} {scenario} (exit {code}, {seconds:.1f} s)\n{err}")
        if not report.exists():
            continue
        traced: dict[tuple, int] = {}
        for site in json.loads(report.read_text())["sites"]:
            if site["file"]:
                key = (os.path.relpath(os.path.join(work, site["file"]), root), site["line"])
                traced[key] = traced.get(key, 0) + site["count"]
        recorded: dict[tuple, int] = {}
        for row in rows:
            if row["scenario"] == scenario and row["path"]:
                key = (row["path"], row["line"])
                recorded[key] = recorded.get(key, 0) + row["count"]
        differ = {f"{p}:{n}": [recorded.get((p, n)), traced.get((p, n))] for p, n in sorted(set(traced) | set(recorded))
                  if recorded.get((p, n)) != traced.get((p, n))}
        summary = {"sites_recorded": len(recorded), "sites_traced": len(traced), "same_sites": set(recorded) == set(traced),
                   "syncs_recorded": sum(recorded.values()), "syncs_traced": sum(traced.values()),
                   "differ [recorded, traced]": differ}
        results["ground_truth"][scenario] = summary
        log(out, json.dumps(summary))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: queued,overhead,limits,cuda,truth")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    results: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    log(args.out, f"# synclint trace on {results['device']}, torch {results['torch']}")
    skip = set(args.skip.split(","))
    parts = (("queued", queued), ("overhead", overhead), ("limits", limits), ("cuda", cuda_vs_simulation),
             ("truth", ground_truth))
    with tempfile.TemporaryDirectory() as tmp:
        for name, part in parts:
            if name in skip:
                continue
            try:
                part(args.out, Path(tmp), results)
            except Exception as exc:  # a part that fails is logged; the others still run
                results[f"{name}_error"] = repr(exc)
                log(args.out, f"## {name} failed: {exc!r}")
            (args.out / "trace-gpu.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
