#!/usr/bin/env python3
"""Recall of synclint on real vLLM sync sites, beside a naive regex, in one table.

What it measures: `../shared/eval/score_sites.py` materialises the vLLM files of the 86 sites
in `vllm_syncfix.jsonl` (the release before each fix and the release with it), runs a linter
on them and says which sites it finds (a finding within a site's lines, +-1 row), which found
sites it no longer flags once fixed ("fixed"), and how many findings it reports per 1,000
lines of those files (a rough noise figure). This script runs it for:

    synclint at each confidence threshold (low, the default, high), and the regex baseline,
    each twice: on the seed sites (the 29 from ../shared/seeds/) and on the others,

and prints recall for seed, other and all sites, per category, the fixed ratio and findings per
1,000 lines, followed by the exact commands it ran with their wall and CPU seconds. The seed-only
corpus is the corpus's `"seed": true` records written to a temporary file (score_sites.py has
only --exclude-seed). "all" adds the two runs up; its findings per 1,000 lines count a file
that holds both seed and other sites twice (its findings and its lines alike).

Usage:
    bench/vllm_corpus.sh                      # once: extract the vLLM releases
    python bench/recall.py                    # uses /work/vllm-src and ../shared/eval
    python bench/recall.py --log-dir /tmp/recall --show-misses

Stdlib only; synclint and the scorer run as subprocesses.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import BENCH, EVAL_DIR, VLLM_SRC, child_cpu_seconds, source_fingerprint, table

GROUPS = ("seed", "other")
THRESHOLDS = ("low", "default", "high")
STRICTNESS = {"low": 0, "medium": 1, "default": 1, "high": 2}  # synclint's default threshold is medium


@dataclass
class Linter:
    label: str
    command: str  # score_sites.py's --lint template, with {files}


@dataclass
class Score:
    """What one score_sites.py run printed."""

    categories: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # sites, det, fixed, fixed_den
    findings: int = 0
    files: int = 0
    lines: int = 0
    skipped: int = 0
    misses: list[str] = field(default_factory=list)

    def total(self, key: str | None = None) -> tuple[int, int, int, int]:
        rows = [v for k, v in self.categories.items() if key is None or k == key]
        return tuple(sum(col) for col in zip(*rows)) if rows else (0, 0, 0, 0)  # type: ignore[return-value]


CATEGORY_ROW = re.compile(r"^  (\S+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+(\d+)/(\d+)$")
NOISE = re.compile(r"^noise proxy: (\d+) findings in (\d+) parent files, (\d+) lines")
SKIPPED = re.compile(r"\bskipped: (\d+)")


def parse_score(output: str) -> Score:
    score = Score()
    section = None
    for line in output.splitlines():
        if line.startswith("per category"):
            section = "category"
        elif not line.strip() or line.startswith("per repo"):
            section = None
        elif section == "category" and (m := CATEGORY_ROW.match(line)) and m.group(1) != "TOTAL":
            score.categories[m.group(1)] = tuple(int(g) for g in m.groups()[1:])  # type: ignore[assignment]
        elif m := NOISE.match(line):
            score.findings, score.files, score.lines = (int(g) for g in m.groups())
        elif line.startswith("corpus:") and (m := SKIPPED.search(line)):
            score.skipped = int(m.group(1))
        elif line.startswith("undetected: "):
            score.misses = line.split()[1:]
    if not output.strip() or not output.strip().splitlines()[-1].startswith("recall="):
        raise ValueError("score_sites.py output does not end with recall=...")
    return score


def combine(a: Score, b: Score) -> Score:
    """Two runs added up (the seed sites and the others make all sites)."""
    categories = {}
    for key in sorted(set(a.categories) | set(b.categories)):
        categories[key] = tuple(x + y for x, y in zip(a.total(key), b.total(key)))
    return Score(categories, a.findings + b.findings, a.files + b.files, a.lines + b.lines,  # type: ignore[arg-type]
                 a.skipped + b.skipped, a.misses + b.misses)


def linters(python: str, thresholds: list[str], regex: bool, extra: str = "") -> list[Linter]:
    base = f"{shlex.quote(python)} -m synclint check --output-format json --exit-zero" + (f" {extra}" if extra else "")
    out = []
    for t in thresholds:
        flag = "" if t == "default" else f" --min-confidence {t}"
        out.append(Linter(f"synclint {t}", f"{base}{flag} {{files}}"))
    if regex:
        out.append(Linter("regex", f"{shlex.quote(python)} {shlex.quote(str(BENCH / 'regex_baseline.py'))} {{files}}"))
    return out


def recall_cell(score: Score) -> str:
    sites, det, _, _ = score.total()
    return f"{det}/{sites} {det / sites:.2f}" if sites else "-"


def per_kloc_cell(score: Score) -> str:
    return f"{score.findings * 1000 / score.lines:.2f}" if score.lines else "-"


def threshold_inversions(results: dict[tuple[str, str], Score], thresholds: list[str]) -> list[str]:
    """Sites a stricter threshold finds but a looser one misses: impossible unless synclint changed mid-run."""
    problems = []
    for loose in thresholds:
        for strict in thresholds:
            if STRICTNESS[strict] <= STRICTNESS[loose]:
                continue
            missed = {m for g in GROUPS for m in results[(f"synclint {loose}", g)].misses}
            missed_strict = {m for g in GROUPS for m in results[(f"synclint {strict}", g)].misses}
            if missed - missed_strict:
                problems.append(f"synclint {strict} finds {' '.join(sorted(missed - missed_strict))} "
                                f"that synclint {loose} misses")
    return problems


def report(results: dict[tuple[str, str], Score], tools: list[Linter], show_misses: bool) -> None:
    """The tables: one row per linter, then per category, then fixed per category, then misses."""
    rows = []
    for tool in tools:
        seed, other, all_ = (results[(tool.label, g)] for g in (*GROUPS, "all"))
        _, _, fixed, fixed_den = all_.total()
        rows.append((tool.label, recall_cell(seed), recall_cell(other), recall_cell(all_), f"{fixed}/{fixed_den}",
                     per_kloc_cell(seed), per_kloc_cell(other), per_kloc_cell(all_)))
    seed, other = (results[(tools[0].label, g)] for g in GROUPS)
    print(f"recall on real vLLM sync sites: {seed.total()[0]} seed + {other.total()[0]} other evaluated, "
          f"{seed.skipped + other.skipped} skipped; parent files {seed.files} seed ({seed.lines} lines) "
          f"+ {other.files} other ({other.lines} lines)")
    print(table(("linter", "seed", "other", "all", "fixed", "f/kLOC seed", "other", "all"), rows))
    print("  fixed: found sites not flagged any more in the fix release / found sites whose fix has lines")
    print("  f/kLOC: findings per 1,000 lines over the parent (before-fix) files of the sites")
    print("  synclint default: no --min-confidence flag, synclint's own threshold")
    print()

    categories = sorted(results[(tools[0].label, "all")].categories)
    header = ["category", "sites (seed)"] + [tool.label for tool in tools]
    rows = []
    for cat in categories:
        sites_seed = results[(tools[0].label, "seed")].total(cat)[0]
        sites_all = results[(tools[0].label, "all")].total(cat)[0]
        cells = []
        for tool in tools:
            s = results[(tool.label, "seed")].total(cat)
            o = results[(tool.label, "other")].total(cat)
            cells.append(f"{s[1]}/{s[0]} + {o[1]}/{o[0]}" if s[0] else f"{o[1]}/{o[0]}")
        rows.append((cat, f"{sites_all} ({sites_seed})", *cells))
    print("found per category: seed found/sites + other found/sites")
    print(table(header, rows))
    print()

    rows = []
    for cat in categories:
        cells = []
        for tool in tools:
            _, _, fixed, fixed_den = results[(tool.label, "all")].total(cat)
            cells.append(f"{fixed}/{fixed_den}" if fixed_den else "-")
        rows.append((cat, *cells))
    print("fixed per category (all sites): found sites no longer flagged after the fix / found sites with after_lines")
    print(table(["category"] + [tool.label for tool in tools], rows))
    print()

    for tool in tools:
        misses = results[(tool.label, "seed")].misses
        print(f"seed sites missed by {tool.label}: {' '.join(misses) if misses else 'none'}")
        if show_misses:
            other = results[(tool.label, "other")].misses
            print(f"other sites missed by {tool.label}: {' '.join(other) if other else 'none'}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR,
                        help="folder with score_sites.py and vllm_syncfix.jsonl (default: %(default)s)")
    parser.add_argument("--wheels", type=Path, default=VLLM_SRC,
                        help="extracted vLLM releases, DIR/vllm/<version>/vllm (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that has synclint, also runs the scorer (default: this one)")
    parser.add_argument("--thresholds", default=",".join(THRESHOLDS),
                        help="synclint --min-confidence values to score, 'default' for none (default: %(default)s)")
    parser.add_argument("--synclint-args", default="",
                        help="more synclint options, as shell words (e.g. '--config vllm.toml' with a "
                             "sync-properties table)")
    parser.add_argument("--no-regex", action="store_true", help="leave the regex baseline out")
    parser.add_argument("--log-dir", type=Path, help="keep each scorer run's output (and the seed corpus) here")
    parser.add_argument("--show-misses", action="store_true", help="also list the non-seed sites each linter misses")
    args = parser.parse_args(argv)

    scorer = args.eval_dir / "score_sites.py"
    corpus = args.eval_dir / "vllm_syncfix.jsonl"
    for needed in (scorer, corpus):
        if not needed.is_file():
            parser.error(f"missing {needed} (is ../shared beside the checkout? see --eval-dir)")
    thresholds = [t.strip() for t in args.thresholds.split(",") if t.strip()]
    unknown = set(thresholds) - {"low", "medium", "high", "default"}
    if unknown:
        parser.error(f"unknown thresholds: {', '.join(sorted(unknown))}")
    tools = linters(args.python, thresholds, not args.no_regex, args.synclint_args)

    with tempfile.TemporaryDirectory(prefix="synclint-recall-") as tmp:
        work = args.log_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        seed_corpus = work / "vllm_syncfix.seed.jsonl"
        with corpus.open() as src, seed_corpus.open("w") as dst:
            dst.writelines(line for line in src if line.strip() and json.loads(line).get("seed"))
        corpus_args = {
            "seed": ["--corpus", str(seed_corpus)],
            "other": ["--corpus", str(corpus), "--exclude-seed"],
        }
        fingerprint = source_fingerprint(args.python)
        commands: list[tuple[str, float, float]] = []
        results: dict[tuple[str, str], Score] = {}
        for tool in tools:
            for group in GROUPS:
                cmd = [args.python, str(scorer), *corpus_args[group], "--wheels", str(args.wheels),
                       "--lint", tool.command, "--show-misses", "--verbose"]
                start, cpu_start = time.perf_counter(), child_cpu_seconds()
                proc = subprocess.run(cmd, capture_output=True, text=True)
                commands.append((shlex.join(cmd), time.perf_counter() - start, child_cpu_seconds() - cpu_start))
                if args.log_dir:
                    slug = f"{tool.label.replace(' ', '-')}.{group}"
                    (work / f"{slug}.out").write_text(proc.stdout)
                    (work / f"{slug}.err").write_text(proc.stderr)
                if proc.returncode != 0:
                    sys.stderr.write(f"recall.py: the scorer failed (exit {proc.returncode}):\n{shlex.join(cmd)}\n"
                                     f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
                    return 2
                try:
                    results[(tool.label, group)] = parse_score(proc.stdout)
                except ValueError as exc:
                    sys.stderr.write(f"recall.py: cannot read the scorer's output ({exc}):\n{proc.stdout[-2000:]}")
                    return 2
                if proc.stderr.strip():
                    sys.stderr.write(f"[{tool.label} / {group}] scorer stderr:\n{proc.stderr[-2000:]}\n")

            results[(tool.label, "all")] = combine(*(results[(tool.label, g)] for g in GROUPS))

        report(results, tools, args.show_misses)
        fingerprint_after = source_fingerprint(args.python)
        print(f"synclint sources {fingerprint}" + ("" if fingerprint_after == fingerprint else
              f" -> {fingerprint_after}: WARNING, synclint or its rules changed during the run"))
        for problem in threshold_inversions(results, thresholds):
            print(f"WARNING: {problem} (did the rules change during the run?)")
        print("commands run [wall seconds, CPU seconds of it and its children]:")
        for cmd, wall, cpu in commands:
            print(f"  [{wall:6.1f} s wall, {cpu:6.1f} s CPU] {cmd}")
        if args.log_dir:
            print(f"scorer outputs: {work}")
        else:
            print("(the seed-only corpus lived in a temporary folder; pass --log-dir to keep it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
