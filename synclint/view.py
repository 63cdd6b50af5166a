"""What a run shows of a file's analysis: the choices that need no analysis again.

The engine reports every rule's findings, selected or not, at every confidence and in every
context (`synclint.engine.analyse`), and the cache keeps them so. The view then applies what
the user chose to see: `select`, `extend-select` and `ignore`, `min-confidence`,
`per-file-ignores`, `ignore-contexts`, and whether test code is included. A run that changes
only these filters the cached analysis again instead of checking any file again.

Parse errors and internal errors (SYNC000, SYNC001) are shown whatever the view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synclint.config import Settings
from synclint.model import Finding

PROBLEM_CODES = frozenset({"SYNC000", "SYNC001"})
TEST_CONTEXT = "test"


@dataclass
class View:
    """What one settings object shows; `is_enabled` asked once per code."""

    settings: Settings
    _enabled: dict[str, bool] = field(default_factory=dict)

    def enabled(self, code: str) -> bool:
        known = self._enabled.get(code)
        if known is None:
            known = self._enabled[code] = self.settings.is_enabled(code)
        return known

    def shown(self, findings: list[Finding], relpath: str) -> tuple[list[Finding], int, int]:
        """The findings this view shows of a file's, sorted, one per code and place (the first
        reported there, as the engine once kept); how many findings only the quiet test code
        hides (`include-tests` off), and how many only `ignore-contexts` hides, each counted once
        per code and place as well."""
        settings = self.settings
        ignored_here = tuple(settings.ignored_in_file(relpath)) if settings.per_file_ignores else ()
        shown: dict[tuple, Finding] = {}
        hidden: set[tuple] = set()
        dropped: set[tuple] = set()  # by `ignore-contexts` alone
        for finding in findings:
            key = (finding.code, finding.location.row, finding.location.column, finding.end_location)
            if finding.code in PROBLEM_CODES:
                shown.setdefault(key, finding)
                continue
            if (not self.enabled(finding.code) or finding.confidence < settings.min_confidence
                    or any(finding.code.startswith(prefix) for prefix in ignored_here)):
                continue
            if finding.context in settings.ignore_contexts:
                if finding.context != TEST_CONTEXT or settings.include_tests:
                    dropped.add(key)
                continue
            if finding.context == TEST_CONTEXT and not settings.include_tests:
                hidden.add(key)
                continue
            shown.setdefault(key, finding)
        return (sorted(shown.values(), key=lambda f: f.sort_key), len(hidden - shown.keys()),
                len(dropped - shown.keys() - hidden))


def visible(findings: list[Finding], relpath: str, settings: Settings) -> tuple[list[Finding], int, int]:
    """`View(settings).shown(findings, relpath)`."""
    return View(settings).shown(findings, relpath)
