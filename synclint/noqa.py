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
    """The noqa comment of each row that has one, and of each row that cannot end in a comment (inside
    a string that goes on, before a backslash continuation): the comment where its line ends, as
    ruff reads it (`Noqa.row` is the row of the comment itself)."""
    if "noqa" not in text.lower():
        return {}
    found: dict[int, Noqa] = {}
    for row, comment in _comments(text):
        match = NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        found[row] = Noqa(row, None if codes is None else frozenset(c.upper() for c in CODE.findall(codes)))
    if found:
        for row, target in comment_rows(text).items():
            mark = found.get(target)
            if mark is not None and row not in found:
                found[row] = mark
    return found


def unknown_codes(text: str, known: set[str]) -> list[tuple[int, str]]:
    """(row, code) of each code a noqa comment names that looks like one of ours but is no rule.

    Codes of other linters (E501, F401) are left alone: only codes that share their letters with
    a known rule's code (SYNC999) are reported.
    """
    families = {code.rstrip("0123456789") for code in known}
    found = []
    for row, mark in sorted(parse_noqa(text).items()):
        if row != mark.row:
            continue  # a row inside a string or a continuation: its line's comment is reported there
        for code in sorted(mark.codes or ()):
            if code not in known and code.rstrip("0123456789") in families:
                found.append((row, code))
    return found


def comment_rows(text: str) -> dict[int, int]:
    """For each row that cannot end in a comment (its line ends inside a string that goes on, or with
    a backslash continuation), the row whose line ends the statement's text there: where its `# noqa`
    goes. Rows of text that does not tokenize map to 0 (nowhere: touch nothing)."""
    ends: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                for row in range(tok.start[0], tok.end[0]):
                    ends[row] = max(ends.get(row, 0), tok.end[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return dict.fromkeys(range(1, text.count("\n") + 2), 0)
    for row, line in enumerate(text.splitlines(), 1):
        if line.endswith("\\") and "#" not in line and row not in ends:
            ends[row] = row + 1
    targets: dict[int, int] = {}
    for row in ends:
        target, seen = ends[row], {row}
        while target in ends and target not in seen:  # a string that ends where a continuation starts
            seen.add(target)
            target = ends[target]
        targets[row] = target
    return targets


def add_noqa(text: str, wanted: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """Add `# noqa: CODE` for each row's codes, merging with a noqa the line has. A row whose line
    cannot end in a comment (inside a multi-line string, before a backslash) takes it where its
    statement's text ends there (`comment_rows`), as ruff puts it.

    Returns the new text, how many rows changed, and the rows that could not take a comment.
    """
    existing = parse_noqa(text)
    comments = dict(_comments(text)) if wanted else {}
    moved = comment_rows(text)
    lines = text.splitlines(keepends=True)
    by_line: dict[int, set[str]] = {}
    asked: dict[int, list[int]] = {}
    skipped: list[int] = []
    for row, codes in sorted(wanted.items()):
        mark = existing.get(row)
        if mark is not None and all(mark.silences(code) for code in codes):
            continue
        target = moved.get(row, row)
        if not 0 < target <= len(lines) or target in moved:
            skipped.append(row)
            continue
        by_line.setdefault(target, set()).update(codes)
        asked.setdefault(target, []).append(row)
    changed = 0
    for row, codes in sorted(by_line.items()):
        mark = existing.get(row)
        if mark is not None and mark.row != row:
            skipped.extend(asked[row])  # cannot happen: `moved` rows are left out above
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if mark is not None:
            if mark.codes is None or codes <= mark.codes:
                continue
            merged = ", ".join(sorted(set(mark.codes) | codes))
            comment = comments[row]
            start = body.rindex(comment)
            new_comment = NOQA.sub(f"# noqa: {merged}", comment, count=1)
            body = body[:start] + new_comment + body[start + len(comment):]
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[row - 1] = body + ending
        changed += len(asked[row])
    return "".join(lines), changed, sorted(skipped)
