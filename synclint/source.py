"""Reading a Python file's bytes into text, as Python itself would (PEP 263, BOM)."""

from __future__ import annotations

import codecs
import io
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


def decode(data: bytes) -> SourceText:
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise DecodeProblem(f"invalid encoding declaration: {exc.msg}", getattr(exc, "lineno", None) or 1) from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        row = body.count(b"\n", 0, exc.start) + 1
        column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DecodeProblem(f"cannot decode byte 0x{body[exc.start]:02x} as {encoding}", row, column) from None
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
