"""A fix's edit at the project's line length.

A fix replaces a node's text. Where that makes a line longer than the line length, the edit is
widened to the whole statement and the statement is written as a formatter writes it: joined
into one logical line and broken again (synclint.linebreak), as black and ruff format do with
any statement. A statement with a comment inside it, or a multi-line string, keeps its lines,
and only the lines the fix made too long are broken.
"""

from __future__ import annotations

import io
import tokenize

from synclint.linebreak import CLOSING, FSTRING_END, FSTRING_START, OPENING, break_line

class FileLines:
    """A file's lines, and the bracket depth at the start of each (counted when first asked)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self._depths: list[int | None] | None = None

    def depth_at(self, row: int) -> int | None:
        """The number of brackets open where line `row` (1-based) starts; None inside a string
        or after a backslash."""
        if self._depths is None:
            self._depths = _row_depths(self.text, len(self.lines))
        if not 0 < row < len(self._depths):
            return None
        if row > 1 and self.lines[row - 2].rstrip().endswith("\\"):
            return None
        return self._depths[row]


def _row_depths(text: str, count: int) -> list[int | None]:
    depths: list[int | None] = [None] * (count + 2)
    depth = 0
    filled = 0
    previous = (0, 0)  # the rows the previous token started and ended on
    fstrings = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            fstrings += (token.type == FSTRING_START) - (token.type == FSTRING_END)
            if fstrings:
                continue  # the parts of an f-string (Python 3.12 on): its braces open no bracket
            row = token.start[0]
            for r in range(filled + 1, min(row, count + 1) + 1):
                depths[r] = None if previous[0] < r <= previous[1] else depth
            filled = max(filled, row)
            if token.type == tokenize.OP and token.string in OPENING:
                depth += 1
            elif token.type == tokenize.OP and token.string in CLOSING:
                depth = max(depth - 1, 0)
            previous = (token.start[0], token.end[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return depths


def _bracket_change(text: str) -> int | None:
    change = 0
    fstrings = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            fstrings += (token.type == FSTRING_START) - (token.type == FSTRING_END)
            if fstrings:
                continue
            if token.type == tokenize.OP and token.string in OPENING:
                change += 1
            elif token.type == tokenize.OP and token.string in CLOSING:
                change -= 1
            elif token.type == tokenize.STRING and token.start[0] != token.end[0]:
                return None
    except tokenize.TokenError:
        pass  # brackets left open
    except SyntaxError:
        return None
    return change


def fit_edit(file: FileLines, start: tuple[int, int], end: tuple[int, int], content: str, limit: int,
             indent_unit: str) -> tuple[tuple[int, int], tuple[int, int], str] | None:
    """An edit replacing the text from `start` to `end` ((row, 0-based column) each) with
    `content`, widened to whole lines and broken as a formatter breaks them, where it makes a
    line longer than `limit` characters; None where it makes none (or a line it touches was
    longer already: the project does not keep to that length there)."""
    lines = file.lines
    if not (0 < start[0] <= end[0] <= len(lines)):
        return None
    first, last = lines[start[0] - 1], lines[end[0] - 1]
    if any(len(lines[row - 1]) > limit for row in range(start[0], end[0] + 1)):
        return None
    written = (first[: start[1]] + content + last[end[1]:]).split("\n")
    if all(len(line) <= limit for line in written):
        return _laid_out_again(file, start, end, written, limit, indent_unit)
    depth = file.depth_at(start[0])
    if depth is None or any(line.rstrip().endswith("\\") for line in written):
        return None
    rows = _statement_rows(file, start[0], end[0])
    if rows is not None:
        first_row, last_row = rows
        text = "\n".join([*lines[first_row - 1:start[0] - 1], *written, *lines[end[0]:last_row]])
        joined = _joined(text)
        if joined is not None:
            broken_statement = break_line(joined, limit, indent_unit)
            return (first_row, 0), (last_row, len(lines[last_row - 1])), "\n".join(broken_statement)
    broken: list[str] = []
    for line in written:
        change = _bracket_change(line)
        if change is None:
            return None
        if len(line) > limit:
            opens_with_closer = line.lstrip()[:1] in CLOSING
            broken.extend(break_line(line, limit, indent_unit, inside_brackets=depth > 0 and not opens_with_closer,
                                     statement=depth == 0 and change == 0))
        else:
            broken.append(line)
        depth += change
    return (start[0], 0), (end[0], len(last)), "\n".join(broken)


def _laid_out_again(file: FileLines, start: tuple[int, int], end: tuple[int, int], written: list[str], limit: int,
                    indent_unit: str) -> tuple[tuple[int, int], tuple[int, int], str] | None:
    """Where a fix makes no line too long but edits a statement that a formatter split over several
    lines: the statement as the formatter lays it out after the fix (it joins the statement and
    splits it again, so an edit that shortens or lengthens its parts moves its split: black and
    `ruff format` write `torch.tensor(\n    ids, device=d\n)` fixed as `torch.tensor(ids).to(\n    d,
    non_blocking=True\n)`, not `torch.tensor(\n    ids\n).to(d, non_blocking=True)`). Only where the
    statement is laid out now as the formatter lays it out (else the project does not use one there,
    and the edit stays as it is); None where nothing changes."""
    if file.depth_at(start[0]) is None:
        return None
    rows = _statement_rows(file, start[0], end[0])
    if rows is None:
        return None
    first_row, last_row = rows
    if first_row == last_row and len(written) == 1:
        return None  # a line that stays a line: nothing to lay out again
    lines = file.lines
    before = lines[first_row - 1:last_row]
    joined_before = _joined("\n".join(before))
    if joined_before is None or break_line(joined_before, limit, indent_unit) != before:
        return None
    after = [*lines[first_row - 1:start[0] - 1], *written, *lines[end[0]:last_row]]
    joined = _joined("\n".join(after))
    if joined is None:
        return None
    relaid = break_line(joined, limit, indent_unit)
    if relaid == after:
        return None
    return (first_row, 0), (last_row, len(lines[last_row - 1])), "\n".join(relaid)


def _statement_rows(file: FileLines, start: int, end: int) -> tuple[int, int] | None:
    """The first and last rows of the statement holding rows `start` to `end`; None where a
    backslash or a string spans its lines, or it is a definition (black splits those from the left)."""
    first = start
    while (depth := file.depth_at(first)) is not None and depth > 0 and first > 1:
        first -= 1
    if file.depth_at(first) != 0:
        return None
    last = end
    while last < len(file.lines):
        following = file.depth_at(last + 1)
        if following is None:
            return None
        if following == 0:
            break
        last += 1
    head = file.lines[first - 1].lstrip()
    if head.startswith(("def ", "async def ", "class ", "@")):
        return None
    return first, last


def _joined(text: str) -> str | None:
    """A statement written over several lines as one logical line, as black joins it before
    splitting it again; None when a comment or a multi-line string is inside it."""
    source = text.split("\n")
    indent = source[0][: len(source[0]) - len(source[0].lstrip())]
    source[0] = source[0][len(indent):]  # tokenized as a statement of its own
    parts: list[str] = []
    comment = ""
    previous: tokenize.TokenInfo | None = None
    fstrings = 0
    fstring_start = (0, 0)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(source) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    ends = [token for token in tokens if token.type in (tokenize.NEWLINE, tokenize.INDENT) or token.string == ";"]
    if len(ends) != 1 or ends[0].type != tokenize.NEWLINE:
        return None  # more than one statement: the fix wrote several (their lines stay as written)
    for token in tokens:
        kind = token.type
        if kind in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if comment:
            return None  # a comment before the end of the statement
        if kind == FSTRING_START:
            fstrings += 1
            if fstrings == 1:
                fstring_start = token.start
            continue
        if fstrings:
            if kind != FSTRING_END:
                continue
            fstrings -= 1
            if fstrings:
                continue
            if fstring_start[0] != token.end[0]:
                return None
            token = token._replace(string=source[token.end[0] - 1][fstring_start[1]:token.end[1]], start=fstring_start)
        if token.start[0] != token.end[0]:
            return None  # a string over several lines
        if kind == tokenize.COMMENT:
            comment = token.string
            continue
        if previous is None:
            prefix = ""
        elif previous.end[0] == token.start[0]:
            prefix = source[token.start[0] - 1][previous.end[1]:token.start[1]]
        elif previous.string in OPENING or token.string in CLOSING or token.string in (".", ","):
            prefix = ""
        else:
            prefix = " "
        parts.append(prefix + token.string)
        previous = token
    return indent + "".join(parts) + ("  " + comment if comment else "")
