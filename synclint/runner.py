"""One run over many files: discover them, check each (in a process pool when many)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from synclint.config import Settings, SettingsResolver
from synclint.engine import INTERNAL_ERROR, PARSE_ERROR, FileResult, check_bytes, check_file
from synclint.fixes import FileFix, add_noqa_file, fix_bytes, fix_file
from synclint.files import PathProblem, Target, discover, relative_to_root
from synclint.noqa import unknown_codes

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
    add_noqa: bool = False  # --add-noqa: silence every finding with a comment
    debug: bool = False


def _too_large(size: int, shown: str, settings: Settings) -> FileFix | None:
    limit = settings.max_file_size
    if not limit or size <= limit:
        return None
    return FileFix(FileResult(shown), problems=[
        f"{shown}: skipped: {size / 1e6:.1f} MB is over `max-file-size` ({limit / 1e6:.1f} MB); raise it to check this file"
    ])


def _process(path: Path, shown: str, settings: Settings, mode: Mode) -> FileFix:
    try:
        skipped = _too_large(path.stat().st_size, shown, settings)
    except OSError:
        skipped = None  # reading it reports the problem
    if skipped is not None:
        return skipped
    if mode.add_noqa:
        item = add_noqa_file(path, shown, settings, mode.debug)
    elif not mode.fix:
        item = FileFix(check_file(path, shown, settings, mode.debug))
    else:
        unsafe = mode.unsafe or settings.unsafe_fixes
        item = fix_file(path, shown, settings, unsafe, mode.write, mode.debug)
    return _with_noqa_warnings(item, settings)


def _with_noqa_warnings(item: FileFix, settings: Settings) -> FileFix:
    """Warn about `# noqa: SYNC999`: a code that is no rule silences nothing (ruff's unused-noqa)."""
    source = item.result.source
    if source is not None and "noqa" in source.text.lower():
        known = {rule.code for rule in settings.rules} | {PARSE_ERROR[0], INTERNAL_ERROR[0]}
        for row, code in unknown_codes(source.text, known):
            item.problems.append(f"{item.result.path}:{row}: `# noqa` names {code}, which is no rule")
    item.result.source = None  # the text is not needed any more: do not send it back from a worker
    return item


def run_stdin(data: bytes, filename: str | None, resolver: SettingsResolver, mode: Mode, cwd: Path) -> RunResult:
    """Check (or fix, in memory) source read from standard input; `filename` picks the settings."""
    shown = filename or "-"
    settings = resolver.for_path(cwd / filename if filename else cwd)
    skipped = _too_large(len(data), shown, settings)
    if skipped is not None:
        run = RunResult(files=[skipped])
        _collect_problems(run)
        return run
    if mode.fix:
        item = fix_bytes(data, shown, settings, mode.unsafe or settings.unsafe_fixes, mode.debug)
    else:
        item = FileFix(check_bytes(data, shown, settings, mode.debug))
    new_bytes = item.new_bytes
    run = RunResult(files=[_with_noqa_warnings(item, settings)])
    run.files[0].new_bytes = new_bytes
    _collect_problems(run)
    return run


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
    _collect_problems(run)
    return run


def _collect_problems(run: RunResult) -> None:
    for item in run.files:
        if item.result.internal_error:
            run.problems.append(item.result.internal_error)
        run.warnings.extend(item.problems)


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
