"""Checking many files: a job per file, through the cache and a process pool; and fixing them."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from synclint.cache.entries import Entry
from synclint.cache.signatures import Signature
from synclint.cache.store import Cache
from synclint.config import Settings
from synclint.engine import (
    INTERNAL_ERROR,
    PARSE_ERROR,
    FileResult,
    check_bytes,
    check_file,
)
from synclint.files import relative_to_root
from synclint.fixes import FileFix, fix_file
from synclint.model import Applicability
from synclint.noqa import unknown_codes
from synclint.project.facts import ProjectFile
from synclint.tally import PhaseCount, Phases
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
    noqa_added: Counter = field(default_factory=Counter)  # --add-noqa: the findings silenced, by code
    noqa_files: int = 0  # --add-noqa: the files written

    @property
    def findings(self):
        return sorted((f for r in self.files for f in r.result.findings), key=lambda f: f.sort_key)

    @property
    def hidden_tests(self) -> int:
        """Findings in test code that the view left out (`include-tests` off)."""
        return sum(item.result.hidden_tests for item in self.files)

    @property
    def hidden_contexts(self) -> int:
        """Findings that `ignore-contexts` alone left out."""
        return sum(item.result.hidden_contexts for item in self.files)

    @property
    def fixed(self):
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
    add_noqa: bool = False  # --add-noqa: silence every finding a check shows with a comment (runner.run_paths)
    debug: bool = False


def too_large(size: int, shown: str, settings: Settings) -> FileFix | None:
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
        skipped = too_large(path.stat().st_size, shown, settings)
    except OSError:
        skipped = None  # reading it reports the problem
    if skipped is not None:
        return skipped
    if job.data is not None:
        item = FileFix(check_bytes(job.data, shown, settings, mode.debug, job.project))
    elif not mode.fix:
        item = FileFix(check_file(path, shown, settings, mode.debug, job.project))
    else:
        unsafe = mode.unsafe or settings.unsafe_fixes
        item = fix_file(path, shown, settings, unsafe, mode.write, mode.debug, job.project, job.checked)
    return with_noqa_warnings(item, settings)


def with_noqa_warnings(item: FileFix, settings: Settings) -> FileFix:
    """Warn about `# noqa: SYNC999`: a code that is no rule silences nothing (ruff's unused-noqa)."""
    source = item.result.source
    if source is not None and "noqa" in source.text.lower():
        known = {rule.code for rule in settings.rules} | {PARSE_ERROR[0], INTERNAL_ERROR[0]}
        for row, code in unknown_codes(source.text, known):
            item.problems.append(f"{item.result.path}:{row}: `# noqa` names {code}, which is no rule")
    item.result.source = None  # the text is not needed any more: do not send it back from a worker
    return item


def check_data(data: bytes, job: Job, cache: Cache | None, store: bool, debug: bool) -> FileResult:
    """`check_bytes` of a job's text, through the cache (the key a file of these bytes has);
    a new result is stored only with `store`."""
    key = entry_key(cache, job, hashlib.sha256(data).digest()) if cache is not None else None
    entry = cache.get(key, Entry) if cache is not None and key is not None else None
    if entry is not None:
        return _cached_result(entry, job, View(job.settings))
    result = check_bytes(data, job.shown, job.settings, debug, job.project)
    if store and cache is not None and key is not None and not result.internal_error:
        summary = result.summary
        item = with_noqa_warnings(FileFix(result), job.settings)  # as `_process` stores it
        cache.put(key, Entry.of(result.analysis or [], item.problems, summary))
    return result


def _process_batch(batch: list[Job], mode: Mode) -> list[FileFix]:
    return [_process(job, mode) for job in batch]


def check_all(work: list[Job], mode: Mode, cache: Cache | None, workers: int, progress: Phases,
               label: str = "checking") -> list[FileFix | None]:
    """Each job checked (or fixed) once, through the cache; the results in the jobs' order.
    `label`: what the progress display says of this phase."""
    results: list[FileFix | None] = [None] * len(work)
    keys: dict[int, str] = {}
    if cache is not None:
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


def fix_checked(jobs: list[Job], results: list[FileFix | None], mode: Mode, workers: int, progress: "Phases",
           cache: Cache | None = None) -> list[FileFix | None]:
    """With --fix/--diff: the files whose findings have fixes to apply, fixed with their answers.

    Each fix starts from what the run's check found (its first round is not checked again).
    With --diff, which writes nothing, a file's outcome is cached, keyed as its check is and
    by the answers and the unsafe-ness of the run: `--diff` on a cached tree fixes nothing again.
    """
    if not mode.fix:
        return results
    todo: list[tuple[int, Job, str | None]] = []
    for i, item in enumerate(results):
        if item is None or not _has_fixes(item.result.findings, jobs[i].settings, mode):
            continue
        job, key = jobs[i], None
        # The fix starts from what the check found, cached or not (`--no-cache` too): a check of the
        # file alone may lack the findings other files' facts gave it, and their fixes with them.
        try:
            digest = cache.digest(job.path) if cache is not None else hashlib.sha256(job.path.read_bytes()).digest()
        except OSError:
            digest = None  # the fix reports it
        if digest is not None:
            seen = FileResult(job.shown, item.result.findings, analysis=item.result.analysis,
                              hidden_tests=item.result.hidden_tests, hidden_contexts=item.result.hidden_contexts)
            job = replace(job, checked=(digest, seen))
            if cache is not None:
                if not mode.write:
                    key = _fix_key(cache, job, mode)
                    hit = cache.get(key, FileFix)
                    if hit is not None:
                        results[i] = hit
                        continue
        todo.append((i, job, key))
    fixed = check_all([job for _, job, _ in todo], mode, None, workers, progress,
                       "fixing" if mode.write else "working out the fixes")
    for (i, _, key), item in zip(todo, fixed):
        results[i] = item
        if cache is not None and key is not None and item is not None and not item.result.internal_error:
            cache.put(key, item)
    return results


def _fix_key(cache: Cache, job: Job, mode: Mode) -> str:
    """The key of a --diff outcome: as the file's check entry, and the answers and unsafe-ness."""
    unsafe = mode.unsafe or job.settings.unsafe_fixes
    answers = job.project.answers
    fields = ",".join(sorted(job.project.host_fields))
    return cache.key(cache.digest(job.path), job.shown, job.settings,
                     f"diff:{unsafe}:{job.settings.view_key()}:{job.project.module}:{answers.digest() if answers else ''}:"
                     f"{fields}")


def entry_key(cache: Cache, job: Job, digest: bytes | None = None) -> str:
    """The key of the file's entry (OSError: it cannot be read, which its check reports); with
    `digest`, of the entry of a file with bytes of that sha256 digest (check_unsaved)."""
    answers = job.project.answers
    fields = ",".join(sorted(job.project.host_fields))
    if digest is None and job.data is not None:
        digest = hashlib.sha256(job.data).digest()
    return cache.key(cache.digest(job.path) if digest is None else digest, job.shown, job.settings,
                     f"check:{job.project.module}:{answers.digest() if answers else ''}:{fields}")


def _has_fixes(findings, settings: Settings, mode: Mode) -> bool:
    """Whether this run would apply a fix of one of `findings`."""
    unsafe = mode.unsafe or settings.unsafe_fixes
    return any(f.fix is not None and (unsafe or f.fix.applicability is Applicability.SAFE) for f in findings)


def _from_cache(work: list[Job], results: list, cache: Cache, mode: Mode) -> dict[int, str]:
    """Fill `results` with cache hits; return the keys of the misses, to store their results later.

    Entries hold what a plain check found. A fix run uses a hit only when none of its findings
    has a fix that this run would apply: the file would not change, so its findings stand.
    A file checked with the project's answers is keyed by their digest too.
    """
    misses: dict[int, str] = {}
    views: dict[int, View] = {}
    for i, job in enumerate(work):
        try:
            key = entry_key(cache, job)
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
    findings, hidden, dropped = view.shown(entry.findings, job.shown)
    return FileResult(job.shown, findings, summary_data=entry.summary, analysis=entry.findings, hidden_tests=hidden,
                      hidden_contexts=dropped)


def collect_problems(run: RunResult) -> None:
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
    from concurrent.futures import (
        ProcessPoolExecutor,  # not imported by a run over a few files
    )

    # Small batches handed out as workers free up: a large file holds up one batch, not a share.
    batches = [work[i:i + FILES_PER_BATCH] for i in range(0, len(work), FILES_PER_BATCH)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_process_batch, [job for _, job in batch], mode) for batch in batches]
        for batch, future in zip(batches, futures):
            for (index, _), item in zip(batch, future.result()):
                yield index, item
            advance(len(batch))
