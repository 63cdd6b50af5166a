"""`synclint trace [options] -- PROGRAM`: run a program, or every rank of a job, and rank its syncs by the host's wait.

`python script.py` and `python -m module` run in this process under the runtime detector of
`synclint verify` and `pytest --sync-check` (one detector, `synclint.verify`; `session` picks it):

- on CUDA, `CudaDetector` (the sync debug mode and the synchronize wrappers) counts each sync at
  the innermost frame of the user's code; `timing.CallStarts` times each wait, from the start of the
  call that synced to its return; `copies.PageableCopies` adds the non-blocking copies through
  pageable memory, which wait without the debug mode knowing;
- without CUDA, the CPU simulation (`Simulator`, treating every tensor not built from host data
  as a GPU tensor, as the pytest plugin does) records the same sites and operations, untimed:
  a CPU has no queue to wait for, and the report says `simulated`.

`torchrun ...` (`python -m torch.distributed.run ...`, `python -m torch.distributed.launch ...`) runs
as a process of its own (`job`), and every rank it starts traces itself (`rank`); so does every
process a traced program spawns with `torch.multiprocessing`/`multiprocessing` ("spawn"). The table
then has a column per process and the process that waited longest at each site.

Exit status: 0 the program ran (to its end or to a limit) and no sync was recorded; 1 syncs were
recorded; 2 a usage error (no `--`, no such script, a bad option, a report or timeline that cannot be
written, no torch) or the program failed (raised, exited non-zero, a rank failed or was killed, the
launcher failed): what it synced until then is shown and written. Importing this module costs no torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from synclint.trace.processes import ProcessTrace, ending, job_rows, process_summary, read_processes
from synclint.trace.program import Outcome, Program, ProgramError, parse_program, run_program
from synclint.trace.rank import RankLimits
from synclint.trace.recording import Limits, TraceRecording
from synclint.trace.session import Detector, SessionError, Settings, detector, watching

EXIT_CLEAN, EXIT_SYNCS, EXIT_ERROR = 0, 1, 2


def _error(message: str) -> int:
    print(f"synclint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """os.environ with `values` for the processes the program starts; put back afterwards."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _in_process(program: Program, chosen: Detector, limits: Limits, max_seconds: float | None,
                children: dict[str, str]) -> tuple[ProcessTrace, Outcome]:
    recording = TraceRecording(limits)
    with _environment(children), watching(chosen, recording):
        outcome = run_program(program, chosen.detector.is_user, max_seconds, recording.stop)
    if chosen.cuda:
        import torch

        torch.cuda.synchronize()
    main = ProcessTrace(os.getpid(), main=True, events=recording.events, ends=recording.ends,
                        steps=recording.steps, started=recording.started, armed_at=recording.armed_at,
                        end=time.perf_counter(), allowed=recording.allowed, skipped=recording.skipped,
                        stopped=outcome.stopped, error=outcome.error, untimed=chosen.untimed)
    return main, outcome


def run(args: argparse.Namespace, words: list[str]) -> int:
    timeline_path: Path | None = args.timeline
    try:
        program = parse_program(words)
        sources = None if args.source is None else tuple(str(folder) for folder in args.source)
        chosen = detector(Settings(args.device, args.no_times, sources))
    except (ProgramError, SessionError) as exc:
        return _error(str(exc))
    root = Path.cwd()
    skip_syncs, skip_seconds = args.skip_first
    # The ranks use what this process chose (a job's ranks see the same GPUs).
    settings = Settings("cuda" if chosen.cuda else "cpu", args.no_times, sources)
    folder = tempfile.mkdtemp(prefix="synclint-trace-")
    try:
        from synclint.trace.job import rank_environment, run_launcher

        environment = rank_environment(folder, settings, RankLimits(skip_syncs, skip_seconds, args.max_steps))
        failures: list[str] = []
        if program.launcher:
            launched = run_launcher(program.command(), environment, folder, args.max_seconds)
            stopped, error = launched.stopped, launched.error
            processes = read_processes(folder)
            if not processes and stopped is None:
                error = (f"{error} before any rank started" if error is not None else
                         "no rank of the job was traced (its workers are not Python processes given LOCAL_RANK)")
        else:
            children = {key: environment[key] for key in environment if os.environ.get(key) != environment[key]}
            try:
                main, outcome = _in_process(program, chosen, Limits(skip_syncs, skip_seconds, args.max_steps,
                                                                    args.max_seconds), args.max_seconds, children)
            except ProgramError as exc:
                return _error(str(exc))
            stopped, error = outcome.stopped, outcome.error
            processes = [main, *read_processes(folder)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    several = len(processes) > 1 or program.launcher
    for process in processes:
        line = ending(process) if several else None
        if line is not None and not (process.terminated and stopped is not None):
            failures.append(line)
    return _finish(args, program, chosen, root, processes, several, stopped, error, failures, timeline_path)


def _finish(args: argparse.Namespace, program: Program, chosen: Detector, root: Path, processes: list[ProcessTrace],
            several: bool, stopped: str | None, error: str | None, failures: list[str],
            timeline_path: Path | None) -> int:
    timed = chosen.timed
    sites = job_rows(processes, str(root), timed) if processes else []
    wall = sum(process.wall_s() for process in processes)
    codes = None
    if not args.no_check:
        from synclint.trace.table import static_codes

        codes = static_codes(sites, root)
    from synclint.trace.table import render

    columns = [(p.name, p.short) for p in processes] if several else None
    title = f"synclint trace: {program.shown}" + ("" if chosen.cuda else " (simulated on the CPU: no times)")
    if several:
        title += f": {len(processes)} process{'es' if len(processes) != 1 else ''} traced"
    lines = [title, *render(sites, untimed=chosen.untimed, wall_s=wall, codes=codes, root=root, columns=columns)]
    skipped = sum(p.skipped for p in processes)
    allowed = sum(p.allowed for p in processes)
    if skipped:
        lines.append(f"warm-up: {skipped} sync{'s' if skipped != 1 else ''} not recorded (--skip-first)")
    if processes and all(p.armed_at is None for p in processes if p.failed is None):
        lines.append("the warm-up (--skip-first) never ended: nothing was recorded")
    if allowed:
        lines.append(f"{allowed} more in allowed regions (gpu_sync_allowed)")
    if stopped:
        lines.append(f"stopped: {stopped}")
    lines += failures
    print("\n".join(lines), file=sys.stderr)

    code = EXIT_SYNCS if sites else EXIT_CLEAN
    if args.report is not None:
        from synclint.runtime import report_document

        extra = {"processes": [process_summary(p) for p in processes]} if several else {}
        document = report_document("trace", simulated=not chosen.cuda, device=chosen.kind, root=str(root),
                                   allowed=allowed, wall_s=wall if timed else None, command=program.shown,
                                   skipped=skipped, stopped=stopped, completed=error is None and not failures,
                                   **extra, sites=sites)
        try:
            if args.report.is_dir():
                raise IsADirectoryError(21, "Is a directory")
            args.report.parent.mkdir(parents=True, exist_ok=True)
            args.report.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            print(f"sync report written to {args.report}", file=sys.stderr)
        except OSError as exc:
            code = _error(f"cannot write {args.report}: {exc.strerror or exc}")
    if timeline_path is not None:
        from synclint.trace.timeline import write_timeline

        try:
            if timeline_path.is_dir():
                raise IsADirectoryError(21, "Is a directory")
            write_timeline(timeline_path, processes, str(root), program.shown)
            print(f"timeline written to {timeline_path} (open it in https://ui.perfetto.dev or chrome://tracing)",
                  file=sys.stderr)
        except OSError as exc:
            code = _error(f"cannot write {timeline_path}: {exc.strerror or exc}")
    if error is not None:
        return _error(f"{error}; the trace covers what ran before")
    if failures:
        return _error(f"{len(failures)} process{'es' if len(failures) != 1 else ''} of the job did not finish; "
                      "the trace covers what they recorded")
    return code
