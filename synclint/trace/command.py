"""`synclint trace [options] -- python script.py args...`: run a program, rank its syncs by the host's wait.

The program runs in this process under the runtime detector of `synclint verify` and
`pytest --sync-check` (one detector, `synclint.verify`):

- on CUDA, `CudaDetector` (the sync debug mode and the synchronize wrappers) counts each sync at
  the innermost frame of the user's code, and `WaitTimer` times every torch call from Python with
  the host's clock: a call that synced gives its host time to its sync (the wait for the GPU's
  queue, plus microseconds of launch cost); the wrapped synchronize calls time themselves;
- without CUDA, the CPU simulation (`Simulator`, treating every tensor not built from host data
  as a GPU tensor, as the pytest plugin does) records the same sites and operations, untimed:
  a CPU has no queue to wait for, and the report says `simulated`.

Exit status: 0 the program ran (to its end or to a limit) and no sync was recorded; 1 syncs were
recorded; 2 a usage error (no `--`, no such script, a bad option, a report that cannot be written,
no torch) or the program failed (raised, or exited non-zero: what it synced until then is shown
and written). Importing this module costs no torch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from synclint.trace.program import ProgramError, parse_program, run_program
from synclint.trace.recording import Limits, TraceRecording

EXIT_CLEAN, EXIT_SYNCS, EXIT_ERROR = 0, 1, 2


def _error(message: str) -> int:
    print(f"synclint: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _detector(device: str, sources: list[Path] | None):
    """(detector, timed) for `--device`; raises ProgramError when the choice cannot be had."""
    try:
        import torch
    except ImportError:
        raise ProgramError("synclint trace needs torch: pip install 'synclint[verify]'") from None
    from synclint.verify.sites import UserCode

    for folder in sources or ():
        if not folder.is_dir():
            raise ProgramError(f"--source {folder}: no such folder")
    is_user = UserCode(sources=None if sources is None else [str(f) for f in sources])

    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ProgramError(f"--device cuda: torch {torch.__version__} sees no CUDA device; "
                               "--device cpu runs the simulation")
        from synclint.verify.cuda import CudaDetector

        return CudaDetector(is_user), True
    from synclint.verify.cpu import Simulator

    return Simulator(is_user, placement=False), False


def _watch(detector, recording: TraceRecording, timed: bool):
    """The detector's watch, and on CUDA (unless --no-times) the timer of torch calls."""
    from contextlib import ExitStack

    stack = ExitStack()
    stack.enter_context(detector.watch(recording))
    if timed:
        from synclint.verify.cuda import WaitTimer

        stack.enter_context(WaitTimer(recording))
    return stack


def run(args: argparse.Namespace, words: list[str]) -> int:
    try:
        program = parse_program(words)
        detector, cuda = _detector(args.device, args.source)
    except ProgramError as exc:
        return _error(str(exc))
    root = Path.cwd()
    skip_syncs, skip_seconds = args.skip_first
    recording = TraceRecording(Limits(skip_syncs, skip_seconds, args.max_steps, args.max_seconds))
    timed = cuda and not args.no_times
    untimed = None if timed else "not timed: --no-times" if cuda else "simulated on the CPU: counts only, no times"
    try:
        with _watch(detector, recording, timed):
            outcome = run_program(program, detector.is_user, args.max_seconds, recording.stop)
    except ProgramError as exc:
        return _error(str(exc))
    if cuda:
        import torch

        torch.cuda.synchronize()
    end = time.perf_counter()
    wall = recording.watched_seconds(end)
    sites = recording.site_rows(str(root), timed)

    codes = None
    if not args.no_check:
        from synclint.trace.table import static_codes

        codes = static_codes(sites, root)
    from synclint.trace.table import render

    title = f"synclint trace: {program.shown}" + ("" if cuda else " (simulated on the CPU: no times)")
    lines = [title, *render(sites, untimed=untimed, wall_s=wall, codes=codes, root=root)]
    if recording.skipped:
        lines.append(f"warm-up: {recording.skipped} sync{'s' if recording.skipped != 1 else ''} not recorded (--skip-first)")
    if recording.armed_at is None:
        lines.append("the warm-up (--skip-first) never ended: nothing was recorded")
    if recording.allowed:
        lines.append(f"{recording.allowed} more in allowed regions (gpu_sync_allowed)")
    if outcome.stopped:
        lines.append(f"stopped: {outcome.stopped}")
    print("\n".join(lines), file=sys.stderr)

    if args.report is not None:
        from synclint.runtime import report_document

        document = report_document("trace", simulated=not cuda, device=detector.kind, root=str(root),
                                   allowed=recording.allowed, wall_s=wall if timed else None,
                                   command=program.shown, skipped=recording.skipped, stopped=outcome.stopped,
                                   completed=outcome.error is None, sites=sites)
        try:
            args.report.parent.mkdir(parents=True, exist_ok=True)
            args.report.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            return _error(f"cannot write {args.report}: {exc.strerror or exc}")
        print(f"sync report written to {args.report}", file=sys.stderr)
    if outcome.error is not None:
        return _error(f"{outcome.error}; the trace covers what ran before")
    return EXIT_SYNCS if sites else EXIT_CLEAN
