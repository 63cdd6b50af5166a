"""One run over many files: discover them, check each (in a process pool when many), with project
analysis where the settings ask for it (synclint.project.run)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from synclint.cache.store import Cache
from synclint.config import Settings, SettingsResolver
from synclint.engine import check_bytes
from synclint.files import PathProblem, Target, discover
from synclint.fixes import FileFix, fix_bytes
from synclint.jobs import (
    Job,
    Mode,
    RunResult,
    check_all,
    collect_problems,
    display_path,
    fix_checked,
    too_large,
    with_noqa_warnings,
)
from synclint.progress import OFF, Progress
from synclint.project.run import check_project
from synclint.tally import Tally

__all__ = ["Mode", "RunResult", "collect", "display_path", "run_paths", "run_stdin"]


def collect(paths: list[Path], resolver: SettingsResolver, force_exclude: bool,
            walked: set[str] | None = None) -> tuple[list[tuple[Path, Settings]], list[str]]:
    targets: list[tuple[Path, Settings]] = []
    problems: list[str] = []
    for item in discover(paths, resolver, force_exclude, walked):
        if isinstance(item, PathProblem):
            problems.append(f"{item.path}: {item.message}")
        else:
            assert isinstance(item, Target)
            targets.append((item.path, resolver.for_path(item.path)))
    return targets, problems


# `--add-noqa` checks again after writing its comments: a comment that silences a helper's sync also
# silences what it told its callers, and what is left (a line that could take no comment) is reported.
NOQA_ROUNDS = 4


def run_paths(
    paths: list[Path], resolver: SettingsResolver, mode: Mode, *, jobs: int | None = None,
    force_exclude: bool = False, cwd: Path | None = None, cache: Cache | None = None, progress: Progress = OFF,
) -> RunResult:
    """Check (or fix) the files under `paths`. With `mode.add_noqa`: check them as a plain run does,
    project analysis and all, and add a `# noqa` for every finding shown, until a check shows
    nothing more that a comment can silence; the result is that last check, with what was added."""
    if mode.write:
        return _fix_then_check(paths, resolver, mode, jobs, force_exclude, cwd, cache, progress)
    if not mode.add_noqa:
        return _run_paths(paths, resolver, mode, jobs, force_exclude, cwd, cache, progress)[0]
    from collections import Counter

    from synclint.fixes import add_noqa_file

    check = replace(mode, add_noqa=False, fix=False, write=False)
    added: Counter = Counter()
    written: set[str] = set()
    for _ in range(NOQA_ROUNDS):
        run, located = _run_paths(paths, resolver, check, jobs, force_exclude, cwd, cache, progress)
        problems: list[str] = []
        more = False
        for item in run.files:
            path = located.get(item.result.path)
            if path is None or not item.result.findings:
                continue
            outcome = add_noqa_file(path, item.result.path, item.result.findings)
            problems.extend(outcome.problems)
            if outcome.written:
                more = True
                added.update(outcome.added)
                written.add(item.result.path)
        if not more:
            break
    run.warnings.extend(problems)
    run.noqa_added, run.noqa_files = added, len(written)
    return run


def _fix_then_check(paths: list[Path], resolver: SettingsResolver, mode: Mode, jobs: int | None, force_exclude: bool,
                    cwd: Path | None, cache: Cache | None, progress: Progress) -> RunResult:
    """`--fix`: fix and write the files, then, where any was written, check the paths again as a
    plain `check` does. The report after `--fix` is that check's, so it is what the next `check`
    prints: a fix in one file changes the findings of others (a helper that no longer syncs quiets
    its callers' SYNC112; a value now made on the host changes what its callers pass), and a fixed
    file's findings sit on its new lines. What was fixed, written and dropped comes from the fix."""
    fixing, _ = _run_paths(paths, resolver, mode, jobs, force_exclude, cwd, cache, progress)
    if not any(item.written for item in fixing.files):
        return fixing
    run, _ = _run_paths(paths, resolver, Mode(debug=mode.debug), jobs, force_exclude, cwd, cache, progress)
    done = {item.result.path: item for item in fixing.files}
    for item in run.files:
        fixed = done.get(item.result.path)
        if fixed is not None:
            item.fixed, item.written, item.diff = fixed.fixed, fixed.written, fixed.diff
    run.warnings = [*fixing.warnings, *(w for w in run.warnings if w not in fixing.warnings)]
    run.problems = [*fixing.problems, *(p for p in run.problems if p not in fixing.problems)]
    run.phases = [*fixing.phases, *run.phases]
    run.read_files = list(dict.fromkeys([*fixing.read_files, *run.read_files]))
    run.analysed_files = list(dict.fromkeys([*fixing.analysed_files, *run.analysed_files]))
    return run


def _run_paths(paths: list[Path], resolver: SettingsResolver, mode: Mode, jobs: int | None, force_exclude: bool,
               cwd: Path | None, cache: Cache | None, progress: Progress) -> tuple[RunResult, dict[str, Path]]:
    """`run_paths` for a mode other than `add_noqa`; and where each file shown is."""
    cwd = cwd or Path.cwd()
    cache = cache.for_run() if cache is not None else None
    run = RunResult()
    targets, run.problems = collect(paths, resolver, force_exclude, run.walked_folders)
    work = [Job(path, display_path(path, cwd), settings) for path, settings in targets]
    run.read_files = [os.fspath(job.path) for job in work]
    run.analysed_files = list(run.read_files)
    workers = jobs or os.cpu_count() or 1
    tally = Tally(progress)
    if not any(job.settings.project_analysis for job in work):
        results = check_all(work, Mode(debug=mode.debug), cache, workers, tally)
        results = fix_checked(work, results, mode, workers, tally, cache)
    else:
        results = check_project(work, paths, resolver, mode, cache, workers, tally, cwd, run)
    run.phases = tally.finished()
    run.files = [item for item in results if item is not None]
    collect_problems(run)
    return run, {job.shown: job.path for job in work}


def stdin_imports_local(data: bytes, cwd: Path) -> str | None:
    """What source on standard input imports from the files around it (a relative import, or a module
    or package of the working directory or its `src/`), as the warning names it; None if nothing."""
    import ast

    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return None  # its check reports it
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            return f"`from {'.' * node.level}{node.module or ''} import ...` (a relative import)"
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        for name in names:
            top = name.split(".")[0]
            for base in (cwd, cwd / "src"):
                if (base / top / "__init__.py").is_file() or (base / f"{top}.py").is_file():
                    shown = (base / top).relative_to(cwd).as_posix()
                    return f"`{name}` ({shown}{'/' if (base / top).is_dir() else '.py'} here)"
    return None


def run_stdin(data: bytes, filename: str | None, resolver: SettingsResolver, mode: Mode, cwd: Path,
              cache: Cache | None = None, progress: Progress = OFF) -> RunResult:
    """`run_stdin_as`, and without a file name, a warning where the source imports files around it:
    it is checked as a script of its own, and what those files' facts would add is missing."""
    run = run_stdin_as(data, filename, resolver, mode, cwd, cache, progress)
    settings = resolver.for_path(cwd / filename if filename else cwd)
    if filename is None and settings.project_analysis:
        imported = stdin_imports_local(data, cwd)
        if imported is not None:
            run.warnings.insert(0, f"the source on standard input imports {imported}, but without --stdin-filename "
                                   "it is checked as a script of its own: findings that rest on other files' facts "
                                   "(a helper that syncs, a property that copies, what callers pass) are left out; "
                                   "name the file it stands for with --stdin-filename PATH")
    return run


def run_stdin_as(data: bytes, filename: str | None, resolver: SettingsResolver, mode: Mode, cwd: Path,
                 cache: Cache | None = None, progress: Progress = OFF) -> RunResult:
    """Check (or fix, in memory) source read from standard input; `filename` picks the settings
    and, for a file of a package checked with project analysis, its place in the project: it is
    checked as a run over that file by path checks it, with `data` for its text."""
    shown = filename or "-"
    settings = resolver.for_path(cwd / filename if filename else cwd)
    skipped = too_large(len(data), shown, settings)
    if skipped is not None:
        run = RunResult(files=[skipped])
        collect_problems(run)
        return run
    # With project analysis, as a run over that file by path checks it: in a package, against the
    # package's facts; a script outside any package, as its own project (what its own calls pass its
    # functions). Source with no file name stands for a script in the working directory.
    path = cwd / (filename or "-")
    if not mode.fix and settings.project_analysis:
        run = RunResult()
        cache = cache.for_run() if cache is not None else None
        job = Job(path, display_path(path.absolute(), cwd), settings, data=data)
        run.read_files, run.analysed_files = [os.fspath(path)], [os.fspath(path)]
        tally = Tally(progress)
        results = check_project([job], [path], resolver, mode, cache, os.cpu_count() or 1, tally, cwd, run)
        run.phases = tally.finished()
        run.files = [item for item in results if item is not None]
        for item in run.files:  # shown as the name given
            item.result.path = shown
            item.result.findings = [replace(finding, filename=shown) for finding in item.result.findings]
        collect_problems(run)
        return run
    if mode.fix:
        item = fix_bytes(data, shown, settings, mode.unsafe or settings.unsafe_fixes, mode.debug)
    else:
        item = FileFix(check_bytes(data, shown, settings, mode.debug))
    new_bytes = item.new_bytes
    run = RunResult(files=[with_noqa_warnings(item, settings)])
    run.files[0].new_bytes = new_bytes
    collect_problems(run)
    return run
