#!/usr/bin/env python3
"""A naive regex "sync linter": the floor synclint has to beat.

What it measures: how far plain line-by-line pattern matching gets on the same code, with no
parse, no types and no idea where a value lives. Each pattern below is matched against every
line that is not a comment; every match is one finding. A `.to(` or `.cuda(` counts only when
the same line does not say `non_blocking` (the call may continue on the next line: a regex does
not know).

Two modes:

    # ruff-style JSON on stdout, so score_sites.py can score it like any linter
    python bench/regex_baseline.py FILE_OR_DIR...
    python ../shared/eval/score_sites.py --corpus ../shared/eval/vllm_syncfix.jsonl \\
        --wheels /work/vllm-src --lint 'python bench/regex_baseline.py {files}'

    # findings per 1,000 lines over a tree, per pattern
    python bench/regex_baseline.py --density /work/vllm-src/vllm/0.33.0/vllm

Stdlib only. Exit status 0 (like `--exit-zero`), 2 when a path cannot be read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchlib import count_lines, iter_py_files, per_kloc, table


@dataclass(frozen=True)
class Pattern:
    code: str
    name: str
    regex: re.Pattern[str]
    unless: re.Pattern[str] | None = None  # the line is skipped when this also matches


def _p(code: str, name: str, regex: str, unless: str | None = None) -> Pattern:
    return Pattern(code, name, re.compile(regex), re.compile(unless) if unless else None)


# What a reviewer would grep for after reading about GPU syncs; nothing more clever.
PATTERNS: tuple[Pattern, ...] = (
    _p("RX01", ".item()", r"\.item\(\)"),
    _p("RX02", ".tolist()", r"\.tolist\(\)"),
    _p("RX03", ".cpu()", r"\.cpu\(\)"),
    _p("RX04", ".numpy()", r"\.numpy\(\)"),
    _p("RX05", ".to( blocking", r"\.to\(", unless=r"non_blocking"),
    _p("RX06", ".cuda( blocking", r"\.cuda\(", unless=r"non_blocking"),
    _p("RX07", "nonzero", r"\bnonzero\("),
    _p("RX08", "synchronize()", r"\bsynchronize\(\)"),
    _p("RX09", "torch.tensor(", r"\btorch\.tensor\("),
    _p("RX10", ".index(-1)", r"\.index\(-1\)"),
    _p("RX11", "if/while .any()/.all()", r"^\s*(?:if|elif|while)\b.*\.(?:any|all)\(\)"),
    _p("RX12", "unique", r"\bunique(?:_consecutive)?\("),
    _p("RX13", "masked_select", r"\bmasked_select\("),
    _p("RX14", "repeat_interleave", r"\brepeat_interleave\(", unless=r"output_size"),
)

COMMENT = re.compile(r"^\s*#")


def scan_text(text: str) -> list[tuple[int, int, Pattern, str]]:
    """(row, column, pattern, matched text) for every match, 1-based like ruff."""
    hits = []
    for row, line in enumerate(text.splitlines(), 1):
        if COMMENT.match(line):
            continue
        for pat in PATTERNS:
            if pat.unless is not None and pat.unless.search(line):
                continue
            for m in pat.regex.finditer(line):
                hits.append((row, m.start() + 1, pat, m.group(0)))
    return hits


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def as_ruff_json(filename: str, row: int, column: int, pat: Pattern, matched: str) -> dict:
    return {
        "cell": None,
        "code": pat.code,
        "name": pat.name,
        "message": f"regex `{pat.regex.pattern}` matched `{matched.strip()}`",
        "filename": filename,
        "location": {"row": row, "column": column},
        "end_location": {"row": row, "column": column + len(matched)},
        "fix": None,
        "url": None,
        "noqa_row": row,
    }


def lint(paths: list[str]) -> int:
    findings: list[dict] = []
    status = 0
    for arg in paths:
        for path in iter_py_files(Path(arg)):
            try:
                text = read_text(path)
            except OSError as exc:
                print(f"regex_baseline: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
                status = 2
                continue
            findings.extend(as_ruff_json(str(path), *hit) for hit in scan_text(text))
    json.dump(findings, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return status


def density(paths: list[str]) -> int:
    start = time.perf_counter()
    per_pattern: Counter[str] = Counter()
    files = lines = 0
    for arg in paths:
        for path in iter_py_files(Path(arg)):
            files += 1
            lines += count_lines(path)
            per_pattern.update(hit[2].code for hit in scan_text(read_text(path)))
    elapsed = time.perf_counter() - start
    total = sum(per_pattern.values())
    rows = [
        (p.code, p.name, per_pattern[p.code], f"{per_kloc(per_pattern[p.code], lines):.2f}")
        for p in PATTERNS
    ]
    rows.append(("TOTAL", "", total, f"{per_kloc(total, lines):.2f}"))
    print(f"regex baseline over {', '.join(paths)}: {files} .py files, {lines} lines")
    print(table(("code", "pattern", "findings", "per kLOC"), rows, left=2))
    print(f"wall time: {elapsed:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help=".py files or folders (folders are walked for .py files)")
    parser.add_argument("--density", action="store_true", help="print findings per 1,000 lines instead of JSON")
    parser.add_argument("--list-patterns", action="store_true", help="print the patterns and exit")
    args = parser.parse_args(argv)
    if args.list_patterns:
        for p in PATTERNS:
            unless = f"   (unless /{p.unless.pattern}/)" if p.unless else ""
            print(f"{p.code}  {p.name:24s} /{p.regex.pattern}/{unless}")
        return 0
    if not args.paths:
        parser.error("give at least one file or folder")
    return density(args.paths) if args.density else lint(args.paths)


if __name__ == "__main__":
    sys.exit(main())
