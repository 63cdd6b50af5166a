"""`--statistics`: one line per rule, most frequent first, then the total; each line ends with
its count split by context, hottest first (`loop 3, step 1, code 2`). With `--output-format json`,
the same as JSON, in ruff's shape (a list of `code`, `name`, `count`, `fixable`) with the count of
safe fixes and the split by context."""

from __future__ import annotations

from collections import Counter
import json
from typing import TextIO

from synclint.model import Applicability, Finding
from synclint.report.text import HOTNESS


def _context_counts(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.context for f in findings)
    names = list(HOTNESS)  # loop, step, interval, code, init, test
    order = sorted(counts, key=lambda c: (names.index(c) if c in names else len(names), c))
    return {context: counts[context] for context in order}


def _contexts(findings: list[Finding]) -> str:
    return ", ".join(f"{context} {n}" for context, n in _context_counts(findings).items())


def write_statistics(findings: list[Finding], stream: TextIO, hidden_tests: int = 0, hidden_contexts: int = 0,
                     fmt: str = "text") -> None:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    if fmt == "json":
        rows = [{"code": code, "name": name, "count": count, "fixable": bool(fixable[code]),
                 "fixable_count": fixable[code],
                 "contexts": _context_counts([f for f in findings if f.code == code])}
                for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        json.dump(rows, stream, indent=2)
        stream.write("\n")
        return
    for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        stream.write(f"{count:6d}\t{code}\t{mark} {name}\t{_contexts([f for f in findings if f.code == code])}\n")
    fixable_total = sum(fixable.values())
    notes = []
    if fixable_total:
        notes.append(f"{fixable_total} fixable with `--fix`")
    if hidden_tests:
        notes.append(f"{hidden_tests} more in test code left out (`--include-tests` shows them)")
    if hidden_contexts:
        notes.append(f"{hidden_contexts} more left out by `ignore-contexts`")
    total = f"{len(findings):6d}\ttotal"
    if notes:
        total += f"\t{'[*]' if fixable_total else '   '} " + "; ".join(notes)
    if findings:
        total += ("" if notes else "\t") + f"\t{_contexts(findings)}"
    stream.write(total + "\n")
