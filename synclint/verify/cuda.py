"""Counting syncs on a real GPU, and timing how long a call keeps the host waiting.

Counting: `torch.cuda.set_sync_debug_mode("warn")` makes every synchronizing CUDA call
issue the warning "called a synchronizing CUDA operation". The mode is process-wide, so a
watch sets it for one call and restores the previous mode; the warnings are caught by a
`showwarning` hook that counts only those raised on the watching thread (other threads'
warnings pass through to the previous hook). The debug mode misses `torch.cuda.synchronize()`,
`Event.synchronize()` and `torch.accelerator.synchronize()`: the wrappers count those.

Timing a program (`synclint trace`): `WaitTimer`, a `TorchFunctionMode`, times every torch call
made from Python with the host's clock; the debug-mode warning of a sync is issued as the call
returns (torch buffers C++ warnings until its binding exits), so the syncs recorded during a
call are known when it returns, and the first of them carries the call's host time: the wait
for the GPU's queue plus the call's own launch cost (microseconds). The wrapped synchronize
calls time themselves.

Timing a kernel (`synclint verify`): a call that syncs cannot return before the GPU's queue drains. `HostClock` queues
about 20 ms of GPU work (`torch.cuda._sleep`, calibrated once in cycles per millisecond) and
times how long the call takes to return: about 20 ms means it waited. This also catches the
waits the debug mode cannot see (non-blocking copies from pageable memory of 4 MB and more).
"""

from __future__ import annotations

import re
import statistics
import threading
import time
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from synclint.verify.sites import SYNC, Recording, SyncEvent, in_allowed_region, user_site
from synclint.verify.wrappers import inside_wrapper, synchronize_wrappers

SYNC_WARNING = "called a synchronizing CUDA operation"
QUEUE_MS = 20.0  # GPU work queued before a timed call


class CudaDetector:
    """Counts the syncs of the calls made inside `watch()` on this thread."""

    simulated = False
    kind = "cuda"

    def __init__(self, is_user: Callable[[str], bool], device: torch.device | None = None) -> None:
        self.is_user = is_user
        self.device = device or torch.device("cuda", torch.cuda.current_device())

    def _emit(self, recording: Recording, op: str) -> None:
        site, chain = user_site(self.is_user)
        recording.add(SyncEvent(SYNC, op, site, allowed=in_allowed_region(chain)))

    @contextmanager
    def prepare(self) -> Iterator[None]:
        """Inputs are built plainly; their GPU work is finished before the watched call."""
        yield
        torch.cuda.synchronize(self.device)

    @contextmanager
    def watch(self, recording: Recording | None = None) -> Iterator[Recording]:
        """Count the syncs of this thread into `recording` (a new one unless given). The synchronize
        wrappers also time each real call: its event carries the host's wait (`SyncEvent.wait_s`)."""
        recording = Recording() if recording is None else recording
        owner = threading.get_ident()
        previous_mode = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings():
            # "always": the default action shows a warning once per line, and we need every one.
            warnings.filterwarnings("always", message=re.escape(SYNC_WARNING))
            warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype feature")
            previous_hook = warnings.showwarning

            def hook(message, category, filename, lineno, file=None, line=None):
                if threading.get_ident() == owner and SYNC_WARNING in str(message):
                    if not inside_wrapper():  # a wrapped Stream.synchronize() already counted itself
                        self._emit(recording, "CUDA sync (set_sync_debug_mode)")
                    return
                previous_hook(message, category, filename, lineno, file, line)

            warnings.showwarning = hook
            marks: list[int] = []  # where each wrapped call's event went (a stack: calls may nest)

            def called(label: str) -> None:
                marks.append(len(recording.events))
                self._emit(recording, f"{label}()")

            def returned(seconds: float) -> None:
                recording.timed(marks.pop(), seconds)

            with synchronize_wrappers(called, call_through=True, on_return=returned):
                torch.cuda.set_sync_debug_mode("warn")
                try:
                    yield recording
                finally:
                    torch.cuda.set_sync_debug_mode(previous_mode)


class WaitTimer(TorchFunctionMode):
    """Inside a `CudaDetector.watch(recording)`: each torch call that synced gives its host time to
    the first sync recorded during it (`Recording.timed`). Nested torch calls run with the mode
    popped, so the outermost call from Python is the one timed."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording

    def __torch_function__(self, func, types, args=(), kwargs=None):
        events = self.recording.events
        first = len(events)
        start = time.perf_counter()
        try:
            return func(*args, **(kwargs or {}))
        finally:
            if len(events) > first:
                self.recording.timed(first, time.perf_counter() - start)


class HostClock:
    """Queues GPU work of a known length and times the host, on one CUDA device."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cycles_per_ms = self._calibrate()
        self.queue_ms = self.measure_sleep(QUEUE_MS)

    def _elapsed_ms(self, cycles: int) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def _calibrate(self) -> float:
        torch.cuda.synchronize(self.device)
        self._elapsed_ms(1_000_000)  # first launch, clocks ramping up
        rates = []
        for _ in range(5):
            cycles = 20_000_000
            rates.append(cycles / max(self._elapsed_ms(cycles), 1e-3))
        return statistics.median(rates)

    def sleep(self, ms: float) -> None:
        torch.cuda._sleep(max(int(self.cycles_per_ms * ms), 1))

    def measure_sleep(self, ms: float) -> float:
        return statistics.median(self._elapsed_ms(max(int(self.cycles_per_ms * ms), 1)) for _ in range(3))

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def host_us(self, call: Callable[[], Any], busy: bool) -> float:
        """Host time of one call, with the GPU idle or with `QUEUE_MS` of work queued first."""
        self.synchronize()
        if busy:
            self.sleep(QUEUE_MS)
        start = time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
        self.synchronize()
        return elapsed * 1e6

    def device_us(self, call: Callable[[], Any]) -> float:
        self.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    def gpu_work(self, ms: float) -> None:
        self.sleep(ms)
