"""`synclint verify` and the pytest plugin: the runtime half of synclint.

This is the only part of synclint that imports torch, and only inside the modules that
need it (`cpu`, `cuda`, `measure`), which are imported when a run starts: importing this
package, `synclint.verify.command` or the pytest plugin costs no torch.

- `cuda`: counts syncs on a GPU (`torch.cuda.set_sync_debug_mode("warn")` through a
  warnings hook, plus wrappers for the synchronize calls the debug mode misses) and times
  how long a call takes to return with GPU work queued; `WaitTimer` times the syncing torch
  calls of a whole program (`synclint trace`, `synclint.trace`, which runs this same detector).
- `cpu`: the simulation for machines without CUDA: a dispatch mode that records the
  operations that would sync if the tensors lived on a GPU (see `cpu.CATALOGUE_COVERAGE`).
- `command`: `synclint verify`, which runs each fixture before and after the fixer.
- `pytest_plugin`: `pytest --sync-check=warn|error`.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gpu_sync_allowed"]

_allowed = threading.local()


@contextmanager
def gpu_sync_allowed() -> Iterator[None]:
    """Mark a region whose syncs are intended (a metrics read, a checkpoint): the runtime checks skip it.

    The checks also honour a context manager of this name from anywhere else (your own no-op
    `gpu_sync_allowed`, so production code need not import synclint): they look for a
    `with gpu_sync_allowed(...)` block around the line that synced, up the Python stack.
    """
    _allowed.depth = getattr(_allowed, "depth", 0) + 1
    try:
        yield
    finally:
        _allowed.depth -= 1


def in_gpu_sync_allowed() -> bool:
    """True inside this thread's `synclint.verify.gpu_sync_allowed()` block."""
    return getattr(_allowed, "depth", 0) > 0
