"""Checking files with project analysis: first looks, one solve, the second looks that use its answers.

Also what the language server and pre-commit ask of a package another run indexed: its kept
state (`package_state`) and one file checked against it (`check_unsaved`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import cast

from synclint.cache.entries import PackageState, Packed, ProjectSnapshot
from synclint.cache.replay import RACY_NS, inputs_of
from synclint.cache.signatures import listing
from synclint.cache.store import Cache
from synclint.config import Settings, SettingsResolver
from synclint.engine import FileResult
from synclint.evidence import Certainty, Reach
from synclint import policy
from synclint.model import ENGINE_CODES, Finding
from synclint.files import Target, discover
from synclint.fixes import FileFix
from synclint.jobs import (
    Job,
    Mode,
    RunResult,
    check_all,
    check_data,
    display_path,
    entry_key,
    fix_checked,
    too_large,
)
from synclint.project.demand import Demand
from synclint.project.facts import ProjectFile, Answers
from synclint.project.how_often import Runs
from synclint.project.index import ProjectIndex
from synclint.project.placement import module_name, package_root
from synclint.project.text_facts import Declarations, with_text_facts
from synclint.tally import Tally
from synclint.view import View


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
    run over that one file after an edit checks it (pre-commit; `check_project`): with project
    analysis, against the facts `state` (see `package_state`) holds of the other files of its
    package (`_checked_against`); with no state, the file alone (as a first run looks at each
    file first). Returns the result, and the file's place in the project as it was checked
    (the solved facts it was given).

    The cache is read; an entry is written only when `data` is the file on disk, not for the
    versions an edit goes through, which no run will meet again."""
    job = Job(path, display_path(path, cwd), settings)
    skipped = too_large(len(data), job.shown, settings)
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
        return check_data(data, job, cache, store, debug), job.project
    index: ProjectIndex = state.index  # type: ignore[assignment]  # (cache.py keeps it untyped)
    kept = state.summaries.get(job.shown)  # as `_checked_against`: first the facts it was last checked with
    if kept is not None:
        job = _given_answers(job, index.answers_for(kept))
    result = check_data(data, job, cache, store, debug)
    if result.summary is not None:
        again = _given_answers(job, index.answers_for(result.summary))
        if _answers_digest(again) != _answers_digest(job):
            job = again
            result = check_data(data, job, cache, store, debug)
    return with_frequency(index, job, result), job.project


def check_project(work: list[Job], paths: list[Path], resolver: SettingsResolver, mode: Mode, cache: Cache | None,
                   workers: int, progress: Tally, cwd: Path, run: RunResult) -> list[FileFix | None]:
    """Checks with project analysis (synclint.project), each file analysed at most twice:

    1. First looks: every checked file, and the other files of their packages whose facts they
       use, checked with no facts of other files. Each check yields the file's findings and its
       summary, which depends on the file alone (so it never needs another look).
    2. One solve: the summaries joined in a `ProjectIndex`, solved once to a fixed point.
    3. Answers: each checked file whose facts from the rest of the project (`answers_for`) are not
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
        kept_index = cast(ProjectIndex, state.index)
        results = _frequencies(kept_index, jobs, _checked_against(kept_index, state.summaries, jobs, check, cache,
                                                                 workers, progress))
        return _frequencies(kept_index, jobs, fix_checked(jobs, results, mode, workers, progress, cache))
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
        index = cast(ProjectIndex, snapshot.index)
        results = _checked_against(index, snapshot.summaries, shown, check, cache, workers, progress)
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
            results = check_all(jobs, check, cache, workers, progress, label)
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
    results = _frequencies(index, shown, results[: len(work)])
    return _frequencies(index, shown, fix_checked(shown, results, mode, workers, progress, cache))


def with_frequency(index: ProjectIndex, job: Job, result: FileResult) -> FileResult:
    """`result` with what the solve says of where and how often each finding's function runs
    (synclint.project.how_often), applied as data: its context, `because` and reach follow from it;
    the policy decides its confidence again, and the view shows it again."""
    findings = result.analysis if result.analysis is not None else result.findings
    if not job.settings.project_analysis:
        return result
    solved = [_how_often(index, f) for f in findings]
    if all(new is old for new, old in zip(solved, findings)):
        return result
    shown, hidden, dropped = View(job.settings).shown(solved, job.shown)
    return replace(result, findings=shown, analysis=solved if result.analysis is not None else None,
                   hidden_tests=result.hidden_tests if result.analysis is None else hidden,
                   hidden_contexts=result.hidden_contexts if result.analysis is None else dropped)


def _how_often(index: ProjectIndex, finding: Finding) -> Finding:
    """One finding's context, reach and `because` after the solve (see `with_frequency`). What its own
    file shows of the line (set-up code, a test, an interval) stands; the function's frequency decides
    the rest: a loop in code that runs once, on the host or in tests runs as that code does, unless it
    runs a model (a training loop in `main()`)."""
    evidence = finding.evidence
    if finding.code in ENGINE_CODES or finding.context in ("init", "test", "host", "never") or evidence is None:
        return finding  # (what a solve decided already, too: a run applies it to its results more than once)
    solved = index.how_often(finding.function)
    if solved is None:
        if finding.function is None and finding.context == "loop" and evidence.loop == "plain":
            why = "in a loop at the top level of a module that runs no model: once, when the module runs"
            return policy.resolve(finding, evidence.with_fact(why, runs="init"))
        return finding
    why = solved.describe()
    model_loop = evidence.loop == "model" or (evidence.loop == "plain" and solved.loops_run_model)
    if solved.runs is Runs.REPEATS:
        if finding.context == "code":
            return policy.resolve(finding, evidence.with_fact(why, runs="step"))
        return finding
    if solved.runs is Runs.LOOPS:
        return policy.resolve(finding, evidence.with_fact(why, runs="loop")) if finding.context == "code" else finding
    if solved.runs is Runs.UNKNOWN:
        return finding  # a loop in it repeats per call, whatever how often it is called
    if solved.runs is Runs.ONCE:
        if model_loop or finding.context == "step":
            return finding  # a training loop in `main()`; a per-step method nested in a function that runs once
        return policy.resolve(finding, evidence.with_fact(why, runs="init"))
    if solved.runs is Runs.HOST:
        if evidence.value is Certainty.HIGH:  # the code itself puts it on the GPU: every batch
            why = solved.describe("every batch, in data loading")
            return policy.resolve(finding, evidence.with_fact(why, runs="step")) if finding.context == "code" else finding
        return policy.resolve(finding, evidence.with_fact(why, runs="host", reach=Reach.HOST_SIDE))
    if solved.runs is Runs.TESTS:
        return policy.resolve(finding, evidence.with_fact(why, runs="test"))
    return policy.resolve(finding, evidence.with_fact(why, runs="never"))


def _frequencies(index: ProjectIndex, jobs: list[Job], results: list[FileFix | None]) -> list[FileFix | None]:
    """`with_frequency` for each job's result."""
    return [item if item is None else replace(item, result=with_frequency(index, job, item.result))
            for job, item in zip(jobs, results)]


def _answered(index: ProjectIndex, jobs: list[Job], firsts: list[FileFix | None], check: Mode, cache: Cache | None,
              workers: int, progress: Tally) -> list[FileFix | None]:
    """Step 3 of `check_project`: each job whose first look (`firsts`) has a summary and whose
    facts from `index` are not empty is given them (in place) and checked once more."""
    results = list(firsts)
    again: list[int] = []
    for i, item in enumerate(firsts):
        summary = item.result.summary if item is not None else None
        if summary is None or not jobs[i].settings.project_analysis:
            continue
        answers = index.answers_for(summary)
        if answers:
            jobs[i] = _given_answers(jobs[i], answers)
            again.append(i)
    if again:
        redone = check_all([jobs[i] for i in again], check, cache, workers, progress,
                            "project analysis: a second look at the files that use other files' facts")
        for i, item in zip(again, redone):
            results[i] = item
    return results


def _checked_against(index: ProjectIndex, kept: Packed, jobs: list[Job], check: Mode, cache: Cache | None,
                     workers: int, progress: Tally) -> list[FileFix | None]:
    """The jobs checked against a kept `index`, as a run over the whole package checks them.

    A file's facts (`answers_for`) depend on its summary only through what it names (its calls,
    attributes, classes, functions), which no fact changes: so each file is checked first with
    the facts of the summary the index was solved with (`kept`: an edit seldom changes what a
    file names), and once more only if its own summary asks for other facts."""
    for i, job in enumerate(jobs):
        summary = kept.get(job.shown) if job.settings.project_analysis else None
        if summary is not None:
            jobs[i] = _given_answers(job, index.answers_for(summary))
    results = check_all(jobs, check, cache, workers, progress)
    again: list[int] = []
    for i, item in enumerate(results):
        summary = item.result.summary if item is not None else None
        if summary is None or not jobs[i].settings.project_analysis:
            continue
        job = _given_answers(jobs[i], index.answers_for(summary))
        if _answers_digest(job) != _answers_digest(jobs[i]):
            jobs[i] = job
            again.append(i)
    if again:
        for i, item in zip(again, check_all([jobs[i] for i in again], check, cache, workers, progress)):
            results[i] = item
    return results


def _answers_digest(job: Job) -> str:
    answers = job.project.answers
    return answers.digest() if answers else ""


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
        for i, item in zip(todo, check_all([jobs[i] for i in todo], check, cache, workers, progress, label)):
            results[i] = item
        if len(results) == len(jobs):
            break
        for i in todo:
            item = results[i]
            demand.learn(i, item.result.summary if item is not None else None)
    order = [*range(checked), *sorted(i for i in results if i >= checked)]
    return [jobs[i] for i in order], [results[i] for i in order]


def _given_answers(job: Job, answers: Answers | None) -> Job:
    """The job, to be checked with the solved facts `answers` (None or empty: none)."""
    return replace(job, project=replace(job.project, answers=answers or None))


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


def _snapshot_key(jobs: list[Job], cache: Cache | None) -> str | None:
    """The key of the project snapshot of a run over exactly these files with these bytes (None:
    no cache, or a file that cannot be read, which its check reports)."""
    if cache is None:
        return None
    project = hashlib.sha256(b"project-snapshot")
    for job in sorted(jobs, key=lambda job: job.shown):
        try:
            project.update(entry_key(cache, job).encode())
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
