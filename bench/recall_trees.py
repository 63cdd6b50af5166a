#!/usr/bin/env python3
"""Recall on the eval's real sync sites, checking whole vLLM package trees, with and without project analysis.

Why beside recall.py: `../shared/eval/score_sites.py` copies only the files that hold a site
into a temporary folder, without their packages, so a sync that hides behind a property or a
helper in another file (what project analysis finds) cannot be seen there. This script runs
synclint on the whole package of each release the sites come from (the "parent" release, as
extracted by bench/vllm_corpus.sh into /work/vllm-src/vllm/<version>/vllm) and counts a site
as found when a finding lies within its lines, +-1 row, as score_sites.py does.

Usage:
    python bench/recall_trees.py                 # every release in the corpus
    python bench/recall_trees.py --seed-only     # the seed sites' releases (0.19.0, 0.19.1, 0.21.0)
    python bench/recall_trees.py --show-misses

Prints, per release and overall, sites found without and with project analysis (seed and other
sites apart), and the commands run with their wall seconds. Stdlib only; synclint runs as a subprocess.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict

from benchlib import EVAL_DIR, VLLM_SRC, table

MODES = {"alone": ["--no-project-analysis"], "project": []}


def load_sites(seed_only: bool) -> list[dict]:
    records = [json.loads(line) for line in (EVAL_DIR / "vllm_syncfix.jsonl").read_text().splitlines() if line.strip()]
    return [r for r in records if r["repo"] == "pypi:vllm" and (r["seed"] or not seed_only)]


def findings_rows(version: str, mode: str, jobs: int, log: list) -> dict[str, list[int]] | None:
    tree = VLLM_SRC / "vllm" / version
    if not (tree / "vllm").is_dir():
        return None
    cmd = [sys.executable, "-m", "synclint", "check", "vllm", "--output-format", "json", "--exit-zero",
           "--no-cache", "--jobs", str(jobs), *MODES[mode]]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    log.append((" ".join(cmd[1:]), str(tree), time.perf_counter() - start))
    if proc.returncode != 0:
        sys.exit(f"synclint failed on {tree}: {proc.stderr[-2000:]}")
    rows: dict[str, list[int]] = defaultdict(list)
    for finding in json.loads(proc.stdout or "[]"):
        if finding["code"] not in ("SYNC000", "SYNC001"):
            rows[finding["filename"]].append(finding["location"]["row"])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed-only", action="store_true", help="only the seed sites' releases")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    sites = load_sites(args.seed_only)
    by_version: dict[str, list[dict]] = defaultdict(list)
    for site in sites:
        by_version[site["parent_commit"]].append(site)
    log: list = []
    found: dict[tuple[str, str], set[str]] = defaultdict(set)  # (mode, group) -> site ids
    totals: dict[str, int] = defaultdict(int)
    rows_out = []
    misses = []
    for version in sorted(by_version, key=lambda v: tuple(int(p) for p in v.split("."))):
        per_mode = {mode: findings_rows(version, mode, args.jobs, log) for mode in MODES}
        if per_mode["alone"] is None:
            rows_out.append([version, "no tree", "", "", ""])
            continue
        counts = {mode: {"seed": 0, "other": 0} for mode in MODES}
        n = {"seed": 0, "other": 0}
        for site in by_version[version]:
            group = "seed" if site["seed"] else "other"
            n[group] += 1
            totals[group] += 1
            lo, hi = site["before_lines"]
            for mode, rows in per_mode.items():
                if any(lo - 1 <= r <= hi + 1 for r in rows.get(site["path"], ())):
                    counts[mode][group] += 1
                    found[(mode, group)].add(site["id"])
                elif mode == "project":
                    misses.append((site["id"], site["path"], site["before_lines"], site["category"]))
        rows_out.append([version, f"{n['seed']} / {n['other']}",
                         f"{counts['alone']['seed']} / {counts['alone']['other']}",
                         f"{counts['project']['seed']} / {counts['project']['other']}"])
    print(table(["release", "sites (seed / other)", "found alone", "found with project analysis"], rows_out))
    print()
    summary = [[group, totals[group], len(found[("alone", group)]), len(found[("project", group)])]
               for group in ("seed", "other") if totals[group]]
    print(table(["sites", "count", "found alone", "found with project analysis"], summary))
    gained = sorted(found[("project", "seed")] | found[("project", "other")])
    gained = [s for s in gained if s not in found[("alone", "seed")] | found[("alone", "other")]]
    print(f"\nfound only with project analysis: {', '.join(gained) or 'none'}")
    if args.show_misses:
        print("\nmissed with project analysis:")
        for miss in misses:
            print("  ", *miss)
    print("\ncommands (wall seconds):")
    for cmd, cwd, seconds in log:
        print(f"  {seconds:7.1f}  (cd {cwd} && python {cmd})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
