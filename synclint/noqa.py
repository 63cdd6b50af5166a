"""`# noqa` comments, read the way ruff and flake8 read them, so one comment serves all, and
honoured wherever a formatter leaves them.

A `# noqa` on any line of a statement (its logical line: from its first token to the end of the
line that ends it, brackets, strings and backslash continuations included) covers every finding
that starts in it. black and `ruff format` move a trailing comment within its statement, never
out of it: black splits `x = f(a.item(), b)  # noqa: SYNC107`, when the comment makes the line
too long, into `x = f(\\n    a.item(), b\\n)  # noqa: SYNC107`, and `ruff format` joins it again
(it leaves pragma comments out of the line's width). Either way the comment stays on a line of
the statement: the line that opens its brackets, one inside them, or the one that closes them.

`--add-noqa` writes the comment at the end of the statement's last line (a one-line statement's
own line; a split one's closing line, where black puts it), merging with a `# noqa` the statement
has.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


@dataclass(frozen=True)
class Noqa:
    row: int  # the row of the comment itself (of the last one, where a statement has several)
    codes: frozenset[str] | None  # None: a bare `# noqa` silences everything in the statement

    def silences(self, code: str) -> bool:
        return self.codes is None or code in self.codes

    def merged(self, other: Noqa) -> Noqa:
        codes = None if self.codes is None or other.codes is None else self.codes | other.codes
        return Noqa(max(self.row, other.row), codes)


@dataclass(frozen=True)
class Statements:
    """A file's comments, and the rows of the statement each row belongs to."""

    comments: list[tuple[int, str]]  # (row, text) of every comment
    last_row: dict[int, int]  # row -> the last row of its statement (rows of no statement: absent)
    first_row: dict[int, int]  # row -> the first row of its statement
    tokenized: bool  # False: the text does not tokenize, and each row stands alone


def statements(text: str) -> Statements:
    """Every comment of `text`, and for each row of a statement its first and last rows."""
    comments: list[tuple[int, str]] = []
    first_row: dict[int, int] = {}
    last_row: dict[int, int] = {}
    start: int | None = None  # the first row of the statement being read
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = tok.type
            if kind == tokenize.COMMENT:
                comments.append((tok.start[0], tok.string))
                continue
            if kind in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if start is None:
                start = tok.start[0]
            if kind == tokenize.NEWLINE:
                for row in range(start, tok.start[0] + 1):
                    first_row[row], last_row[row] = start, tok.start[0]
                start = None
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a line scan; a `# noqa` inside a string may then count.
        found = [(i, line[line.index("#"):]) for i, line in enumerate(text.splitlines(), 1) if "#" in line]
        return Statements(found, {}, {}, False)
    return Statements(comments, last_row, first_row, True)


def _mark(row: int, comment: str) -> Noqa | None:
    match = NOQA.search(comment)
    if match is None:
        return None
    codes = match.group("codes")
    return Noqa(row, None if codes is None else frozenset(c.upper() for c in CODE.findall(codes)))


def parse_noqa(text: str) -> dict[int, Noqa]:
    """For each row that a `# noqa` covers, what it silences: every row of a statement with a
    `# noqa` comment on any of its lines (several in one statement add up), and a comment's own
    row. `Noqa.row` is where the comment is."""
    if "noqa" not in text.lower():
        return {}
    found: dict[int, Noqa] = {}
    parsed = statements(text)
    for row, comment in parsed.comments:
        mark = _mark(row, comment)
        if mark is None:
            continue
        first, last = parsed.first_row.get(row, row), parsed.last_row.get(row, row)
        for covered in range(first, last + 1):
            found[covered] = found[covered].merged(mark) if covered in found else mark
    return found


def unknown_codes(text: str, known: set[str]) -> list[tuple[int, str]]:
    """(row, code) of each code a noqa comment names that looks like one of ours but is no rule.

    Codes of other linters (E501, F401) are left alone: only codes that share their letters with
    a known rule's code (SYNC999) are reported.
    """
    if "noqa" not in text.lower():
        return []
    families = {code.rstrip("0123456789") for code in known}
    found = []
    for row, comment in statements(text).comments:
        mark = _mark(row, comment)
        for code in sorted(mark.codes or ()) if mark is not None else ():
            if code not in known and code.rstrip("0123456789") in families:
                found.append((row, code))
    return sorted(found)


def add_noqa(text: str, wanted: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """Add `# noqa: CODE` for each row's codes: at the end of its statement's last line, or into the
    `# noqa` the statement has (module docstring).

    Returns the new text, how many rows changed, and the rows that could not take a comment.
    """
    existing = parse_noqa(text)
    parsed = statements(text) if wanted else Statements([], {}, {}, True)
    comments = dict(parsed.comments)
    lines = text.splitlines(keepends=True)
    by_line: dict[int, set[str]] = {}
    asked: dict[int, list[int]] = {}
    skipped: list[int] = []
    for row, codes in sorted(wanted.items()):
        mark = existing.get(row)
        if mark is not None and all(mark.silences(code) for code in codes):
            continue
        if not parsed.tokenized:
            target = 0  # text that does not tokenize: where its statements end is unknown, touch nothing
        elif mark is not None:
            target = mark.row
        else:
            target = parsed.last_row.get(row, row)
        if not 0 < target <= len(lines):
            skipped.append(row)
            continue
        by_line.setdefault(target, set()).update(codes)
        asked.setdefault(target, []).append(row)
    changed = 0
    for row, codes in sorted(by_line.items()):
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        comment = comments.get(row)
        own = _mark(row, comment) if comment is not None else None
        if own is not None:
            if own.codes is None or codes <= own.codes:
                continue
            merged = ", ".join(sorted(own.codes | codes))
            assert comment is not None
            start = body.rindex(comment)
            new_comment = NOQA.sub(f"# noqa: {merged}", comment, count=1)
            body = body[:start] + new_comment + body[start + len(comment):]
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[row - 1] = body + ending
        changed += len(asked[row])
    return "".join(lines), changed, sorted(skipped)
