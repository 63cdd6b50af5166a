"""Where a sync happened: the innermost frame of the code under study, and allowed regions.

No torch here: the detectors call these helpers from inside their hooks.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import sysconfig
from collections import Counter
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Callable, Iterable

from synclint.verify import in_gpu_sync_allowed

ALLOW_NAME = "gpu_sync_allowed"

# What a recorded event is: a sync counts against a kernel; a wait is a host stall the
# debug mode cannot see (timed, or a large pageable non-blocking copy); a race is a host
# read of a buffer that a non-blocking device-to-host copy may not have filled yet.
SYNC, WAIT, RACE = "sync", "wait", "race"


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    function: str

    def source(self) -> str:
        return linecache.getline(self.file, self.line).strip()


@dataclass(frozen=True)
class SyncEvent:
    kind: str  # SYNC, WAIT or RACE
    op: str  # what synced, e.g. "aten._local_scalar_dense (item/bool/int)"
    site: Site | None
    allowed: bool = False  # inside gpu_sync_allowed() (the plugin reports it apart)
    wait_s: float | None = None  # host time the syncing call took, when timed (`synclint trace` on CUDA)


@dataclass
class Recording:
    """The events seen while a detector watched one call."""

    events: list[SyncEvent] = field(default_factory=list)

    def add(self, event: SyncEvent) -> None:
        self.events.append(event)

    def timed(self, first: int, seconds: float) -> None:
        """The call that made events `first:` took `seconds` on the host: the first of them carries
        it (one call, one wait, however many syncs CUDA counted in it), the others 0."""
        for i in range(first, len(self.events)):
            self.events[i] = replace(self.events[i], wait_s=seconds if i == first else 0.0)

    def of(self, kind: str, allowed: bool | None = False) -> list[SyncEvent]:
        return [e for e in self.events if e.kind == kind and (allowed is None or e.allowed == allowed)]

    @property
    def syncs(self) -> int:
        return len(self.of(SYNC))

    @property
    def races(self) -> int:
        return len(self.of(RACE))

    def sites(self, kind: str | None = SYNC) -> list[dict]:
        """[{kind, file, line, function, op, count}] outside allowed regions, most frequent first."""
        counts = Counter((e.kind, e.site, e.op) for e in self.events if (kind is None or e.kind == kind) and not e.allowed)
        rows = []
        for (event_kind, site, op), count in counts.most_common():
            rows.append({
                "kind": event_kind,
                "file": site.file if site else None,
                "line": site.line if site else None,
                "function": site.function if site else None,
                "op": op,
                "count": count,
            })
        return rows


# --------------------------------------------------------------------------------------
# Which frames are the user's code
# --------------------------------------------------------------------------------------


def _library_roots() -> tuple[str, ...]:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.realpath(path))
    import synclint

    roots.add(os.path.realpath(os.path.dirname(synclint.__file__)))
    for name in ("torch", "numpy", "_pytest", "pluggy", "pytest"):
        module = sys.modules.get(name)
        if module is not None and (file := getattr(module, "__file__", None)):
            roots.add(os.path.realpath(os.path.dirname(file)))
    return tuple(sorted(root + os.sep for root in roots))


class UserCode:
    """A frame filter: True for the code whose syncs we report.

    `files`: only these files count (the verifier: the fixture modules). `sources`: only the files
    under these folders count (`synclint trace --source`: a package installed in site-packages).
    Otherwise any file outside the standard library, site-packages, torch, pytest and synclint itself counts.
    """

    def __init__(self, files: Iterable[str] | None = None, sources: Iterable[str] | None = None) -> None:
        self.files = None if files is None else {os.path.realpath(f) if not f.startswith("<") else f for f in files}
        self.sources = None if sources is None else tuple(os.path.join(os.path.realpath(s), "") for s in sources)
        self._roots: tuple[str, ...] | None = None
        self._cache: dict[str, bool] = {}

    def __call__(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is not None:
            return known
        if self.files is not None:
            verdict = filename in self.files or (not filename.startswith("<") and os.path.realpath(filename) in self.files)
        elif filename.startswith("<"):
            verdict = False
        elif self.sources is not None:
            verdict = os.path.realpath(filename).startswith(self.sources)
        else:
            if self._roots is None:
                self._roots = _library_roots()
            real = os.path.realpath(filename)
            verdict = not real.startswith(self._roots)
        self._cache[filename] = verdict
        return verdict


def user_site(is_user: Callable[[str], bool], start: FrameType | None = None) -> tuple[Site | None, list[FrameType]]:
    """The innermost user frame's site, and the frames from it outward (for allowed-region checks)."""
    frame: FrameType | None = start or sys._getframe(1)
    while frame is not None and not is_user(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None, []
    chain = []
    outer: FrameType | None = frame
    while outer is not None:
        chain.append(outer)
        outer = outer.f_back
    return Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name), chain


# --------------------------------------------------------------------------------------
# gpu_sync_allowed() regions, found by name up the stack
# --------------------------------------------------------------------------------------

_allowed_ranges: dict[str, list[tuple[int, int, int]]] = {}


def _is_allow_call(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Name):
        return expr.id == ALLOW_NAME
    if isinstance(expr, ast.Attribute):
        return expr.attr == ALLOW_NAME
    return False


def _ranges_in(filename: str) -> list[tuple[int, int, int]]:
    """(first body line, last body line, first line of the enclosing function) of each allowed `with`."""
    cached = _allowed_ranges.get(filename)
    if cached is not None:
        return cached
    ranges: list[tuple[int, int, int]] = []
    text = "".join(linecache.getlines(filename))
    if ALLOW_NAME in text:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            tree = None

        def visit(node: ast.AST, owner: int) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    first = min([child.lineno] + [d.lineno for d in getattr(child, "decorator_list", [])])
                    visit(child, first)
                    continue
                if isinstance(child, (ast.With, ast.AsyncWith)) and any(_is_allow_call(i.context_expr) for i in child.items):
                    ranges.append((child.body[0].lineno, child.body[-1].end_lineno or child.body[-1].lineno, owner))
                visit(child, owner)

        if tree is not None:
            visit(tree, 1)
    _allowed_ranges[filename] = ranges
    return ranges


def in_allowed_region(chain: list[FrameType]) -> bool:
    """True if this thread is inside synclint's gpu_sync_allowed(), or any frame of `chain`
    executes inside a `with gpu_sync_allowed(...)` block of its own function."""
    if in_gpu_sync_allowed():
        return True
    for frame in chain:
        filename = frame.f_code.co_filename
        ranges = _ranges_in(filename)
        if not ranges:
            continue
        line, first = frame.f_lineno, frame.f_code.co_firstlineno
        for start, end, owner in ranges:
            if start <= line <= end and (owner == first or frame.f_code.co_name == "<module>" and owner == 1):
                return True
    return False
