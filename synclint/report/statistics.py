"""`--statistics`: one line per rule, most frequent first."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from synclint.model import Applicability, Finding


def write_statistics(findings: list[Finding], stream: TextIO) -> None:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE)
    for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        stream.write(f"{count:6d}\t{code}\t{mark} {name}\n")
