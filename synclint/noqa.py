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


def unknown_codes(text: str, known: set[str]) -> list[tuple[int, str]]:
    """(row, code) of each code a noqa comment names that looks like one of ours but is no rule.

    Codes of other linters (E501, F401) are left alone: only codes that share their letters with
    a known rule's code (SYNC999) are reported.
    """
    families = {code.rstrip("0123456789") for code in known}
    found = []
    for row, mark in sorted(parse_noqa(text).items()):
        for code in sorted(mark.codes or ()):
            if code not in known and code.rstrip("0123456789") in families:
                found.append((row, code))
    return found


def _rows_that_cannot_end_in_a_comment(text: str) -> set[int]:
    """Rows whose line ends inside a string that goes on, or with a backslash continuation."""
    blocked: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                blocked.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, text.count("\n") + 2))  # cannot tell: touch nothing
    for row, line in enumerate(text.splitlines(), 1):
        if line.endswith("\\") and "#" not in line:
            blocked.add(row)
    return blocked


def add_noqa(text: str, wanted: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """Add `# noqa: CODE` for each row's codes, merging with a noqa the line has.

    Returns the new text, how many rows changed, and the rows that could not take a comment.
    """
    existing = parse_noqa(text)
    comments = dict(_comments(text)) if wanted else {}
    blocked = _rows_that_cannot_end_in_a_comment(text)
    lines = text.splitlines(keepends=True)
    changed, skipped = 0, []
    for row, codes in sorted(wanted.items()):
        mark = existing.get(row)
        if mark is not None and all(mark.silences(code) for code in codes):
            continue
        if row in blocked or row > len(lines):
            skipped.append(row)
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if mark is not None:
            merged = ", ".join(sorted(set(mark.codes or ()) | codes))
            comment = comments[row]
            start = body.rindex(comment)
            new_comment = NOQA.sub(f"# noqa: {merged}", comment, count=1)
            body = body[:start] + new_comment + body[start + len(comment):]
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[row - 1] = body + ending
        changed += 1
    return "".join(lines), changed, skipped
