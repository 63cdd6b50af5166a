"""Progress on a terminal, for a run that lasts more than about a second.

What it shows: the phase (checking; during the first look at a package, that it is being indexed
once for project analysis; the second look of project analysis; fixing), files done and total,
and the time since the run started. It appears only after DELAY_S, so a run that ends sooner
(pre-commit on one file, a warm run) draws nothing, and it is erased when the run ends, before
the report is printed.

Whether to show it at all is the command's choice (`wanted`): never in a pipe, with `CI` set,
with `--quiet`, or when a machine format (json, sarif, github) is written to standard output.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Self

DELAY_S = 1.0
MACHINE_FORMATS = ("json", "sarif", "github")


def wanted(*, quiet: bool, output_format: str, output_file: bool, stdin: bool = False) -> bool:
    """Whether a run may show progress: both standard streams on a terminal (or the report going
    to a file), no `CI`, no --quiet, no machine format on standard output."""
    if quiet or stdin or os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    if not output_file and (output_format in MACHINE_FORMATS or not _isatty(sys.stdout)):
        return False
    return _isatty(sys.stderr)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Progress:
    """A progress display on standard error, shown once the run has lasted `delay` seconds.

    `phase(label, total, done)` starts a phase and returns the function that advances it; the
    calls cost nothing when the display is off. Use it as a context manager: leaving it erases
    the display."""

    def __init__(self, enabled: bool, delay: float | None = None) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._label, self._total, self._done = "", 0, 0
        self._bar: Any = None  # rich.progress.Progress, once shown
        self._task: Any = None
        self._closed = False
        self._timer: threading.Timer | None = None
        if enabled:
            self._timer = threading.Timer(DELAY_S if delay is None else delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def phase(self, label: str, total: int, done: int = 0) -> Callable[[int], None]:
        if not self.enabled:
            return _nothing
        with self._lock:
            self._label, self._total, self._done = label, total, done
            if self._bar is not None:
                self._bar.update(self._task, description=label, total=total, completed=done)
        return self._advance

    def _advance(self, n: int) -> None:
        with self._lock:
            self._done += n
            if self._bar is not None:
                self._bar.update(self._task, completed=self._done)

    def _show(self) -> None:
        with self._lock:
            if self._closed:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bar

            stream = getattr(sys.stderr, "uncaptured", sys.stderr)  # not into a replay record
            started = self._started
            bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
                      _Elapsed(started), console=Console(file=stream, force_terminal=True), transient=True,
                      refresh_per_second=4)
            self._task = bar.add_task(self._label, total=self._total, completed=self._done)
            bar.start()
            bar.refresh()
            self._bar = bar

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


def _nothing(n: int) -> None:
    pass


def _Elapsed(started: float):
    """A column with the time since the run started (rich's TimeElapsedColumn counts per phase)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Elapsed(ProgressColumn):
        def render(self, task) -> Text:
            seconds = int(time.monotonic() - started)
            return Text(f"{seconds // 60}:{seconds % 60:02d}", style="progress.elapsed")

    return Elapsed()


OFF = Progress(False)
