"""Ruff's JSON shape, plus synclint's own fields (name, confidence, context, because, evidence)."""

from __future__ import annotations

import json
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


def finding_to_json(f: Finding) -> dict:
    return {
        "cell": None,
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "filename": f.filename,
        "location": _location(f.location),
        "end_location": _location(f.end_location),
        "fix": fix_to_json(f.fix),
        "url": None,
        "noqa_row": f.noqa_row,
        "confidence": str(f.confidence),
        "context": f.context,
        "because": f.because,
        "evidence": None if f.evidence is None else f.evidence.as_json(),
        **({} if f.runtime_syncs is None else {"runtime_syncs": f.runtime_syncs}),
        **({} if f.runtime_wait_s is None else {"runtime_wait_s": f.runtime_wait_s}),
    }


def write_json(findings: list[Finding], stream: TextIO) -> None:
    json.dump([finding_to_json(f) for f in findings], stream, indent=2)
    stream.write("\n")
