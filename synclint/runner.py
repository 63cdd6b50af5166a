"""One run over many files: discover them, check each (in a process pool when many)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol, cast

from synclint.cache.entries import Entry, PackageState, Packed, ProjectSnapshot
from synclint.cache.replay import RACY_NS, inputs_of
from synclint.cache.signatures import Signature, listing
from synclint.cache.store import Cache
from synclint.config import Settings, SettingsResolver
from synclint.engine import INTERNAL_ERROR, PARSE_ERROR, FileResult, check_bytes, check_file
from synclint.files import PathProblem, Target, discover, relative_to_root
from synclint.fixes import FileFix, add_noqa_file, fix_bytes, fix_file
from synclint.model import Applicability
from synclint.noqa import unknown_codes
from synclint.progress import OFF, Progress
from synclint.project.demand import Demand
from synclint.project.facts import ProjectFile, ProjectView
from synclint.project.index import ProjectIndex
from synclint.project.placement import module_name, package_root
from synclint.project.text_facts import Declarations, with_text_facts
from synclint.view import View

FILES_PER_BATCH = 8


@dataclass
class RunResult:
    files: list[FileFix] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable paths, internal errors: exit 2 at the end
    warnings: list[str] = field(default_factory=list)  # fixes dropped, files not written
    walked_folders: set[str] = field(default_factory=set)  # what the run's output depends on (synclint.cache.replay)
    read_files: list[str] = field(default_factory=list)
    analysed_files: list[str] = field(default_factory=list)  # of those, the files parsed and analysed
    signatures: dict[str, Signature] = field(default_factory=dict)  # of some of those, as the run took them
    phases: list["PhaseCount"] = field(default_factory=list)  # what the run did (`synclint check -v`)

    @property
    def findings(self):
        return sorted((f for r in self.files for f in r.result.findings), key=lambda f: f.sort_key)

    @property
    def hidden_tests(self) -> int:
        """Findings in test code that the view left out (`include-tests` off)."""
        return sum(item.result.hidden_tests for item in self.files)

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


@dataclass(frozen=True)
class Job:
    """One file to check: where it is, how it is shown, its settings, its place in the project."""

    path: Path
    shown: str
    settings: Settings
    project: ProjectFile = ProjectFile()
    # For a fix: the digest of the bytes the run's check read and what it found (fixes.fix_file).
    checked: tuple[bytes, FileResult] | None = None
    data: bytes | None = None  # the file's text as given on standard input, instead of what is on disk


def _process(job: Job, mode: Mode) -> FileFix:
    path, shown, settings = job.path, job.shown, job.settings
    try:
        skipped = _too_large(path.stat().st_size, shown, settings)
    except OSError:
        skipped = None  # reading it reports the problem
    if skipped is not None:
        return skipped
    if mode.add_noqa:
        item = add_noqa_file(path, shown, settings, mode.debug)
    elif job.data is not None:
        item = FileFix(check_bytes(job.data, shown, settings, mode.debug, job.project))
    elif not mode.fix:
        item = FileFix(check_file(path, shown, settings, mode.debug, job.project))
    else:
        unsafe = mode.unsafe or settings.unsafe_fixes
        item = fix_file(path, shown, settings, unsafe, mode.write, mode.debug, job.project, job.checked)
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


def run_stdin(data: bytes, filename: str | None, resolver: SettingsResolver, mode: Mode, cwd: Path,
              cache: Cache | None = None, progress: Progress = OFF) -> RunResult:
    """Check (or fix, in memory) source read from standard input; `filename` picks the settings
    and, for a file of a package checked with project analysis, its place in the project: it is
    checked as a run over that file by path checks it, with `data` for its text."""
    shown = filename or "-"
    settings = resolver.for_path(cwd / filename if filename else cwd)
    skipped = _too_large(len(data), shown, settings)
    if skipped is not None:
        run = RunResult(files=[skipped])
        _collect_problems(run)
        return run
    path = cwd / filename if filename else None
    if path is not None and not mode.fix and settings.project_analysis and package_root(path) is not None:
        run = RunResult()
        cache = cache.for_run() if cache is not None else None
        job = Job(path, display_path(path.absolute(), cwd), settings, data=data)
        run.read_files = run.analysed_files = [os.fspath(path)]
        tally = Tally(progress)
        results = _check_project([job], [path], resolver, mode, cache, os.cpu_count() or 1, tally, cwd, run)
        run.phases = tally.finished()
        run.files = [item for item in results if item is not None]
        for item in run.files:  # shown as the name given
            item.result.path = shown
            item.result.findings = [replace(finding, filename=shown) for finding in item.result.findings]
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


def package_state(path: Path, settings: Settings, cache: Cache, cwd: Path) -> PackageState | None:
    """What the last run from `cwd` over the package of `path` left in `cache` of it (the solved
    index of its facts, each file's summary), if every other file and folder of the package is
    as that run saw it; None when no run left one, something changed since (a run over the
    package makes it again), or `path` is in no package. (Run it from `cwd`: a state names the
    folders its run walked as that run named them.)"""
    keys = _state_keys(cache, [Job(path, display_path(path, cwd), settings)], cwd)
    state = cache.get(keys[0], PackageState) if keys else None
    return state if state is not None and state.is_current({os.path.abspath(path)}) else None


def check_unsaved(data: bytes, path: Path, settings: Settings, state: PackageState | None, cwd: Path,
                  cache: Cache | None = None, debug: bool = False) -> tuple[FileResult, ProjectFile]:
    """Check `data`, the text of the file at `path` as an editor holds it (saved or not), as a
    run over that one file after an edit checks it (pre-commit; `_check_project`): with project
    analysis, against the facts `state` (see `package_state`) holds of the other files of its
    package (`_checked_against`); with no state, the file alone (as a first run looks at each
    file first). Returns the result, and the file's place in the project as it was checked
    (its view of the facts).

    The cache is read; an entry is written only when `data` is the file on disk, not for the
    versions an edit goes through, which no run will meet again."""
    job = Job(path, display_path(path, cwd), settings)
    skipped = _too_large(len(data), job.shown, settings)
    if skipped is not None:
        return skipped.result, job.project
    if settings.project_analysis:
        job = _placed(job)
        [job], _ = _with_text_facts([job], lambda _: data, state)
    store = False
    if cache is not None:
        try:
            store = path.read_bytes() == data
        except OSError:
            pass
    if state is None or not settings.project_analysis:
        return _check_data(data, job, cache, store, debug), job.project
    index: ProjectIndex = state.index  # type: ignore[assignment]  # (cache.py keeps it untyped)
    kept = state.summaries.get(job.shown)  # as `_checked_against`: first the facts it was last checked with
    if kept is not None:
        job = _given_view(job, index.view_for(kept))
    result = _check_data(data, job, cache, store, debug)
    if result.summary is not None:
        again = _given_view(job, index.view_for(result.summary))
        if _view_digest(again) != _view_digest(job):
            job = again
            result = _check_data(data, job, cache, store, debug)
    return result, job.project


def _check_data(data: bytes, job: Job, cache: Cache | None, store: bool, debug: bool) -> FileResult:
    """`check_bytes` of a job's text, through the cache (the key a file of these bytes has);
    a new result is stored only with `store`."""
    key = _entry_key(cache, job, hashlib.sha256(data).digest()) if cache is not None else None
    entry = cache.get(key, Entry) if cache is not None and key is not None else None
    if entry is not None:
        return _cached_result(entry, job, View(job.settings))
    result = check_bytes(data, job.shown, job.settings, debug, job.project)
    if store and cache is not None and key is not None and not result.internal_error:
        summary = result.summary
        item = _with_noqa_warnings(FileFix(result), job.settings)  # as `_process` stores it
        cache.put(key, Entry.of(result.analysis or [], item.problems, summary))
    return result


def _process_batch(batch: list[Job], mode: Mode) -> list[FileFix]:
    return [_process(job, mode) for job in batch]


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


def run_paths(
    paths: list[Path], resolver: SettingsResolver, mode: Mode, *, jobs: int | None = None,
    force_exclude: bool = False, cwd: Path | None = None, cache: Cache | None = None, progress: Progress = OFF,
) -> RunResult:
    cwd = cwd or Path.cwd()
    cache = cache.for_run() if cache is not None else None
    run = RunResult()
    targets, run.problems = collect(paths, resolver, force_exclude, run.walked_folders)
    work = [Job(path, display_path(path, cwd), settings) for path, settings in targets]
    run.read_files = [os.fspath(job.path) for job in work]
    run.analysed_files = list(run.read_files)
    workers = jobs or os.cpu_count() or 1
    tally = Tally(progress)
    if mode.add_noqa:
        results = _check_all(work, mode, None, workers, tally)
    elif not any(job.settings.project_analysis for job in work):
        results = _check_all(work, Mode(debug=mode.debug), cache, workers, tally)
        results = _fixed(work, results, mode, workers, tally, cache)
    else:
        results = _check_project(work, paths, resolver, mode, cache, workers, tally, cwd, run)
    run.phases = tally.finished()
    run.files = [item for item in results if item is not None]
    _collect_problems(run)
    return run


@dataclass
class PhaseCount:
    """One phase of a run: how many files it took, how many of those came from the cache (the
    others were analysed), and how long it took."""

    label: str
    files: int  # or, for a step (the solve), what it worked on: `unit`
    cached: int = 0
    seconds: float = 0.0
    unit: str = "files"

    @property
    def analysed(self) -> int:
        return self.files - self.cached if self.unit == "files" else 0


class Tally:
    """The progress display of a run, counting each phase as it passes it on (`RunResult.phases`)."""

    def __init__(self, progress: "_Phases") -> None:
        self.progress = progress
        self.phases: list[PhaseCount] = []
        self._started = time.monotonic()

    def phase(self, label: str, total: int, done: int = 0) -> Callable[[int], None]:
        self._close()
        self.phases.append(PhaseCount(label, total, done))
        return self.progress.phase(label, total, done)

    def step(self, label: str, items: int, unit: str, seconds: float) -> None:
        """A phase that takes no files through the display (the solve): the `items` (`unit`) it worked on."""
        self._close()
        self.phases.append(PhaseCount(label, items, 0, seconds, unit))
        self._started = time.monotonic()

    def finished(self) -> list[PhaseCount]:
        self._close()
        return self.phases

    def _close(self) -> None:
        now = time.monotonic()
        if self.phases and not self.phases[-1].seconds:
            self.phases[-1].seconds = now - self._started
        self._started = now


class _Phases(Protocol):
    """What `_check_all` asks of its progress display: a `Progress`, or a round of `_on_demand`'s."""

    def phase(self, label: str, total: int, done: int = 0) -> Callable[[int], None]: ...


def _check_all(work: list[Job], mode: Mode, cache: Cache | None, workers: int, progress: _Phases,
               label: str = "checking") -> list[FileFix | None]:
    """Each job checked (or fixed) once, through the cache; the results in the jobs' order.
    `label`: what the progress display says of this phase."""
    results: list[FileFix | None] = [None] * len(work)
    keys: dict[int, str] = {}
    if cache is not None and not mode.add_noqa:
        keys = _from_cache(work, results, cache, mode)
    pending = [i for i, item in enumerate(results) if item is None]
    advance = progress.phase(label, len(work), len(work) - len(pending))
    for i, done in _process_all([(i, work[i]) for i in pending], workers, mode, advance):
        results[i] = done
    if cache is not None:
        for i, key in keys.items():
            item = results[i]
            if (item is not None and not item.result.internal_error and not item.fixed and not item.diff
                    and (item.result.analysis is not None or not item.result.findings)):
                analysis = item.result.analysis if item.result.analysis is not None else []
                cache.put(key, Entry.of(analysis, item.problems, item.result.summary))
    return results


def _check_project(work: list[Job], paths: list[Path], resolver: SettingsResolver, mode: Mode, cache: Cache | None,
                   workers: int, progress: Tally, cwd: Path, run: RunResult) -> list[FileFix | None]:
    """Checks with project analysis (synclint.project), each file analysed at most twice:

    1. First looks: every checked file, and the other files of their packages whose facts they
       use, checked with no facts of other files. Each check yields the file's findings and its
       summary, which depends on the file alone (so it never needs another look).
    2. One solve: the summaries joined in a `ProjectIndex`, solved once to a fixed point.
    3. Answers: each checked file whose facts from the rest of the project (`view_for`) are not
       empty is checked once more with them; those findings replace its first look's.
    With --fix/--diff, the files whose findings have fixes to apply are then fixed, with their
    facts. Every step goes through the cache; a check with facts is keyed by their digest.

    A run over a whole package keeps its solved index (cache.ProjectSnapshot, keyed by every
    file's bytes, and cache.PackageState): a later run over the same files, or over some of
    them while no other file or folder of the package changed, checks only the files it shows,
    against that index (`_checked_against`). A run over some files of a package that finds no state of
    it analyses, in step 1, only the files whose facts the checked ones use, as deep as needed
    (`_on_demand`, synclint.project.demand); when those are most of the package it analyses all
    of it, and keeps its state as a run over the package does.
    """
    started = time.time_ns()
    check = Mode(debug=mode.debug)
    state_keys = _state_keys(cache, work, cwd) if cache is not None else []
    state = cache.get(state_keys[0], PackageState) if cache is not None and len(state_keys) == 1 else None
    checked = {os.path.abspath(job.path) for job in work}
    if cache is not None and state is not None and checked < state.package_files and state.is_current(checked):
        # Some files of the package, the rest as the last run saw them (pre-commit after an edit).
        run.read_files += list(state.files)
        run.signatures.update((path, known) for path, known in state.files.items() if path not in checked)
        run.walked_folders.update(state.folders)
        jobs, _ = _with_text_facts([_placed(job) for job in work], _given(work, cache.read), state)
        results = _checked_against(cast(ProjectIndex, state.index), state.summaries, jobs, check, cache, workers,
                                   progress)
        return _fixed(jobs, results, mode, workers, progress, cache)
    index_only = _package_files(work, paths, resolver, cwd, run.walked_folders)
    packages = sorted({root.name for job in work if job.settings.project_analysis
                       and (root := package_root(job.path)) is not None})
    run.read_files += [os.fspath(job.path) for job in index_only]
    texts: dict[Path, bytes] = {}
    jobs, declarations = _with_text_facts([*[_placed(job) for job in work], *[_placed(job) for job in index_only]],
                                           _given(work, _reader(cache, texts if index_only else None)))
    snapshot_key = _snapshot_key(jobs, cache)
    snapshot = cache.get(snapshot_key, ProjectSnapshot) if cache is not None and snapshot_key else None
    snapshot_was_kept = snapshot is not None
    shown = list(jobs[: len(work)])
    if snapshot is not None:
        # The same files, with the same bytes, as a run that solved this index.
        results = _checked_against(cast(ProjectIndex, snapshot.index), snapshot.summaries, shown, check, cache,
                                   workers, progress)
        whole = True
    else:
        label = "checking"
        if packages:
            named = ", ".join(packages) if len(packages) <= 3 else f"{len(packages)} packages"
            label = (f"checking; indexing what the files use of {named}" if index_only
                     else f"checking; indexing {named} once for project analysis")
        if index_only:
            # Some files of the package and nothing kept of it: index only the files whose facts they use.
            jobs, results = _on_demand(jobs, len(work), texts, check, cache, workers, progress, label)
            texts.clear()
        else:
            results = _check_all(jobs, check, cache, workers, progress, label)
        run.analysed_files = [os.fspath(job.path) for job in jobs]
        summaries = {job.shown: item.result.summary for job, item in zip(jobs, results)
                     if item is not None and item.result.summary is not None}
        solving = time.monotonic()
        index = ProjectIndex(summaries.values())
        progress.step("project analysis: one solve", len(summaries), "summaries", time.monotonic() - solving)
        results[: len(work)] = _answered(index, shown, results[: len(work)], check, cache, workers, progress)
        whole = len(jobs) == len(work) + len(index_only)  # else a part of the package: no state to keep
        if whole and cache is not None and snapshot_key:
            kept_index, small = index.snapshot(summaries)
            snapshot = ProjectSnapshot(kept_index, Packed(small))
            cache.put(snapshot_key, snapshot)
    if cache is not None and state_keys and whole and snapshot is not None:
        indexed = frozenset(os.path.abspath(job.path) for job in [*work, *index_only])
        saved = PackageState(indexed, inputs_of((), indexed), _listings(run.walked_folders), snapshot.index,
                             {module: found for module, found in declarations.items() if any(found)},
                             snapshot.summaries)
        if not any(sig is not None and sig[0] > started - RACY_NS for sig in saved.files.values()):
            for key in state_keys:  # unless a file changed too recently for its stat to tell (replay.RACY_NS)
                # A kept state of the same files, as stat sees them, and the same index is this one
                # (the state read above, when there is one key, is not read again).
                kept = (state if key == state_keys[0] and state is not None else cache.get(key, PackageState)
                        ) if snapshot_was_kept else None
                if kept is None or (kept.package_files, kept.files, kept.folders) != (saved.package_files, saved.files,
                                                                                    saved.folders):
                    cache.put(key, saved)
    return _fixed(shown, results[: len(work)], mode, workers, progress, cache)


def _answered(index: ProjectIndex, jobs: list[Job], firsts: list[FileFix | None], check: Mode, cache: Cache | None,
              workers: int, progress: Tally) -> list[FileFix | None]:
    """Step 3 of `_check_project`: each job whose first look (`firsts`) has a summary and whose
    facts from `index` are not empty is given them (in place) and checked once more."""
    results = list(firsts)
    again: list[int] = []
    for i, item in enumerate(firsts):
        summary = item.result.summary if item is not None else None
        if summary is None or not jobs[i].settings.project_analysis:
            continue
        view = index.view_for(summary)
        if view:
            jobs[i] = _given_view(jobs[i], view)
            again.append(i)
    if again:
        redone = _check_all([jobs[i] for i in again], check, cache, workers, progress,
                            "project analysis: a second look at the files that use other files' facts")
        for i, item in zip(again, redone):
            results[i] = item
    return results


def _checked_against(index: ProjectIndex, kept: Packed, jobs: list[Job], check: Mode, cache: Cache | None,
                     workers: int, progress: Tally) -> list[FileFix | None]:
    """The jobs checked against a kept `index`, as a run over the whole package checks them.

    A file's facts (`view_for`) depend on its summary only through what it names (its calls,
    attributes, classes, functions), which no fact changes: so each file is checked first with
    the facts of the summary the index was solved with (`kept`: an edit seldom changes what a
    file names), and once more only if its own summary asks for other facts."""
    for i, job in enumerate(jobs):
        summary = kept.get(job.shown) if job.settings.project_analysis else None
        if summary is not None:
            jobs[i] = _given_view(job, index.view_for(summary))
    results = _check_all(jobs, check, cache, workers, progress)
    again: list[int] = []
    for i, item in enumerate(results):
        summary = item.result.summary if item is not None else None
        if summary is None or not jobs[i].settings.project_analysis:
            continue
        job = _given_view(jobs[i], index.view_for(summary))
        if _view_digest(job) != _view_digest(jobs[i]):
            jobs[i] = job
            again.append(i)
    if again:
        for i, item in zip(again, _check_all([jobs[i] for i in again], check, cache, workers, progress)):
            results[i] = item
    return results


def _view_digest(job: Job) -> str:
    view = job.project.view
    return view.digest() if view else ""


def _reader(cache: Cache | None, texts: dict[Path, bytes] | None) -> Callable[[Path], bytes]:
    """How the run reads a file's bytes (through the cache's reads, when there is one); with
    `texts`, each file read is kept there too."""
    read = cache.read if cache is not None else Path.read_bytes
    if texts is None:
        return read

    def keep(path: Path) -> bytes:
        data = texts[path] = read(path)
        return data

    return keep


def _given(jobs: list[Job], read: Callable[[Path], bytes]) -> Callable[[Path], bytes]:
    """`read`, but for the files whose text a job gives (standard input): that text."""
    given = {job.path: job.data for job in jobs if job.data is not None}
    if not given:
        return read
    return lambda path: given[path] if path in given else read(path)


def _on_demand(jobs: list[Job], checked: int, texts: dict[Path, bytes], check: Mode, cache: Cache | None,
               workers: int, progress: Tally, label: str) -> tuple[list[Job], list[FileFix | None]]:
    """The first `checked` jobs, and of the others (the rest of their packages) only those whose
    facts they use, as deep as needed (synclint.project.demand), each checked once; the jobs
    and their results, the checked ones first. Once those are more than half of the jobs, all
    of them: a run over the package costs at most twice as much, and its state is kept for the
    next run."""
    modules: dict[str, int] = {}
    for i, job in enumerate(jobs):
        if job.settings.project_analysis and job.project.module:
            modules.setdefault(job.project.module, i)

    read = _given(jobs[:checked], _reader(cache, texts))  # keeps what it reads in `texts`

    def text(i: int) -> bytes:
        path = jobs[i].path
        if path not in texts:
            try:
                texts[path] = read(path)
            except OSError:
                texts[path] = b""
        return texts[path]

    demand = Demand(modules, text)
    demand.check([i for i in range(checked) if jobs[i].settings.project_analysis])
    results: dict[int, FileFix | None] = {}
    first = list(range(checked))
    while True:
        todo = sorted(set(first) | set(demand.take()) - results.keys())
        first = []
        if not todo:
            # Every syncing property the files may read: the plain fields of that name too.
            properties = ProjectIndex([item.result.summary for item in results.values()
                                       if item is not None and item.result.summary is not None]).property_map()
            demand.assigning(set(properties))
            todo = sorted(set(demand.take()) - results.keys())
            if not todo:
                break
        if len(demand.asked | results.keys() | set(todo)) * 2 > len(jobs):
            # Most of the package: all of it, as a run over the package (whose state is kept).
            todo = sorted(set(range(len(jobs))) - results.keys())
        for i, item in zip(todo, _check_all([jobs[i] for i in todo], check, cache, workers, progress, label)):
            results[i] = item
        if len(results) == len(jobs):
            break
        for i in todo:
            item = results[i]
            demand.learn(i, item.result.summary if item is not None else None)
    order = [*range(checked), *sorted(i for i in results if i >= checked)]
    return [jobs[i] for i in order], [results[i] for i in order]


def _given_view(job: Job, view: ProjectView | None) -> Job:
    """The job, to be checked with the facts `view` holds (None or empty: none)."""
    return replace(job, project=replace(job.project, view=view or None))


def _fixed(jobs: list[Job], results: list[FileFix | None], mode: Mode, workers: int, progress: "_Phases",
           cache: Cache | None = None) -> list[FileFix | None]:
    """With --fix/--diff: the files whose findings have fixes to apply, fixed with their views.

    Each fix starts from what the run's check found (its first round is not checked again).
    With --diff, which writes nothing, a file's outcome is cached, keyed as its check is and
    by the view and the unsafe-ness of the run: `--diff` on a cached tree fixes nothing again.
    """
    if not mode.fix:
        return results
    todo: list[tuple[int, Job, str | None]] = []
    for i, item in enumerate(results):
        if item is None or not _has_fixes(item.result.findings, jobs[i].settings, mode):
            continue
        job, key = jobs[i], None
        if cache is not None:
            try:
                digest = cache.digest(job.path)
            except OSError:
                digest = None  # the fix reports it
            if digest is not None:
                seen = FileResult(job.shown, item.result.findings, analysis=item.result.analysis,
                                  hidden_tests=item.result.hidden_tests)
                job = replace(job, checked=(digest, seen))
                if not mode.write:
                    key = _fix_key(cache, job, mode)
                    hit = cache.get(key, FileFix)
                    if hit is not None:
                        results[i] = hit
                        continue
        todo.append((i, job, key))
    fixed = _check_all([job for _, job, _ in todo], mode, None, workers, progress,
                       "fixing" if mode.write else "working out the fixes")
    for (i, _, key), item in zip(todo, fixed):
        results[i] = item
        if cache is not None and key is not None and item is not None and not item.result.internal_error:
            cache.put(key, item)
    return results


def _fix_key(cache: Cache, job: Job, mode: Mode) -> str:
    """The key of a --diff outcome: as the file's check entry, and the view and unsafe-ness."""
    unsafe = mode.unsafe or job.settings.unsafe_fixes
    view = job.project.view
    fields = ",".join(sorted(job.project.host_fields))
    return cache.key(cache.digest(job.path), job.shown, job.settings,
                     f"diff:{unsafe}:{job.settings.view_key()}:{job.project.module}:{view.digest() if view else ''}:"
                     f"{fields}")


def _listings(folders: set[str]) -> dict[str, tuple[str, ...]]:
    found = {}
    for folder in folders:
        try:
            found[folder] = listing(folder)
        except OSError:
            continue
    return found


def _state_keys(cache: Cache, work: list[Job], cwd: Path) -> list[str]:
    """The keys of the package state, one per package these files belong to (a tree may hold a
    vendored package beside its own), run from `cwd` with these settings; a run over files of
    one package asks for its key (none: nothing to keep, as when no file lies in a package)."""
    roots = sorted({os.fspath(root) for job in work
                    if job.settings.project_analysis and (root := package_root(job.path)) is not None})
    settings = sorted({one.cache_key() for one in {id(job.settings): job.settings for job in work}.values()})
    keys = []
    for folder in roots:
        names = "\0".join([os.fspath(cwd), folder, "\0", *settings])
        keys.append(cache.key(names.encode("utf-8", "surrogateescape"), "", work[0].settings, "package-state"))
    return keys


def _entry_key(cache: Cache, job: Job, digest: bytes | None = None) -> str:
    """The key of the file's entry (OSError: it cannot be read, which its check reports); with
    `digest`, of the entry of a file with bytes of that sha256 digest (check_unsaved)."""
    view = job.project.view
    fields = ",".join(sorted(job.project.host_fields))
    if digest is None and job.data is not None:
        digest = hashlib.sha256(job.data).digest()
    return cache.key(cache.digest(job.path) if digest is None else digest, job.shown, job.settings,
                     f"check:{job.project.module}:{view.digest() if view else ''}:{fields}")


def _snapshot_key(jobs: list[Job], cache: Cache | None) -> str | None:
    """The key of the project snapshot of a run over exactly these files with these bytes (None:
    no cache, or a file that cannot be read, which its check reports)."""
    if cache is None:
        return None
    project = hashlib.sha256(b"project-snapshot")
    for job in sorted(jobs, key=lambda job: job.shown):
        try:
            project.update(_entry_key(cache, job).encode())
        except OSError:
            return None
    return project.hexdigest()


def _with_text_facts(jobs: list[Job], read: Callable[[Path], bytes], state: PackageState | None = None
                     ) -> tuple[list[Job], dict[str, Declarations]]:
    """The jobs, each told what its package's text says (synclint.project.text_facts): the
    multimodal inputs kept on the CPU; with the declarations of each module. `state`: what a
    kept state knew of the package's other files."""
    analysed = [i for i, job in enumerate(jobs) if job.settings.project_analysis]
    projects, declarations = with_text_facts(
        [(jobs[i].path, jobs[i].project) for i in analysed], read, state.declarations if state is not None else None)
    placed = list(jobs)
    for i, project in zip(analysed, projects):
        if project is not jobs[i].project:
            placed[i] = replace(jobs[i], project=project)
    return placed, declarations


def _placed(job: Job) -> Job:
    if not job.settings.project_analysis:
        return job
    module, package = module_name(job.path)
    return replace(job, project=ProjectFile(module, package))


def _package_files(work: list[Job], paths: list[Path], resolver: SettingsResolver, cwd: Path,
                   walked: set[str]) -> list[Job]:
    """The other files of the packages the checked files belong to (their outermost package
    folders), to index: a property or helper may be defined outside the files checked."""
    roots = {root for job in work if job.settings.project_analysis and (root := package_root(job.path)) is not None}
    named = [p.absolute() for p in paths if p.is_dir()]
    roots = {root for root in roots if not any(root == top or top in root.parents for top in named)}
    if not roots:
        return []
    checked = {os.path.abspath(job.path) for job in work}
    extra: list[Job] = []
    for item in discover(sorted(roots), resolver, force_exclude=True, walked=walked):
        if isinstance(item, Target) and os.path.abspath(item.path) not in checked:
            checked.add(os.path.abspath(item.path))
            extra.append(Job(item.path, display_path(item.path, cwd), resolver.for_path(item.path)))
    return extra


def _has_fixes(findings, settings: Settings, mode: Mode) -> bool:
    """Whether this run would apply a fix of one of `findings`."""
    unsafe = mode.unsafe or settings.unsafe_fixes
    return any(f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE) for f in findings)


def _from_cache(work: list[Job], results: list, cache: Cache, mode: Mode) -> dict[int, str]:
    """Fill `results` with cache hits; return the keys of the misses, to store their results later.

    Entries hold what a plain check found. A fix run uses a hit only when none of its findings
    has a fix that this run would apply: the file would not change, so its findings stand.
    A file checked with a project view is keyed by the view's digest too.
    """
    misses: dict[int, str] = {}
    views: dict[int, View] = {}
    for i, job in enumerate(work):
        try:
            key = _entry_key(cache, job)
        except OSError:
            continue  # the check itself reports it
        entry = cache.get(key, Entry)
        if entry is not None:
            view = views.get(id(job.settings))
            if view is None:
                view = views[id(job.settings)] = View(job.settings)
            result = _cached_result(entry, job, view)
            if mode.fix and _has_fixes(result.findings, job.settings, mode):
                entry = None
        if entry is None:
            misses[i] = key
        else:
            results[i] = FileFix(result, problems=list(entry.warnings))
    return misses


def _cached_result(entry: Entry, job: Job, view: View) -> FileResult:
    """A cache entry's result as this run shows it: `view` filters the stored analysis."""
    findings, hidden = view.shown(entry.findings, job.shown)
    return FileResult(job.shown, findings, summary_data=entry.summary, analysis=entry.findings, hidden_tests=hidden)


def _collect_problems(run: RunResult) -> None:
    for item in run.files:
        if item.result.internal_error:
            run.problems.append(item.result.internal_error)
        run.warnings.extend(item.problems)


def _process_all(work: list[tuple[int, Job]], jobs: int, mode: Mode,
                 advance=lambda n: None) -> Iterator[tuple[int, FileFix]]:
    if jobs <= 1 or len(work) < 2 * FILES_PER_BATCH:
        for index, job in work:
            yield index, _process(job, mode)
            advance(1)
        return
    from concurrent.futures import ProcessPoolExecutor  # not imported by a run over a few files

    # Small batches handed out as workers free up: a large file holds up one batch, not a share.
    batches = [work[i:i + FILES_PER_BATCH] for i in range(0, len(work), FILES_PER_BATCH)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_process_batch, [job for _, job in batch], mode) for batch in batches]
        for batch, future in zip(batches, futures):
            for (index, _), item in zip(batch, future.result()):
                yield index, item
            advance(len(batch))
