"""Progress of a run: a display on a terminal, plain lines in a log.

What it says: the phase (checking; during the first look at a package, that it is being indexed
once for project analysis; the second look of project analysis; fixing), files done and total,
and the time since the run started. Done and total count the files of every phase so far, so
neither goes backwards when a phase ends and another begins (a second look adds its files).

How (`display`): when standard error is a terminal, whatever standard output is (a file, a pipe,
the terminal), a bar, as git shows its progress: it appears only after DELAY_S, so a run that
ends sooner (pre-commit on one file, a warm run) draws nothing, and it is erased when the run
ends, before the report is printed. Elsewhere (a pipe, a CI log, `CI` set, `TERM=dumb`) a run
that lasts says on standard error what it is doing once every EVERY_S, so that a log does not
look hung (CI services kill a job silent for ten minutes). Nothing with --quiet, or when the
source comes on standard input. The report itself never changes: both go to standard error.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, Self

DELAY_S = 1.0
EVERY_S = 30.0
Display = Literal["bar", "lines"] | None


def display(*, quiet: bool, stdin: bool = False) -> Display:
    """How a run shows its progress (module docstring): "bar", "lines" or None."""
    if quiet or stdin:
        return None
    if os.environ.get("CI") or os.environ.get("TERM") == "dumb" or not _isatty(sys.stderr):
        return "lines"
    return "bar"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _clock(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """The progress of a run on standard error (`kind`: "bar", "lines" or None for none).

    `phase(label, total, done)` starts a phase of `total` files, `done` of them already done (from
    the cache), and returns the function that advances it; the calls cost nothing when there is
    no display. Use it as a context manager: leaving it erases the bar and ends the lines."""

    def __init__(self, kind: Display, delay: float | None = None, every: float | None = None) -> None:
        self.kind = kind
        self.enabled = kind is not None
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._label, self._before, self._total, self._done = "", 0, 0, 0
        self._bar: Any = None  # rich.progress.Progress, once shown
        self._task: Any = None
        self._closed = threading.Event()
        self._timer: threading.Timer | None = None
        if kind == "bar":
            self._timer = threading.Timer(DELAY_S if delay is None else delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        elif kind == "lines":
            thread = threading.Thread(target=self._lines, args=(EVERY_S if every is None else every,), daemon=True)
            thread.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def phase(self, label: str, total: int, done: int = 0) -> Callable[[int], None]:
        if not self.enabled:
            return _nothing
        with self._lock:
            self._before += self._total  # the phase before is over: its files count as done
            self._label, self._total, self._done = label, total, done
            if self._bar is not None:
                self._bar.update(self._task, description=label, total=self._before + total,
                                 completed=self._before + done)
        return self._advance

    def shown(self) -> tuple[str, int, int]:
        """What the display says now: the phase, the files done and the total."""
        with self._lock:
            return self._label, self._before + self._done, self._before + self._total

    def _advance(self, n: int) -> None:
        with self._lock:
            self._done += n
            if self._bar is not None:
                self._bar.update(self._task, completed=self._before + self._done)

    def _stream(self):
        return getattr(sys.stderr, "uncaptured", sys.stderr)  # not into a replay record

    def _lines(self, every: float) -> None:
        while not self._closed.wait(every):
            with self._lock:  # never after `close` has returned: the report follows it
                if self._closed.is_set():
                    return
                done, total = self._before + self._done, self._before + self._total
                try:
                    stream = self._stream()
                    stream.write(f"synclint: {self._label or 'starting'}: {done}/{total} files "
                                 f"({_clock(self._started)})\n")
                    stream.flush()
                except (OSError, ValueError):  # standard error closed
                    return

    def _show(self) -> None:
        with self._lock:
            if self._closed.is_set():
                return
            from rich.console import Console

            bar = make_bar(Console(file=self._stream(), force_terminal=True), self._started)
            self._task = bar.add_task(self._label, total=self._before + self._total,
                                      completed=self._before + self._done)
            bar.start()
            bar.refresh()
            self._bar = bar

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
                self._bar = None


def make_bar(console, started: float):
    """The bar on `console`: the phase, then a short bar, files done and total, and the time since
    `started`. Each is always whole: where the line is too narrow for the phase (a long package
    name at 80 columns), the phase goes on over a second line, as a word-wrapped cell (cut short
    with an ellipsis, it hid what was being indexed; squeezed, it once cut the counters to
    `13… files 0:…`)."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as Bar
    from rich.table import Column

    def whole() -> Column:
        return Column(no_wrap=True)

    return Bar(TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=False, overflow="fold")),
               BarColumn(bar_width=BAR_WIDTH, table_column=whole()), MofNCompleteColumn(table_column=whole()),
               TextColumn("files", table_column=whole()), _Elapsed(started, whole()), console=console,
               transient=True, refresh_per_second=4, expand=True)


BAR_WIDTH = 10


def _nothing(n: int) -> None:
    pass


def _Elapsed(started: float, column=None):
    """A column with the time since the run started (rich's TimeElapsedColumn counts per phase)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Elapsed(ProgressColumn):
        def render(self, task) -> Text:
            return Text(_clock(started), style="progress.elapsed")

    return Elapsed(table_column=column)


OFF = Progress(None)
