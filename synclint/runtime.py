"""`synclint check --runtime-report FILE`: static findings beside the syncs a test run saw.

The report is what `pytest --sync-check=warn --sync-report FILE` writes: sync sites with their
file (relative to the pytest root the report names), line, operation and count. A finding on a
line where the run saw a sync is marked confirmed; sites that no finding covers are the misses
worth a new rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from synclint.model import Finding


class RuntimeReportError(Exception):
    pass


@dataclass(frozen=True)
class RuntimeSite:
    path: Path  # resolved
    line: int
    op: str
    count: int

    def shown(self, cwd: Path) -> str:
        try:
            return f"{self.path.relative_to(cwd)}:{self.line}"
        except ValueError:
            return f"{self.path}:{self.line}"


def load_sites(report: Path) -> list[RuntimeSite]:
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        root = Path(data.get("root") or report.parent)
        sites = []
        for site in data["sites"]:
            if not site.get("file") or not site.get("line"):
                continue  # a sync outside the user's code
            path = Path(site["file"])
            sites.append(RuntimeSite((path if path.is_absolute() else root / path).resolve(), int(site["line"]),
                                     str(site.get("op", "")), int(site.get("count", 1))))
        return sites
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RuntimeReportError(f"{report}: not a sync report written by `pytest --sync-report` ({exc})") from None


def confirm(findings: list[Finding], sites: list[RuntimeSite], cwd: Path) -> tuple[list[Finding], list[RuntimeSite]]:
    """Findings with `runtime_syncs` set where the run saw syncs on their lines; the sites no finding covers."""
    by_line: dict[tuple[Path, int], int] = {}
    for site in sites:
        by_line[(site.path, site.line)] = by_line.get((site.path, site.line), 0) + site.count
    covered: set[tuple[Path, int]] = set()
    marked = []
    for finding in findings:
        path = (cwd / finding.filename).resolve()
        lines = range(finding.location.row, finding.end_location.row + 1)
        count = sum(by_line.get((path, line), 0) for line in lines)
        covered.update((path, line) for line in lines)
        marked.append(replace(finding, runtime_syncs=count))
    missed = [site for site in sites if (site.path, site.line) not in covered]
    return marked, missed
