"""The sync report, one versioned schema, and `synclint check --runtime-report FILE`.

Two programs write the report: `pytest --sync-check --sync-report FILE` (a test suite) and
`synclint trace --report FILE` (any program). `report_document` builds it for both:

    {"schema": "synclint-sync-report", "version": 2,
     "tool": "pytest" | "trace", "simulated": bool, "device": "cuda" | "cpu" | None,
     "root": the folder that relative `file`s are under, "allowed": syncs inside allowed regions,
     "wall_s": seconds watched (a timed trace; else None), "wait_s": total host wait (None when not timed),
     "sites": [{"kind", "file", "line", "function", "op", "count", "wait_s", "source", "tests"?}], ...}

`wait_s` of a site is the host time spent waiting there in total (seconds; None when the run
could not time it: the CPU simulation, pytest, `trace --no-times`, or syncs no timed call surrounds). A report without `schema`/`version` is
version 1 (what `--sync-report` wrote before the wait was added): it reads as untimed.

`check` marks a finding confirmed when the run saw a sync on one of its lines, orders the
confirmed findings by their measured wait (most first), keeps the unconfirmed after them,
and lists the sites that no finding covers: the misses worth a new rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from synclint.model import Finding

SCHEMA = "synclint-sync-report"
VERSION = 2
READABLE_VERSIONS = (1, 2)


class RuntimeReportError(Exception):
    pass


def report_document(tool: str, *, simulated: bool, device: str | None, root: str, allowed: int,
                    sites: list[dict], **extra: Any) -> dict:
    """The report as the current schema has it; `sites` must each carry `wait_s` (None if untimed)."""
    waits = [site["wait_s"] for site in sites if site["wait_s"] is not None]
    total = sum(waits) if waits or extra.get("wall_s") is not None else None  # wall_s: a timed run
    return {"schema": SCHEMA, "version": VERSION, "tool": tool, "simulated": simulated, "device": device,
            "root": root, "allowed": allowed, "wait_s": total, **extra, "sites": sites}


@dataclass(frozen=True)
class RuntimeSite:
    path: Path  # resolved
    line: int
    op: str
    count: int
    wait_s: float | None = None  # total host wait at this site; None when the run did not time it

    def shown(self, cwd: Path) -> str:
        try:
            return f"{self.path.relative_to(cwd)}:{self.line}"
        except ValueError:
            return f"{self.path}:{self.line}"


def format_wait(seconds: float | None) -> str:
    """`12.3 ms`, `1.24 s`, `85 us`; `-` when not timed."""
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def runtime_note(finding: Finding) -> str:
    """What the run measured on a finding's lines, in words (the text report and the hover)."""
    count = finding.runtime_syncs or 0
    seen = f"a run saw {count} sync{'s' if count != 1 else ''} here"
    if finding.runtime_wait_s is None:
        return seen + " (not timed)"
    return (f"{seen}; the host waited {format_wait(finding.runtime_wait_s)} in all, "
            f"{format_wait(finding.runtime_wait_s / max(count, 1))} each")


def _version(data: dict, report: Path) -> int:
    if "schema" not in data and "version" not in data:
        return 1
    version = data.get("version")
    if data.get("schema") != SCHEMA or version not in READABLE_VERSIONS:
        raise RuntimeReportError(
            f"{report}: a sync report of schema {data.get('schema')!r} version {version!r}; this synclint reads "
            f"{SCHEMA!r} versions {', '.join(map(str, READABLE_VERSIONS))}: write it again with this synclint")
    return version


def load_sites(report: Path) -> list[RuntimeSite]:
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("the top level is not an object")
        _version(data, report)
        root = Path(data.get("root") or report.parent)
        sites = []
        for site in data["sites"]:
            if not site.get("file") or not site.get("line"):
                continue  # a sync outside the user's code
            path = Path(site["file"])
            wait = site.get("wait_s")
            sites.append(RuntimeSite((path if path.is_absolute() else root / path).resolve(), int(site["line"]),
                                     str(site.get("op", "")), int(site.get("count", 1)),
                                     None if wait is None else float(wait)))
        return sites
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RuntimeReportError(f"{report}: not a sync report written by `synclint trace --report` or "
                                 f"`pytest --sync-report` ({exc})") from None


def confirm(findings: list[Finding], sites: list[RuntimeSite], cwd: Path) -> tuple[list[Finding], list[RuntimeSite]]:
    """The findings with `runtime_syncs` (and `runtime_wait_s`, when timed) set where the run saw syncs
    on their lines, the confirmed first, by measured wait; and the sites no finding covers, by wait."""
    by_line: dict[tuple[Path, int], tuple[int, float | None]] = {}
    for site in sites:
        count, wait = by_line.get((site.path, site.line), (0, 0.0))
        by_line[(site.path, site.line)] = (count + site.count,
                                           None if wait is None or site.wait_s is None else wait + site.wait_s)
    covered: set[tuple[Path, int]] = set()
    marked = []
    for finding in findings:
        path = (cwd / finding.filename).resolve()
        lines = range(finding.location.row, finding.end_location.row + 1)
        seen = [by_line[(path, line)] for line in lines if (path, line) in by_line]
        count = sum(c for c, _ in seen)
        waits = [w for _, w in seen if w is not None]
        wait = sum(waits) if seen and len(waits) == len(seen) else None
        covered.update((path, line) for line in lines)
        marked.append(replace(finding, runtime_syncs=count, runtime_wait_s=wait))
    # Stable sorts: the confirmed by wait (the untimed after the timed, by count), then the rest as they were.
    confirmed = sorted((f for f in marked if f.runtime_syncs),
                       key=lambda f: (f.runtime_wait_s is None, -(f.runtime_wait_s or 0.0), -(f.runtime_syncs or 0)))
    unconfirmed = [f for f in marked if not f.runtime_syncs]
    missed = sorted((site for site in sites if (site.path, site.line) not in covered),
                    key=lambda s: (s.wait_s is None, -(s.wait_s or 0.0), -s.count))
    return confirmed + unconfirmed, missed


_loaded: dict[Path, tuple[int, list[RuntimeSite]]] = {}


def measured_note(report: Path, path: Path, finding: Finding) -> str | None:
    """`runtime_note` of one finding of the file at `path`, from `report` (read again when it changes);
    None when the report saw no sync on its lines or cannot be read (the editor's hover)."""
    try:
        stamp = report.stat().st_mtime_ns
        known = _loaded.get(report)
        if known is None or known[0] != stamp:
            known = _loaded[report] = (stamp, load_sites(report))
    except (OSError, RuntimeReportError):
        return None
    marked, _ = confirm([replace(finding, filename=str(path.resolve()))], known[1], path.parent)
    return runtime_note(marked[0]) if marked[0].runtime_syncs else None
