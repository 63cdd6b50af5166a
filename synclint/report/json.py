"""Ruff's JSON shape, plus synclint's own fields (name, confidence, context, because, evidence).

`url` links the rule's documentation: synclint is not published, so not a web page but the rule's
own module (a `file:` URI), where its documentation lives beside its code (`synclint rule CODE`
prints it); None for the findings about the run itself (SYNC000, SYNC001)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from synclint.model import Finding, Fix, Location


def _location(loc: Location) -> dict:
    return {"row": loc.row, "column": loc.column}


def fix_to_json(fix: Fix | None) -> dict | None:
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.message,
        "edits": [
            {"content": e.content, "location": _location(e.location), "end_location": _location(e.end_location)}
            for e in fix.edits
        ],
    }


def rule_url(rule) -> str | None:
    """The `file:` URI of the module that defines `rule` (its documentation), if it has a file."""
    module = sys.modules.get(rule.__module__)
    filename = getattr(module, "__file__", None)
    return Path(filename).resolve().as_uri() if filename else None


def rule_urls(rules) -> dict[str, str | None]:
    """Each rule's `url`, by code (`rules`: rule classes)."""
    return {rule.code: rule_url(rule) for rule in rules}


def finding_to_json(f: Finding, url: str | None = None) -> dict:
    return {
        "cell": None,
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "filename": f.filename,
        "location": _location(f.location),
        "end_location": _location(f.end_location),
        "fix": fix_to_json(f.fix),
        "url": url,
        "noqa_row": f.noqa_row,
        "confidence": str(f.confidence),
        "context": f.context,
        "because": f.because,
        "evidence": None if f.evidence is None else f.evidence.as_json(),
        **({} if f.runtime_syncs is None else {"runtime_syncs": f.runtime_syncs}),
        **({} if f.runtime_wait_s is None else {"runtime_wait_s": f.runtime_wait_s}),
    }


def write_json(findings: list[Finding], stream: TextIO, rules=()) -> None:
    urls = rule_urls(rules)
    if any(f.code not in urls for f in findings):
        from synclint.registry import all_rules

        urls = {**rule_urls(all_rules().values()), **urls}
    json.dump([finding_to_json(f, urls.get(f.code)) for f in findings], stream, indent=2)
    stream.write("\n")
