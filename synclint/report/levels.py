"""How severe each finding is in the machine formats (SARIF levels, GitHub annotation kinds)."""

from __future__ import annotations

from synclint.model import Confidence, Finding

# The codes of findings about the run itself (a file that does not parse, a rule that crashed).
ENGINE_CODES = ("SYNC000", "SYNC001")


def level(finding: Finding) -> str:
    """How severe a finding is in SARIF's words, by its confidence: `error` for a proven sync (and a
    file synclint could not check), `warning` for a likely one, `note` for one that may be."""
    if finding.code in ENGINE_CODES or finding.confidence is Confidence.HIGH:
        return "error"
    return "warning" if finding.confidence is Confidence.MEDIUM else "note"
