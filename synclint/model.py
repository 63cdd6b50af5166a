"""The plain data a run produces: confidences, findings, fixes.

Kept free of libcst and rich so that reports, the cache and worker processes can
move these objects around cheaply (they pickle and serialise to JSON).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from synclint.evidence import Evidence


def pickled_by_fields(cls):
    """Pickle instances of the dataclass `cls` as its class and its field values in order, rebuilt
    by calling it. The default pickles each instance's `__dict__`, names and all: a package
    state (synclint.cache.entries) holds tens of thousands of these, and unpickles in half the time."""
    names = tuple(f.name for f in fields(cls))

    def __reduce__(self):
        return cls, tuple(getattr(self, name) for name in names)

    cls.__reduce__ = __reduce__
    return cls


class Level(enum.IntEnum):
    """A scale of low, medium and high, read and written in lower case (`Confidence`, `Certainty`)."""

    @classmethod
    def parse(cls, text: str) -> Self:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown {cls.__name__.lower()} {text!r} (expected low, medium or high)") from None

    def __str__(self) -> str:
        return self.name.lower()


class Confidence(Level):
    """How sure a finding is that the host waits on a path that repeats: decided by `synclint.policy`
    from the finding's evidence, and nowhere else."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3


class Applicability(str, enum.Enum):
    """Ruff's fix applicability: safe fixes keep behaviour, unsafe ones may change it."""

    SAFE = "safe"
    UNSAFE = "unsafe"


# The most severe level (as a confidence: 3 error, 2 warning, 1 note) of a finding in each context
# (config.CONTEXTS): what runs once is never an error, however sure (`Finding.level`).
LEVEL_CAPS = {"loop": 3, "step": 3, "interval": 2, "code": 2, "host": 1, "init": 1, "test": 1, "never": 1}

# The codes of findings about the run itself: a file that does not parse, a rule that crashed.
ENGINE_CODES = ("SYNC000", "SYNC001")


@pickled_by_fields
@dataclass(frozen=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based, in characters, as ruff reports it


@pickled_by_fields
@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) by `content`."""

    content: str
    location: Location
    end_location: Location


@pickled_by_fields
@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]
    imports: tuple[str, ...] = ()  # import statements the fixed code needs ("import torch")


@pickled_by_fields
@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    confidence: Confidence = Confidence.HIGH
    context: str = "code"  # where it sits: loop, init, test, code, ...
    because: str | None = None  # why synclint believes the value is on the device
    fix: Fix | None = None
    noqa_row: int | None = None
    runtime_syncs: int | None = None  # with --runtime-report: syncs a test run saw on these lines
    runtime_wait_s: float | None = None  # with --runtime-report from a timed run: the host's wait there, in seconds
    source_line: str = field(default="", compare=False)
    # The project function holding it (`pkg.mod.Class.m`; None at the top level): for what the project's
    # solve says of that function after the check (`project.run.with_frequency`).
    function: str | None = field(default=None, compare=False)
    # The facts its confidence was decided from (`synclint.policy`); None for a file synclint could not check.
    evidence: Evidence | None = None

    def explained(self) -> str:
        """The message and why synclint believes it (`because`, with the confidence) on a second
        line: what the editor, SARIF results and GitHub annotations show."""
        if self.because:
            return f"{self.message}\nbecause: {self.because} ({self.confidence} confidence)"
        return self.message

    def level(self) -> str:
        """How severe it is in SARIF's words (GitHub's annotations follow them), by its confidence and by
        how often its line runs: `error` for a proven sync paid every step (a loop, a per-step method),
        `warning` for a likely one there or a proven one paid per call or every so many steps, `note`
        for one that may be and for set-up code and tests, which run once. A file synclint could not
        check is an `error`."""
        if self.code in ENGINE_CODES:
            return "error"
        rank = min(int(self.confidence), LEVEL_CAPS.get(self.context, int(Confidence.HIGH)))
        return {3: "error", 2: "warning"}.get(rank, "note")

    @property
    def sort_key(self) -> tuple:
        return (self.filename, self.location.row, self.location.column, self.code)
