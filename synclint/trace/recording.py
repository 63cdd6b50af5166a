"""What a trace keeps: the detector's events after the warm-up, until a limit stops the program.

`TraceRecording` is the `Recording` that the detector (`synclint.verify.cpu.Simulator` or
`synclint.verify.cuda.CudaDetector`) adds its events to. It drops the events of the warm-up
(`--skip-first N` syncs, or `Ns` seconds from the start) and stops the program (`StopTrace`)
once the busiest site has been seen `--max-steps` times after it, or `--max-seconds` after the
start (in a rank of a job, `stopper` asks `synclint trace` to stop the whole job instead).

Each event keeps when it ended (`ends`, the host's `time.perf_counter`, one clock for every process
of the machine) for the timeline; with `starts` (`timing.CallStarts`) an event's wait is the time
since its call started, known when the detector records it. The optimizer steps' ends (`steps`)
mark the timeline's steps. No torch here.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from synclint.verify.sites import SYNC, Recording, SyncEvent


class StopTrace(BaseException):
    """Raised into the program when a limit is reached (a BaseException: `except Exception` lets it by)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    skip_syncs: int = 0
    skip_seconds: float = 0.0
    max_steps: int | None = None
    max_seconds: float | None = None


class Starts(Protocol):
    def take(self, now: float) -> float | None: ...


class TraceRecording(Recording):
    def __init__(self, limits: Limits, clock: Callable[[], float] = time.perf_counter,
                 stopper: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.limits = limits
        self.clock = clock
        self.stopper = stopper  # None: raise StopTrace into the program
        self.starts: Starts | None = None
        self.ends: list[float] = []  # when each event's call returned
        self.steps: list[float] = []  # when each optimizer step ended
        self.fixed: list[int] = []  # events whose wait was set after they were recorded (`timed`)
        self.started = clock()
        self.armed_at: float | None = None if limits.skip_syncs or limits.skip_seconds else self.started
        self.skipped = 0
        self.allowed = 0
        self.stopped: str | None = None  # why the program was stopped early, if it was
        self._steps: Counter = Counter()

    def _arm(self, now: float) -> bool:
        if self.armed_at is not None:
            return True
        if now - self.started >= self.limits.skip_seconds and self.skipped >= self.limits.skip_syncs:
            self.armed_at = now
            return True
        return False

    def add(self, event: SyncEvent) -> None:
        now = self.clock()
        if not self._arm(now):
            self.skipped += 1
            return
        if event.allowed:
            self.allowed += 1
            return
        if self.stopped is not None:  # a rank asked to stop the job: nothing more counts
            return
        if self.starts is not None:
            event = replace(event, wait_s=self.starts.take(now))
        self.events.append(event)
        self.ends.append(now)
        limits = self.limits
        if limits.max_steps is not None and event.kind == SYNC:
            key = (event.site, event.op)
            self._steps[key] += 1
            if self._steps[key] >= limits.max_steps:
                self.stop(f"the busiest site synced {limits.max_steps} times (--max-steps)")
        if limits.max_seconds is not None and now - self.started >= limits.max_seconds:
            self.stop(f"{limits.max_seconds:g} s passed (--max-seconds)")

    def timed(self, first: int, seconds: float) -> None:
        """As `Recording.timed`; the call returns now: that is when its events end."""
        super().timed(first, seconds)
        now = self.clock()
        for i in range(first, len(self.events)):
            self.ends[i] = now
            self.fixed.append(i)

    def step(self) -> None:
        """An optimizer step ended (after the warm-up: the timeline's steps)."""
        if self.armed_at is not None and self.stopped is None:
            self.steps.append(self.clock())

    def stop(self, reason: str) -> None:
        first = self.stopped is None
        if first:
            self.stopped = reason
        if self.stopper is None:
            raise StopTrace(reason)
        if first:
            self.stopper(reason)

    def watched_seconds(self, end: float) -> float:
        """The wall time the report covers: from arming to the end (0 if never armed)."""
        return 0.0 if self.armed_at is None else max(end - self.armed_at, 0.0)

    def site_rows(self, root: str, timed: bool) -> list[dict]:
        return site_rows(self.events, root, timed)


def site_rows(events: list[SyncEvent], root: str, timed: bool) -> list[dict]:
    """The report's sites (`synclint.runtime`'s schema): one per (site, operation, kind), by total
    wait when timed, else by count; files relative to `root` when under it. A site none of whose
    syncs was timed has `wait_s` None."""
    rows: dict[tuple, dict] = {}
    for event in events:
        site = event.site
        key = (event.kind, site.file if site else None, site.line if site else None, event.op)
        row = rows.get(key)
        if row is None:
            row = rows[key] = {"kind": event.kind, "file": relative(site.file, root) if site else None,
                               "line": site.line if site else None, "function": site.function if site else None,
                               "op": event.op, "count": 0, "wait_s": None, "source": site.source() if site else ""}
        row["count"] += 1
        if timed and event.wait_s is not None:  # None: no timed call around it (torch.save's copies, C++ code)
            row["wait_s"] = (row["wait_s"] or 0.0) + event.wait_s
    return sort_rows(list(rows.values()))


def sort_rows(rows: list[dict]) -> list[dict]:
    """By total wait, then by count, then by place."""
    return sorted(rows, key=lambda r: (-(r["wait_s"] or 0.0), -r["count"], r["file"] is None, r["file"] or "",
                                       r["line"] or 0, r["op"]))


def relative(file: str, root: str) -> str:
    """`file` relative to `root` when under it, else as it is."""
    try:
        inside = os.path.relpath(file, root)
    except ValueError:  # another drive
        return file
    return file if inside.startswith(os.pardir + os.sep) else inside
