#!/usr/bin/env python3
"""Findings per 1,000 lines of synclint on a real code base (vLLM 0.33.0's package by default).

What it measures: how many findings synclint reports on a large real tree, per rule and per
confidence (high: proven CUDA tensor, medium: tensor of unknown device, low: unknown type),
normalised by the lines of every .py file under the tree; the same per context (loop, step,
init, test, code); the files with most findings; files synclint could not parse (SYNC000) or
crashed on (SYNC001, with the traceback synclint printed under --debug); and the wall and CPU
time of the one synclint run.

It runs, in the tree's parent folder (so that file names come out as `vllm/...`):

    PYTHON -m synclint check --output-format json --min-confidence low --include-tests --exit-zero --debug vllm

Usage:
    python bench/density.py                                   # vLLM 0.33.0 from /work/vllm-src
    python bench/density.py --tree DIR --json-out /tmp/density.json --stderr-out /tmp/density.err

`--json-out` keeps synclint's raw JSON findings: `precision.py` draws its sample from it.
Stdlib only; synclint runs as a subprocess.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchlib import (CONFIDENCES, PROBLEM_CODES, child_cpu_seconds, count_lines, iter_py_files, per_kloc,
                      source_fingerprint, table, vllm_tree)


def synclint_command(python: str, tree: Path, min_confidence: str, jobs: int | None, extra: list[str]) -> list[str]:
    # --include-tests: the table per context counts test code too (quiet by default since issue 22).
    cmd = [python, "-m", "synclint", "check", "--output-format", "json", "--min-confidence", min_confidence,
           "--include-tests", "--exit-zero", "--debug"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    return cmd + extra + [tree.name]


def run_synclint(cmd: list[str], cwd: Path) -> tuple[list[dict], str, int, float, float]:
    """(findings, stderr, exit status, wall seconds, CPU seconds) of one synclint run."""
    start, cpu_start = time.perf_counter(), child_cpu_seconds()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - start, child_cpu_seconds() - cpu_start
    out = proc.stdout.strip()
    try:
        findings = json.loads(out) if out else []
    except json.JSONDecodeError as exc:
        sys.exit(f"density.py: synclint did not print JSON ({exc}); exit {proc.returncode}\n"
                 f"stdout starts: {out[:500]}\nstderr ends: {proc.stderr[-2000:]}")
    return findings, proc.stderr, proc.returncode, elapsed, cpu


def known_rules(python: str, cwd: Path) -> dict[str, str]:
    """Code -> name of every rule synclint has (from `synclint rules`), so rules with no finding show."""
    proc = subprocess.run([python, "-m", "synclint", "rules"], capture_output=True, text=True, cwd=cwd)
    rules = {}
    for line in proc.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("SYNC"):
            rules[cells[0]] = cells[1]
    return rules


def rule_table(findings: list[dict], lines: int, rules: dict[str, str]) -> str:
    """Per rule: findings and per-kLOC at each confidence, at the default threshold (>= medium), and all."""
    names = dict(rules)
    names.update((f["code"], f.get("name", "")) for f in findings)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for f in findings:
        counts[f["code"]][f.get("confidence", "?")] += 1

    def cells(c: Counter[str]) -> list[str]:
        values = [c[conf] for conf in CONFIDENCES]
        values += [c["high"] + c["medium"], sum(c.values())]
        return [f"{n} ({per_kloc(n, lines):.2f})" for n in values]

    rows = [(code, names[code], *cells(counts[code])) for code in sorted(names)]
    total: Counter[str] = sum(counts.values(), Counter())
    rows.append(("TOTAL", "", *cells(total)))
    return table(("code", "name", "high", "medium", "low", ">=medium", "all"), rows, left=2)


def context_table(findings: list[dict], lines: int) -> str:
    """Per rule and context (where synclint says the finding sits), all confidences."""
    contexts = sorted({f.get("context") or "-" for f in findings})
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for f in findings:
        counts[f["code"]][f.get("context") or "-"] += 1
    rows = [(code, *(counts[code][ctx] for ctx in contexts)) for code in sorted(counts)]
    rows.append(("TOTAL", *(sum(c[ctx] for c in counts.values()) for ctx in contexts)))
    return table(("rule", *contexts), rows)


def top_files(findings: list[dict], lines_of: dict[str, int], n: int) -> str:
    per_file = Counter(f["filename"] for f in findings)
    rows = []
    for name, count in per_file.most_common(n):
        lines = lines_of.get(name, 0)
        codes = Counter(f["code"] for f in findings if f["filename"] == name)
        rows.append((name, count, lines, f"{per_kloc(count, lines):.1f}",
                     " ".join(f"{c}:{k}" for c, k in sorted(codes.items()))))
    return table(("file", "findings", "lines", "per kLOC", "by rule"), rows, align="lrrrl")


def error_blocks(stderr: str) -> list[str]:
    """synclint's `synclint: error: ...` messages, each with the traceback lines that follow it."""
    blocks: list[list[str]] = []
    for line in stderr.splitlines():
        if line.startswith("synclint: error:"):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return ["\n".join(b) for b in blocks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=vllm_tree(), help="the package to check (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable, help="the Python that has synclint (default: this one)")
    parser.add_argument("--min-confidence", choices=("low", "medium", "high"), default="low",
                        help="passed to synclint (default: %(default)s, so every finding is counted)")
    parser.add_argument("--jobs", type=int, help="synclint worker processes (default: synclint's, the CPU count)")
    parser.add_argument("--select", help="passed to synclint as --select (default: every rule)")
    parser.add_argument("--json-out", type=Path, help="write synclint's raw JSON findings here (for precision.py)")
    parser.add_argument("--stderr-out", type=Path, help="write synclint's stderr (errors, tracebacks) here")
    parser.add_argument("--top", type=int, default=10, help="how many of the noisiest files to list (default: 10)")
    args = parser.parse_args(argv)

    tree = args.tree.resolve()
    if not tree.is_dir():
        parser.error(f"no such folder: {tree} (bench/vllm_corpus.sh fetches vLLM trees)")
    extra = ["--select", args.select] if args.select else []
    cmd = synclint_command(args.python, tree, args.min_confidence, args.jobs, extra)
    print(f"command (in {tree.parent}): {shlex.join(cmd)}")

    lines_of = {p.relative_to(tree.parent).as_posix(): count_lines(p) for p in iter_py_files(tree)}
    lines = sum(lines_of.values())
    fingerprint = source_fingerprint(args.python, tree.parent)
    rules = known_rules(args.python, tree.parent)
    if args.select:
        prefixes = tuple(p.strip().upper() for p in args.select.split(",") if p.strip())
        rules = {code: name for code, name in rules.items() if code.startswith(prefixes)}
    findings, stderr, status, elapsed, cpu = run_synclint(cmd, tree.parent)
    fingerprint_after = source_fingerprint(args.python, tree.parent)
    if args.json_out:
        args.json_out.write_text(json.dumps(findings, indent=1) + "\n")
    if args.stderr_out:
        args.stderr_out.write_text(stderr)

    problems = [f for f in findings if f["code"] in PROBLEM_CODES]
    real = [f for f in findings if f["code"] not in PROBLEM_CODES]
    flagged = len({f["filename"] for f in real})
    print(f"tree: {tree}: {len(lines_of)} .py files, {lines} lines; {len(real)} findings in {flagged} files")
    print(f"synclint sources {fingerprint}" + ("" if fingerprint_after == fingerprint else
          f" -> {fingerprint_after}: WARNING, synclint or its rules changed during the run"))
    print(f"synclint exit status {status}; wall time {elapsed:.1f} s; CPU time {cpu:.1f} s "
          f"(synclint and its worker processes; wall time depends on what else the machine runs)")
    print()
    print("findings (per kLOC) per rule and confidence; >=medium is what a default run reports")
    print(rule_table(real, lines, rules))
    print()
    print("findings per rule and context (all confidences)")
    print(context_table(real, lines))
    print()
    print(f"the {args.top} files with most findings")
    print(top_files(real, lines_of, args.top))
    print()
    print(f"parse errors (SYNC000) and internal errors (SYNC001): {len(problems)}")
    for f in problems:
        print(f"  {f['filename']}:{f['location']['row']}: {f['code']} {f['message']}")
    blocks = error_blocks(stderr)
    if blocks:
        print(f"synclint reported {len(blocks)} errors on stderr:")
        for block in blocks:
            print("  " + block.replace("\n", "\n  "))
    if args.json_out:
        print(f"raw findings: {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
