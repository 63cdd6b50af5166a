"""Running one kernel: its syncs, its host wait, its speed, and what it computed.

Every run gets fresh inputs from `make_inputs(device)` (kernels may update their arguments
in place). Timings are medians of `repeat` runs after two warm-up runs:
- host idle: how long the call takes to return with nothing queued on the GPU;
- host wait (CUDA): the same with about 20 ms of GPU work queued first; a call that syncs
  returns only after the queue drained;
- device (CUDA): CUDA events around the call;
- step (CUDA): time per step of a small pipeline, each step 2 ms of GPU work, the kernel,
  then 1 ms of host work (a scheduler preparing the next step). A kernel that does not wait
  lets the host work overlap the GPU work; one that waits serializes them. On the CPU, the
  step is the kernel's own host time.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from synclint.verify.sites import RACE, WAIT

WARMUP = 2
PIPELINE_STEPS = 8
PIPELINE_GPU_MS = 2.0
PIPELINE_HOST_MS = 1.0


class CpuClock:
    """The CPU has no queue to wait for: host time only."""

    queue_ms = None

    def synchronize(self) -> None:
        pass

    def host_us(self, call: Callable[[], Any], busy: bool) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * 1e6

    def device_us(self, call: Callable[[], Any]) -> float | None:
        return None

    def gpu_work(self, ms: float) -> None:
        pass


@dataclass
class Measurement:
    syncs: int | None = None
    waits: int = 0  # simulated waits (large non-blocking copies from pageable memory)
    races: int | None = None  # simulated only
    sites: list[dict] = field(default_factory=list)
    host_wait_us: float | None = None
    host_idle_us: float | None = None
    device_us: float | None = None
    step_ms: float | None = None
    waited: bool | None = None
    result: Any = None
    error: str | None = None
    error_traceback: str | None = None


def _spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def measure(fn: Callable, make_args: Callable[[Any], tuple], detector, clock, plain_device, repeat: int) -> Measurement:
    """Measure one kernel; an exception anywhere is reported in `error`, never raised."""
    m = Measurement()
    try:
        for _ in range(WARMUP):
            fn(*make_args(plain_device))
            clock.synchronize()

        args = make_args(plain_device)
        out = fn(*args)
        clock.synchronize()
        m.result = (out, args)

        with detector.prepare():
            args = make_args(detector.device)
        with detector.watch() as recording:
            fn(*args)
        clock.synchronize()
        m.syncs = recording.syncs
        m.waits = len(recording.of(WAIT))
        m.races = len(recording.of(RACE)) if detector.simulated else None
        m.sites = recording.sites(None)

        idle = []
        for _ in range(repeat):
            args = make_args(plain_device)
            idle.append(clock.host_us(lambda: fn(*args), busy=False))
        m.host_idle_us = _median(idle)

        if clock.queue_ms is None:
            m.step_ms = m.host_idle_us / 1e3 if m.host_idle_us is not None else None
            return m

        busy, device = [], []
        for _ in range(repeat):
            args = make_args(plain_device)
            busy.append(clock.host_us(lambda: fn(*args), busy=True))
            args = make_args(plain_device)
            device.append(clock.device_us(lambda: fn(*args)))
        m.host_wait_us = _median(busy)
        m.device_us = _median(device)
        if m.host_wait_us is not None and m.host_idle_us is not None:  # (repeat >= 1: both measured)
            m.waited = (m.host_wait_us - m.host_idle_us) > clock.queue_ms * 1e3 / 2

        steps = []
        for _ in range(max(3, repeat // 2)):
            inputs = [make_args(plain_device) for _ in range(PIPELINE_STEPS)]
            clock.synchronize()
            start = time.perf_counter()
            for step_args in inputs:
                clock.gpu_work(PIPELINE_GPU_MS)
                fn(*step_args)
                _spin(PIPELINE_HOST_MS)
            clock.synchronize()
            steps.append((time.perf_counter() - start) * 1e3 / PIPELINE_STEPS)
            del inputs
        m.step_ms = _median(steps)
    except Exception as exc:  # a fixture that raises is reported, not fatal
        m.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        m.error_traceback = traceback.format_exc()
    return m


# --------------------------------------------------------------------------------------
# Comparing outputs
# --------------------------------------------------------------------------------------


def compare(expected: Any, actual: Any, rtol: float = 0.0, atol: float = 0.0, path: str = "output") -> str | None:
    """None if equal (exactly, unless a tolerance is given), else where and how they differ."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
        try:
            torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as exc:
            first = str(exc).strip().splitlines()
            return f"{path}: {' '.join(first[:3])}"
        return None
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        # before.py and after.py each define their own class: compare by name and fields.
        if type(expected).__qualname__ != type(actual).__qualname__ or not dataclasses.is_dataclass(actual):
            return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
        for f in dataclasses.fields(expected):
            problem = compare(getattr(expected, f.name), getattr(actual, f.name), rtol, atol, f"{path}.{f.name}")
            if problem:
                return problem
        return None
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return f"{path}: length {len(expected)} vs {len(actual) if isinstance(actual, (list, tuple)) else type(actual).__name__}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = compare(e, a, rtol, atol, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or expected.keys() != actual.keys():
            return f"{path}: keys differ"
        for key in expected:
            problem = compare(expected[key], actual[key], rtol, atol, f"{path}[{key!r}]")
            if problem:
                return problem
        return None
    if type(expected).__module__ == "numpy":
        import numpy as np

        expected, actual = np.asarray(expected), np.asarray(actual)
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            return f"{path}: numpy {expected.dtype}{list(expected.shape)} vs {actual.dtype}{list(actual.shape)}"
        nan = expected.dtype.kind in "fc"
        same = (np.array_equal(expected, actual, equal_nan=nan) if rtol == atol == 0
                else np.allclose(expected, actual, rtol=rtol, atol=atol, equal_nan=nan))
        return None if same else f"{path}: numpy arrays differ"
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        if math.isnan(expected) and math.isnan(actual):
            return None
        if not math.isclose(expected, actual, rel_tol=rtol, abs_tol=atol) and expected != actual:
            return f"{path}: {expected!r} vs {actual!r}"
        return None
    if expected != actual:
        return f"{path}: {expected!r:.80} vs {actual!r:.80}"
    return None
