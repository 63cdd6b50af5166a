"""`# noqa` comments, read the way ruff and flake8 read them, so one comment serves all."""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


@dataclass(frozen=True)
class Noqa:
    row: int
    codes: frozenset[str] | None  # None: a bare `# noqa` silences everything on the line

    def silences(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def _comments(text: str) -> list[tuple[int, str]]:
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a line scan; a `# noqa` inside a string may then count.
        return [(i, line[line.index("#") :]) for i, line in enumerate(text.splitlines(), 1) if "#" in line]


def parse_noqa(text: str) -> dict[int, Noqa]:
    """The noqa comment of each row that has one."""
    if "noqa" not in text.lower():
        return {}
    found: dict[int, Noqa] = {}
    for row, comment in _comments(text):
        match = NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        found[row] = Noqa(row, None if codes is None else frozenset(c.upper() for c in CODE.findall(codes)))
    return found
