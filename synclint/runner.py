"""One run over many files: discover them, check each (in a process pool when many)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from synclint.config import Settings, SettingsResolver
from synclint.engine import check_file
from synclint.fixes import FileFix, fix_file
from synclint.files import PathProblem, Target, discover, relative_to_root

MIN_FILES_PER_JOB = 8


@dataclass
class RunResult:
    files: list[FileFix] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable paths, internal errors: exit 2 at the end
    warnings: list[str] = field(default_factory=list)  # fixes dropped, files not written

    @property
    def findings(self):
        return sorted((f for r in self.files for f in r.result.findings), key=lambda f: f.sort_key)

    @property
    def fixed(self):
        from collections import Counter

        total: Counter = Counter()
        for item in self.files:
            total.update(item.fixed)
        return total


def display_path(path: Path, cwd: Path) -> str:
    """The path as the user would type it: relative to the working directory when inside it."""
    if not path.is_absolute():
        return path.as_posix()
    return relative_to_root(path, cwd)


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # compute fixes
    write: bool = False  # write them (--fix); without it, only diff (--diff)
    unsafe: bool = False  # apply unsafe fixes too; None: as each file's settings say
    debug: bool = False


def _process(path: Path, shown: str, settings: Settings, mode: Mode) -> FileFix:
    if not mode.fix:
        return FileFix(check_file(path, shown, settings, mode.debug))
    unsafe = mode.unsafe or settings.unsafe_fixes
    return fix_file(path, shown, settings, unsafe, mode.write, mode.debug)


def _process_batch(batch: list[tuple[Path, str, Settings]], mode: Mode) -> list[FileFix]:
    return [_process(path, shown, settings, mode) for path, shown, settings in batch]


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


def run_paths(
    paths: list[Path], resolver: SettingsResolver, mode: Mode, *, jobs: int | None = None,
    force_exclude: bool = False, cwd: Path | None = None,
) -> RunResult:
    cwd = cwd or Path.cwd()
    targets, problems = collect(paths, resolver, force_exclude)
    run = RunResult(problems=problems)
    work = [(path, display_path(path, cwd), settings) for path, settings in targets]
    run.files = list(_process_all(work, jobs or os.cpu_count() or 1, mode))
    for item in run.files:
        if item.result.internal_error:
            run.problems.append(item.result.internal_error)
        run.warnings.extend(item.problems)
    return run


def _process_all(work: list[tuple[Path, str, Settings]], jobs: int, mode: Mode) -> Iterator[FileFix]:
    if jobs <= 1 or len(work) < 2 * MIN_FILES_PER_JOB:
        yield from _process_batch(work, mode)
        return
    # Interleave files over batches so that large neighbouring files spread out.
    batches = [work[i::jobs * 4] for i in range(jobs * 4)]
    batches = [b for b in batches if b]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for results in pool.map(_process_batch, batches, [mode] * len(batches)):
            yield from results
