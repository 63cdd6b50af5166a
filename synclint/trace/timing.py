"""When the call that synced started: the start of a sync's wait, cheaply (Python 3.12's `sys.monitoring`).

CUDA's debug mode tells Python of a sync as the syncing call returns (torch issues the buffered
warning when its binding exits), so the end of a wait is the moment the detector records it. Its
start is the start of that call. `CallStarts` keeps, per thread, when the latest call to a torch
function written in C started (from any code: `torch.nonzero`, `Tensor.item`, `F.linear`, the
operators of `torch.ops`); a recorded sync takes the time since then as its wait, and a second sync
of the same call (CUDA may count two or three) the time since the first. Every other call site is
switched off the first time it runs (`sys.monitoring.DISABLE`), so a traced step pays one small
callback per torch call from Python, where a `TorchFunctionMode` (`synclint.verify.cuda.WaitTimer`,
still used before Python 3.12) runs torch's whole Python override protocol for each. A sync that no
call makes (`if t:`, `x[mask]`, both through slots) starts at the torch call before it: its wait
includes the host's own time since then (the line's launches, microseconds).
No torch here.
"""

from __future__ import annotations

import sys
import threading
import time
import types
from typing import Any, Callable

_C_CALLABLES = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                types.MethodWrapperType, types.ClassMethodDescriptorType)


def available() -> bool:
    return hasattr(sys, "monitoring")


def _is_torch_c(callee: Any) -> bool:
    """A torch function or Tensor method written in C (or an `torch.ops` operator)."""
    kind = type(callee)
    if kind in _C_CALLABLES:
        owner = getattr(callee, "__objclass__", None)  # a method descriptor: TensorBase.item
        if owner is not None:
            return owner.__module__.startswith("torch")
        module = getattr(callee, "__module__", None)  # torch.matmul, F.linear (torch._C._nn)
        if module:
            return module.startswith("torch")
        bound = getattr(callee, "__self__", None)  # x.item, x.__bool__
        return bound is not None and type(bound).__module__.startswith("torch")
    return kind.__module__ == "torch._ops"  # torch.ops.aten.nonzero


class CallStarts:
    """`with CallStarts() as starts:` ...; `starts.take(now)`: the wait of a sync recorded at `now`."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._local = threading.local()
        self._torch_c: set = set()  # the torch functions and descriptors seen called
        self._methods: dict[tuple, bool] = {}  # (owner's type, name, module) of bound methods: torch or not
        self._tool: int | None = None

    def __enter__(self) -> "CallStarts":
        monitoring: Any = getattr(sys, "monitoring")
        tool = next((i for i in range(6) if monitoring.get_tool(i) is None), None)
        if tool is None:
            raise RuntimeError("every sys.monitoring tool id is taken")
        monitoring.use_tool_id(tool, "synclint trace")
        disable, clock, local, torch_c, methods = (monitoring.DISABLE, self.clock, self._local, self._torch_c,
                                                   self._methods)

        def on_call(code: types.CodeType, offset: int, callee: Any, arg0: Any) -> Any:
            # Runs for each call from a location still enabled, so every torch call of a step: each
            # callee is judged once (`_is_torch_c` costs a microsecond, several times this lookup).
            try:
                known = callee in torch_c
            except TypeError:  # an unhashable callable object: no torch function
                return disable
            if not known:
                owner = getattr(callee, "__self__", None)
                if owner is None or type(owner) is types.ModuleType:  # torch.matmul, F.linear (torch._C._nn)
                    if not _is_torch_c(callee):
                        return disable
                    torch_c.add(callee)
                else:  # x.item, a pybind function: by its owner's type and its name, not keeping the tensor
                    key = (type(owner), getattr(callee, "__name__", None), getattr(callee, "__module__", None))
                    verdict = methods.get(key)
                    if verdict is None:
                        verdict = methods[key] = _is_torch_c(callee)
                    if not verdict:
                        return disable
            local.start = clock()
            return None

        monitoring.register_callback(tool, monitoring.events.CALL, on_call)
        monitoring.set_events(tool, monitoring.events.CALL)
        self._tool = tool
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tool is None:
            return
        monitoring: Any = getattr(sys, "monitoring")
        monitoring.set_events(self._tool, 0)
        monitoring.register_callback(self._tool, monitoring.events.CALL, None)
        monitoring.free_tool_id(self._tool)
        self._tool = None

    def take(self, now: float) -> float | None:
        """The time since this thread's current call started (None before any), and the next
        sync's start is now: the syncs of one call share one wait."""
        start = getattr(self._local, "start", None)
        self._local.start = now
        return None if start is None else max(now - start, 0.0)
