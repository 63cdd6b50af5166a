"""Counting the explicit waits that `set_sync_debug_mode` does not flag.

`torch.cuda.synchronize()`, `Event.synchronize()` and `torch.accelerator.synchronize()`
wait for the GPU without a debug-mode warning (catalogue: `torch.cuda.synchronize()`
waited 20 ms unflagged); `Stream.synchronize()` is flagged, and is wrapped here too so
that one call counts once whatever the mode says. The wrappers are installed for the
duration of one watch and count only calls from the watching thread.
"""

from __future__ import annotations

import functools
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

import torch

# (owner, attribute, label)
def _targets() -> list[tuple[object, str, str]]:
    targets: list[tuple[object, str, str]] = [
        (torch.cuda, "synchronize", "torch.cuda.synchronize"),
        (torch.cuda.Event, "synchronize", "torch.cuda.Event.synchronize"),
        (torch.cuda.Stream, "synchronize", "torch.cuda.Stream.synchronize"),
    ]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        targets.append((accelerator, "synchronize", "torch.accelerator.synchronize"))
    return targets


_inside = threading.local()


def inside_wrapper() -> bool:
    """True while this thread runs a wrapped synchronize (its debug-mode warning is not counted again)."""
    return getattr(_inside, "depth", 0) > 0


@contextmanager
def synchronize_wrappers(on_call: Callable[[str], None], *, call_through: bool,
                         on_return: Callable[[float], None] | None = None) -> Iterator[None]:
    """Wrap the synchronize calls; `on_call(label)` runs for each call from this thread.

    `call_through`: run the real call (on a GPU); False in the CPU simulation, where there is
    no device to wait for and the real call would raise. `on_return(seconds)`: after a real
    call returns, how long it took on the host's clock (the wait).
    """
    owner = threading.get_ident()
    saved: list[tuple[object, str, object]] = []

    def wrap(original: Callable, label: str) -> Callable:
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if threading.get_ident() != owner:
                return original(*args, **kwargs)
            on_call(label)
            if not call_through:
                return None
            _inside.depth = getattr(_inside, "depth", 0) + 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                _inside.depth -= 1
                if on_return is not None:
                    on_return(time.perf_counter() - start)

        wrapper.__synclint_wrapped__ = original  # type: ignore[attr-defined]
        return wrapper

    try:
        for owner_obj, attr, label in _targets():
            original = owner_obj.__dict__.get(attr) if isinstance(owner_obj, type) else getattr(owner_obj, attr, None)
            if original is None:
                continue
            saved.append((owner_obj, attr, original))
            setattr(owner_obj, attr, wrap(original, label))
        yield
    finally:
        for owner_obj, attr, original in reversed(saved):
            setattr(owner_obj, attr, original)
