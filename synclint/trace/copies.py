"""The waits CUDA's debug mode does not flag: non-blocking copies through pageable host memory.

`x.to("cuda", non_blocking=True)` of a tensor that is not pinned is staged through a pinned buffer by
the driver, and from 4 MB on the host waits for the GPU's queue (`../shared/reference/sync-catalogue.md`:
2 MB returned at once, 4 MB waited 20 ms behind 20 ms of queued work; from pinned memory, never);
`host.copy_(gpu, non_blocking=True)` into pageable memory cannot return before the data has arrived,
whatever its size. Neither is flagged by `torch.cuda.set_sync_debug_mode`. `PageableCopies` wraps
`Tensor.to`, `Tensor.cuda` and `Tensor.copy_` while a trace runs on CUDA: a call that asks for
`non_blocking=True` between a CUDA tensor and a CPU tensor that is not pinned is recorded as a wait
(`synclint.verify.sites.WAIT`, a kind of its own in the table) with its host time. A blocking copy is
left to the debug mode, which counts it as a sync. The same size threshold as the CPU simulation's
(`PAGEABLE_WAIT_BYTES`) keeps the two in agreement for host-to-device copies.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from synclint.verify.cpu import PAGEABLE_WAIT_BYTES
from synclint.verify.sites import WAIT, Recording, SyncEvent, in_allowed_region, user_site


def _non_blocking(args: tuple, kwargs: dict) -> bool:
    """`non_blocking` of `.to`/`.cuda`/`.copy_`: a keyword, or the first positional bool (in every overload)."""
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    return next((a for a in args if isinstance(a, bool)), False)


def _pageable(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "cpu" and not t.is_pinned()


def _megabytes(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.0f} MB" if nbytes >= 1 << 20 else f"{nbytes / 1024:.0f} KB"


class PageableCopies:
    """`with PageableCopies(is_user, recording):` the pageable non-blocking copies of this thread become waits."""

    def __init__(self, is_user: Callable[[str], bool], recording: Recording) -> None:
        self.is_user = is_user
        self.recording = recording
        self._saved: dict[str, Any] = {}

    def _record(self, op: str, seconds: float) -> None:
        site, chain = user_site(self.is_user, None)
        first = len(self.recording.events)
        self.recording.add(SyncEvent(WAIT, op, site, allowed=in_allowed_region(chain)))
        if len(self.recording.events) > first:
            self.recording.timed(first, seconds)

    def _wrap_move(self, name: str, original: Callable) -> Callable:
        def move(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if not _non_blocking(args, kwargs) or not _pageable(tensor) or tensor.nbytes < PAGEABLE_WAIT_BYTES:
                return original(tensor, *args, **kwargs)
            start = time.perf_counter()
            result = original(tensor, *args, **kwargs)
            seconds = time.perf_counter() - start
            if isinstance(result, torch.Tensor) and result.device.type == "cuda":
                self._record(f"{name}(non_blocking=True) of {_megabytes(tensor.nbytes)} from pageable memory "
                             "(host-to-device)", seconds)
            return result

        move.__name__ = name
        return move

    def _wrap_copy(self, original: Callable) -> Callable:
        def copy_(dst: torch.Tensor, src: Any, *args: Any, **kwargs: Any) -> Any:
            if not _non_blocking(args, kwargs) or not isinstance(src, torch.Tensor):
                return original(dst, src, *args, **kwargs)
            to_gpu = dst.device.type == "cuda" and _pageable(src) and src.nbytes >= PAGEABLE_WAIT_BYTES
            to_host = src.device.type == "cuda" and _pageable(dst)
            if not (to_gpu or to_host):
                return original(dst, src, *args, **kwargs)
            start = time.perf_counter()
            result = original(dst, src, *args, **kwargs)
            seconds = time.perf_counter() - start
            what = "from pageable memory (host-to-device)" if to_gpu else "into pageable memory (device-to-host)"
            self._record(f"copy_(non_blocking=True) of {_megabytes(src.nbytes)} {what}", seconds)
            return result

        copy_.__name__ = "copy_"
        return copy_

    def __enter__(self) -> "PageableCopies":
        tensor: Any = torch.Tensor
        self._saved = {name: tensor.__dict__.get(name) for name in ("to", "cuda", "copy_")}
        originals = {name: getattr(tensor, name) for name in ("to", "cuda", "copy_")}
        tensor.to = self._wrap_move(".to", originals["to"])
        tensor.cuda = self._wrap_move(".cuda", originals["cuda"])
        tensor.copy_ = self._wrap_copy(originals["copy_"])
        return self

    def __exit__(self, *exc: object) -> None:
        tensor: Any = torch.Tensor
        for name, saved in self._saved.items():
            if saved is None:
                delattr(tensor, name)
            else:
                setattr(tensor, name, saved)
