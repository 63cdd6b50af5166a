"""`--statistics`: one line per rule, most frequent first, then the total."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from synclint.model import Applicability, Finding


def write_statistics(findings: list[Finding], stream: TextIO, hidden_tests: int = 0) -> None:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        stream.write(f"{count:6d}\t{code}\t{mark} {name}\n")
    fixable_total = sum(fixable.values())
    notes = []
    if fixable_total:
        notes.append(f"{fixable_total} fixable with `--fix`")
    if hidden_tests:
        notes.append(f"{hidden_tests} more in test code left out (`--include-tests` shows them)")
    total = f"{len(findings):6d}\ttotal"
    if notes:
        total += f"\t{'[*]' if fixable_total else '   '} " + "; ".join(notes)
    stream.write(total + "\n")
