"""GitHub Actions workflow commands: one annotation per finding, its level as SARIF's
(`Finding.level`: by confidence and by how often its line runs; `::error` only for a proven sync
paid every step, `::notice` for set-up code), its message with the `because` on a second line."""

from __future__ import annotations

from typing import TextIO

from synclint.model import Finding


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(findings: list[Finding], stream: TextIO) -> None:
    for f in findings:
        severity = {"note": "notice"}.get(f.level(), f.level())
        props = ",".join(
            [
                f"file={_escape_property(f.filename)}",
                f"line={f.location.row}",
                f"col={f.location.column}",
                f"endLine={f.end_location.row}",
                f"endColumn={f.end_location.column}",
                f"title={_escape_property(f'{f.code} ({f.name})')}",
            ]
        )
        stream.write(f"::{severity} {props}::{_escape_data(f'{f.code} {f.explained()}')}\n")
