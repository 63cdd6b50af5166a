"""Reports: the same findings as text (rich), concise lines, JSON, SARIF or GitHub annotations."""

from __future__ import annotations

from typing import TextIO

from synclint.model import Finding
from synclint.report.text import NOTHING_ELSE, Outcome


def render(fmt: str, findings: list[Finding], stream: TextIO, *, color: bool | None = None,
           fixable_hint: bool = True, rules=(), outcome: Outcome = NOTHING_ELSE) -> None:
    """Write the report; `outcome` feeds the summary line of the text formats (the machine
    formats hold the findings only)."""
    if fmt == "json":
        from synclint.report.json import write_json

        write_json(findings, stream, rules)
    elif fmt == "sarif":
        from synclint.report.sarif import write_sarif

        write_sarif(findings, stream, rules)
    elif fmt == "github":
        from synclint.report.github import write_github

        write_github(findings, stream)
    elif fmt == "concise":
        from synclint.report.text import write_concise

        write_concise(findings, stream, outcome)
    else:
        from synclint.report.text import write_text

        write_text(findings, stream, color=color, fixable_hint=fixable_hint, outcome=outcome)
