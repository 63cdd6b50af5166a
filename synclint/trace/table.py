"""The table a person reads after a trace, with the static finding of each site beside it.

Rows are the report's sites (already ordered: by total wait when timed, else by count). In a job of
several processes, a column per process (up to `MAX_COLUMNS`) gives its count at each site, and, when
the run has times, `waited most` the process that waited longest there (a count says nothing of it). No torch.
"""

from __future__ import annotations

from pathlib import Path

from synclint.runtime import format_wait

SOURCE_WIDTH = 60
MAX_COLUMNS = 8


def static_codes(sites: list[dict], root: Path) -> dict[tuple[Path, int], list[str]]:
    """The rule codes `synclint check` reports on each site's line (the check of the sites' files,
    with the project's settings); {} when the check itself cannot run (a configuration error)."""
    from synclint.config import ConfigError, SettingsResolver
    from synclint.runner import Mode, run_paths

    files = sorted({(root / s["file"]).resolve() for s in sites if s["file"]})
    files = [f for f in files if f.is_file()]
    if not files:
        return {}
    try:
        run = run_paths(files, SettingsResolver(None, {}, root), Mode(), cwd=root)
    except ConfigError:
        return {}
    codes: dict[tuple[Path, int], list[str]] = {}
    for finding in run.findings:
        path = (root / finding.filename).resolve()
        for line in range(finding.location.row, finding.end_location.row + 1):
            at = codes.setdefault((path, line), [])
            if finding.code not in at:
                at.append(finding.code)
    return codes


def _share(wait: float | None, wall: float) -> str:
    return "-" if wait is None or wall <= 0 else f"{100 * wait / wall:.1f}%"


def _clip(text: str) -> str:
    return text if len(text) <= SOURCE_WIDTH else text[: SOURCE_WIDTH - 3] + "..."


def _found(site: dict, codes: dict[tuple[Path, int], list[str]] | None, root: Path) -> list[str] | None:
    """The codes on the site's line; None when not looked up (or a sync outside the user's code)."""
    if codes is None or not site["file"]:
        return None
    return codes.get(((root / site["file"]).resolve(), site["line"]), [])


def render(sites: list[dict], *, untimed: str | None, wall_s: float, codes: dict[tuple[Path, int], list[str]] | None,
           root: Path, columns: list[tuple[str, str]] | None = None) -> list[str]:
    """The table's lines and its summary line; `untimed`: why the run has no times (None: it has);
    `columns`: the processes of a job, (name, column head), in order."""
    timed = untimed is None
    per_process = columns[:MAX_COLUMNS] if columns and len(columns) <= MAX_COLUMNS else []
    rows = []
    for site in sites:
        where = f"{site['file']}:{site['line']}" if site["file"] else "<outside your code>"
        kind = "" if site["kind"] == "sync" else f"[{site['kind']}] "
        found = _found(site, codes, root)
        cells = [str(site["count"]), where, kind + site["op"], "-" if found is None else ",".join(found) or "no rule",
                 _clip(site.get("source") or "")]
        if columns:
            counts = {r["name"]: r["count"] for r in site.get("ranks", [])}
            most = [site.get("waited_most") or "-"] if timed else []
            cells = cells[:1] + [str(counts.get(name, 0)) for name, _ in per_process] + most + cells[1:]
        if timed:
            wait = site["wait_s"]
            mean = None if wait is None else wait / site["count"]
            cells = [format_wait(wait), format_wait(mean), _share(wait, wall_s)] + cells
        rows.append(cells)
    header = ((["total wait", "mean", "share"] if timed else []) + ["count"] + [short for _, short in per_process]
              + (["waited most"] if columns and timed else []) + ["site", "operation", "static finding", "source"])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = len(header) - 4 - (1 if columns and timed else 0)  # the numbers align right, the words left
    lines = ["  ".join(cell.rjust(w) if i < numeric else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header, *rows]]
    return lines + [summary(sites, untimed=untimed, wall_s=wall_s, codes=codes, root=root, processes=len(columns or []))]


def summary(sites: list[dict], *, untimed: str | None, wall_s: float, codes: dict | None, root: Path,
            processes: int = 0) -> str:
    """`host waited X of Y in N syncs at K sites; M sites no rule reports` (untimed: the counts, and why);
    in a job, Y is the processes' watched times added up."""
    syncs = sum(s["count"] for s in sites)
    places = {(s["file"], s["line"]) for s in sites}
    counted = f"{syncs:,} sync{'s' if syncs != 1 else ''} at {len(places)} site{'s' if len(places) != 1 else ''}"
    if untimed is None:
        waited = sum(s["wait_s"] or 0.0 for s in sites)
        of = f"{format_wait(wall_s)}" + (f" (the {processes} processes' times added)" if processes > 1 else "")
        line = f"host waited {format_wait(waited)} of {of} in {counted}"
        unseen = sum(s["count"] for s in sites if s["wait_s"] is None)
        if unseen:
            line += f" ({unseen:,} not timed: no torch call from Python around them)"
    else:
        line = f"{counted} ({untimed})"
    if codes is not None:
        unreported = len({(s["file"], s["line"]) for s in sites if _found(s, codes, root) == []})
        line += f"; {unreported} site{'s' if unreported != 1 else ''} no rule reports"
    return line
