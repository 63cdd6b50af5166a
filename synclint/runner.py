"""One run over many files: discover them, check each (in a process pool when many)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from synclint.config import Settings, SettingsResolver
from synclint.engine import FileResult, check_file
from synclint.files import PathProblem, Target, discover, relative_to_root

MIN_FILES_PER_JOB = 8


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable paths: exit 2 at the end

    @property
    def findings(self):
        return sorted((f for r in self.results for f in r.findings), key=lambda f: f.sort_key)


def display_path(path: Path, cwd: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    if not path.is_absolute():
        return path.as_posix()
    return relative_to_root(path, cwd)


def _check_batch(batch: list[tuple[Path, str, Settings]], debug: bool) -> list[FileResult]:
    return [check_file(path, shown, settings, debug) for path, shown, settings in batch]


def collect(paths: list[Path], resolver: SettingsResolver, force_exclude: bool) -> tuple[list[tuple[Path, Settings]], list[str]]:
    targets: list[tuple[Path, Settings]] = []
    problems: list[str] = []
    for item in discover(paths, resolver, force_exclude):
        if isinstance(item, PathProblem):
            problems.append(f"{item.path}: {item.message}")
        else:
            assert isinstance(item, Target)
            targets.append((item.path, resolver.for_path(item.path)))
    return targets, problems


def check_paths(
    paths: list[Path], resolver: SettingsResolver, *, jobs: int | None = None, force_exclude: bool = False,
    debug: bool = False, cwd: Path | None = None,
) -> RunResult:
    cwd = cwd or Path.cwd()
    targets, problems = collect(paths, resolver, force_exclude)
    run = RunResult(problems=problems)
    work = [(path, display_path(path, cwd), settings) for path, settings in targets]
    run.results = list(_check_all(work, jobs or os.cpu_count() or 1, debug))
    run.problems.extend(r.internal_error for r in run.results if r.internal_error)
    return run


def _check_all(work: list[tuple[Path, str, Settings]], jobs: int, debug: bool) -> Iterator[FileResult]:
    if jobs <= 1 or len(work) < 2 * MIN_FILES_PER_JOB:
        yield from _check_batch(work, debug)
        return
    # Interleave files over batches so that large neighbouring files spread out.
    batches = [work[i::jobs * 4] for i in range(jobs * 4)]
    batches = [b for b in batches if b]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for results in pool.map(_check_batch, batches, [debug] * len(batches)):
            yield from results
