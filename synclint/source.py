"""Reading a Python file's bytes into text, as Python itself would (PEP 263, BOM)."""

from __future__ import annotations

import codecs
import io
import itertools
import re
import tokenize
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceText:
    text: str  # decoded, without the BOM
    encoding: str  # the codec the file declares (utf-8 by default)
    bom: bool
    newline: str  # the file's first line ending, used for text a fix adds

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return (codecs.BOM_UTF8 + data) if self.bom else data


class DecodeProblem(Exception):
    """The bytes are not text in the declared encoding; `row` is the 1-based line."""

    def __init__(self, message: str, row: int, column: int = 1) -> None:
        super().__init__(message)
        self.row = row
        self.column = column


def _undecodable(body: bytes, exc: UnicodeDecodeError, encoding: str) -> DecodeProblem:
    row = body.count(b"\n", 0, exc.start) + 1
    column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
    return DecodeProblem(f"cannot decode byte 0x{body[exc.start]:02x} as {encoding}", row, column)


def decode(data: bytes) -> SourceText:
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # detect_encoding also fails when the first two lines are not UTF-8 and declare nothing:
        # name the bad byte then, not a declaration the file does not have.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise _undecodable(data, bad, "utf-8") from None
        raise DecodeProblem(f"invalid encoding declaration: {exc.msg}", getattr(exc, "lineno", None) or 1) from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _undecodable(body, exc, encoding) from None
    except LookupError:
        raise DecodeProblem(f"unknown encoding {encoding!r} declared", 1) from None
    nul = text.find("\0")
    if nul != -1:
        row = text.count("\n", 0, nul) + 1
        raise DecodeProblem("source contains a null byte", row, nul - (text.rfind("\n", 0, nul) + 1) + 1)
    newline = "\n"
    first = text.find("\n")
    if first > 0 and text[first - 1] == "\r":
        newline = "\r\n"
    elif first == -1 and "\r" in text:
        newline = "\r"
    return SourceText(text=text, encoding=encoding, bom=bom, newline=newline)


# libcst's native parser overflows the C stack on brackets nested a few thousand deep and takes
# minutes on chains of a few thousand operators, where CPython stops with a clear error. A cheap
# scan finds such text; CPython's own parser then decides, so ordinary files never pay for it.
MAX_BRACKET_DEPTH = 200  # CPython's limit ("too many nested parentheses")
# Both patterns are anchored where a run or a line starts, so the scan stays linear: an
# unanchored `[^\n]{5000,}` retries from every character of every line.
_PREFIX_RUN = re.compile(r"(?<![-+~\s])[-+~][-+~\s]{99,}")  # one character class: no backtracking
_WORD_RUN = re.compile(r"(?:\b(?:not|await)\s+){100,}")
_LONG_LINE = re.compile(r"^[^\n]{5000,}", re.MULTILINE)
_OPERATOR = re.compile(r"[-+*/%&|^<>.@([]|\b(?:and|or|if|not)\b")
MAX_OPERATORS_PER_LINE = 1000


@dataclass(frozen=True)
class TooComplex:
    message: str
    row: int = 1
    column: int = 1


def _bracket_depth(text: str) -> int:
    if text.count("(") + text.count("[") + text.count("{") <= MAX_BRACKET_DEPTH:
        return 0
    steps = [1 if ch in "([{" else -1 for ch in re.findall(r"[()\[\]{}]", text)]
    return max(itertools.accumulate(steps), default=0)


def _prefix_run(text: str) -> bool:
    """A run of 100 or more prefix operators (`- - -x`, `not not x`), outside comments."""
    for match in _PREFIX_RUN.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if "#" in text[line_start : match.start()]:  # a `# ------` rule line is a comment
            continue
        if sum(match.group().count(op) for op in "-+~") >= 100:
            return True
    if ("not not" in text or "await await" in text) and _WORD_RUN.search(text):
        return True
    return False


def _operator_heavy_line(text: str) -> tuple[int, int] | None:
    for match in _LONG_LINE.finditer(text):
        count = len(_OPERATOR.findall(match.group()))
        if count > MAX_OPERATORS_PER_LINE:
            return text.count("\n", 0, match.start()) + 1, count
    return None


def too_complex(text: str) -> TooComplex | None:
    """Why this text cannot be analysed safely (nesting or chains beyond CPython's limits), or None."""
    heavy = _operator_heavy_line(text)
    if heavy is None and _bracket_depth(text) <= MAX_BRACKET_DEPTH and not _prefix_run(text):
        return None
    import ast

    try:
        ast.parse(text)
    except SyntaxError as exc:
        return TooComplex(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (RecursionError, MemoryError):
        return TooComplex("expression nested too deeply for Python to parse")
    except ValueError as exc:
        return TooComplex(f"cannot parse: {exc}")
    if heavy is not None:
        row, count = heavy
        return TooComplex(f"expression too long to analyse ({count} operators on one line)", row)
    return None
