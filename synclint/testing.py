"""Running one rule on a snippet, for rule examples and tests (no files, no subprocess)."""

from __future__ import annotations

from pathlib import Path

from synclint.config import DEFAULT_LINE_LENGTH, build_settings
from synclint.engine import check_text
from synclint.model import Confidence, Finding
from synclint.rule import Rule


def check_snippet(rule: type[Rule], code: str, config: dict | None = None, filename: str = "example.py",
                  min_confidence: Confidence | None = None) -> list[Finding]:
    table = dict(config or {})
    table.setdefault("select", [rule.code])
    settings = build_settings(table, Path("."), None)
    if min_confidence is not None:
        from dataclasses import replace

        settings = replace(settings, min_confidence=min_confidence)
    return check_text(code, filename, settings, rules=[r for r in settings.enabled_rules() if r.code == rule.code])


def fix_snippet(rule: type[Rule], code: str, config: dict | None = None, filename: str = "example.py",
                unsafe: bool = True) -> str:
    """The snippet after applying this rule's fixes to a fixpoint."""
    from synclint.fixes import fix_text
    from synclint.source import decode

    table = dict(config or {})
    table.setdefault("select", [rule.code])
    table.setdefault("line-length", DEFAULT_LINE_LENGTH)  # not the length of a formatter configured around the run
    settings = build_settings(table, Path("."), None)
    return fix_text(decode(code.encode()), filename, settings, unsafe).text
