"""What a run did, phase by phase: the progress display's phases, counted (`synclint check -v`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class Phases(Protocol):
    """What `check_all` asks of its progress display: a `Progress`, or a `Tally` around one."""

    def phase(self, label: str, total: int, done: int = 0) -> Callable[[int], None]: ...


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

    def __init__(self, progress: "Phases") -> None:
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
