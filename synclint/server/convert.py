"""synclint's findings and fixes as LSP values: positions, diagnostics, text edits, hover text.

Positions: synclint counts rows from 1 and columns from 1 in characters (code points), on lines
broken at `\\r\\n`, `\\r` or `\\n` (libcst's and LSP's line breaks); LSP counts both from 0, and
characters in the code units the client and server agreed on (UTF-16 unless the client offers
another), which pygls's position codec counts. pygls's own line splitting (`str.splitlines`) also
breaks at form feeds and other separators Python source may hold, so lines are split here.
"""

from __future__ import annotations

import bisect
import difflib
import inspect
import re
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from synclint.model import Applicability, Confidence, Edit, Finding, Fix, Location
from synclint.rule import Rule

SOURCE = "synclint"
FIX_ALL_KIND = "source.fixAll.synclint"
PROBLEM_CODES = ("SYNC000", "SYNC001")  # a file that cannot be parsed, a rule that crashed

# How sure a finding is decides how loudly the editor shows it; a file synclint cannot read is an error.
SEVERITY = {
    Confidence.HIGH: types.DiagnosticSeverity.Warning,
    Confidence.MEDIUM: types.DiagnosticSeverity.Information,
    Confidence.LOW: types.DiagnosticSeverity.Hint,
}

_NEWLINE = re.compile(r"\r\n|\r|\n")


class Lines:
    """A text's lines, to turn synclint's locations and offsets into LSP positions and back."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text = text
        self.codec = codec
        self.starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]

    def _line(self, index: int) -> str:
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[index]:end].rstrip("\r\n")

    def position(self, location: Location) -> types.Position:
        """The LSP position of a synclint location (clamped to the text)."""
        index = location.row - 1
        if index >= len(self.starts):
            return self.offset_position(len(self.text))
        line = self._line(max(index, 0))
        return types.Position(max(index, 0), self.codec.client_num_units(line[: max(location.column - 1, 0)]))

    def range(self, start: Location, end: Location) -> types.Range:
        return types.Range(self.position(start), self.position(end))

    def offset_position(self, offset: int) -> types.Position:
        index = bisect.bisect_right(self.starts, offset) - 1
        return types.Position(index, self.codec.client_num_units(self.text[self.starts[index]:offset]))

    def location(self, position: types.Position) -> Location:
        """The synclint location of an LSP position."""
        if position.line >= len(self.starts):
            return Location(len(self.starts), 1)
        line = self._line(position.line)
        units = 0
        column = 0
        while column < len(line) and units < position.character:
            units += self.codec.client_num_units(line[column])
            column += 1
        return Location(position.line + 1, column + 1)


def contains(start: Location, end: Location, point: Location) -> bool:
    """Whether `point` lies in the range from `start` to `end` (both ends included: a cursor
    just after the flagged text still hovers it)."""
    here = (point.row, point.column)
    return (start.row, start.column) <= here <= (end.row, end.column)


# ---- diagnostics -------------------------------------------------------------------------


def rule_docs_href(rule: type[Rule]) -> str | None:
    """Where a rule's documentation is: its own source file, which holds it (`docs`) beside the
    code and examples, as a `file:` URI with the line of the class (`#L31`). Every install has
    the file, user rules (`extend-rules`) included; `synclint rule CODE` prints the same text."""
    try:
        path = inspect.getsourcefile(rule)
        line = inspect.getsourcelines(rule)[1]
    except (OSError, TypeError):
        return None
    return f"{Path(path).resolve().as_uri()}#L{line}" if path else None


def message(finding: Finding) -> str:
    """The finding's message and why synclint believes it (`because`), as the text report shows them."""
    return finding.explained()


def diagnostic(finding: Finding, lines: Lines, version: int | None, rules: dict[str, type[Rule]]) -> types.Diagnostic:
    problem = finding.code in PROBLEM_CODES
    rule = rules.get(finding.code)
    href = rule_docs_href(rule) if rule is not None else None
    return types.Diagnostic(
        range=lines.range(finding.location, finding.end_location),
        message=message(finding),
        severity=types.DiagnosticSeverity.Error if problem else SEVERITY[finding.confidence],
        code=finding.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        data=None if problem else {"version": version, "row": finding.noqa_row, "fix": fix_to_data(finding.fix)},
    )


def fix_to_data(fix: Fix | None) -> dict[str, Any] | None:
    """A fix as JSON, in a diagnostic's `data`: the client hands it back with a code action request."""
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [[e.location.row, e.location.column, e.end_location.row, e.end_location.column, e.content]
                  for e in fix.edits],
        "imports": list(fix.imports),
    }


def fix_from_data(data: Any) -> Fix | None:
    """The fix `fix_to_data` wrote (None: none, or not in that shape: a client may mangle `data`)."""
    try:
        edits = tuple(Edit(str(content), Location(int(row), int(col)), Location(int(end_row), int(end_col)))
                      for row, col, end_row, end_col, content in data["edits"])
        return Fix(Applicability(data["applicability"]), str(data["message"]), edits,
                   tuple(str(item) for item in data.get("imports", ())))
    except (KeyError, TypeError, ValueError):
        return None


# ---- edits ---------------------------------------------------------------------------------


def text_edits(old: str, new: str, lines: Lines) -> list[types.TextEdit]:
    """The edits that turn `old` (the text `lines` indexes) into `new`: the changed runs of lines,
    each trimmed to the characters that differ."""
    old_lines = _split_keeping_ends(old)
    new_lines = _split_keeping_ends(new)
    old_starts = [0]
    for line in old_lines:
        old_starts.append(old_starts[-1] + len(line))
    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start, end = old_starts[i1], old_starts[i2]
        replaced, replacement = old[start:end], "".join(new_lines[j1:j2])
        prefix = _common_prefix(replaced, replacement)
        suffix = _common_prefix(replaced[prefix:][::-1], replacement[prefix:][::-1])
        edits.append(types.TextEdit(
            types.Range(lines.offset_position(start + prefix), lines.offset_position(end - suffix)),
            replacement[prefix:len(replacement) - suffix],
        ))
    return edits


def _split_keeping_ends(text: str) -> list[str]:
    parts, start = [], 0
    for match in _NEWLINE.finditer(text):
        parts.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        parts.append(text[start:])
    return parts


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


# ---- hover ---------------------------------------------------------------------------------


def hover_markdown(rules: list[type[Rule]], measured: str | None = None) -> str:
    """The documentation of each rule, as `synclint rule CODE` prints it; first, when the
    workspace's `runtime-report` saw syncs on the line, what it measured there."""
    docs = "\n---\n\n".join(rule.markdown() for rule in rules)
    return docs if measured is None else f"**Measured** (`runtime-report`): {measured}\n\n---\n\n{docs}"
