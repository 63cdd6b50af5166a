"""The CPU simulation: which operations would make the host wait if the tensors lived on a GPU.

Without CUDA nothing waits, so the simulation records the operations that sync on CUDA
(`../shared/reference/sync-catalogue.md`) as they run on the CPU:

- a `TorchDispatchMode` sees every aten operation (`_local_scalar_dense` behind `.item()`,
  `bool(t)`, `int(t)`, f-strings; `nonzero`; `_unique2`; `index` with a bool mask or a host
  index; `copy_` between host and device; `_linalg_check_errors` behind `linalg.inv`, ...);
- a `TorchFunctionMode` sees the Python-level calls that never reach aten on the CPU
  (`.tolist()`, `.numpy()`, `print(t)`, `.to(...)` between "devices", `torch.tensor(list,
  device=...)`) and the CPU kernels that validate on the host where CUDA does not
  (`F.one_hot(x, num_classes=n)` reads `x.max()` on the CPU, never on CUDA);
- the synchronize wrappers count `torch.cuda.synchronize()` and friends.

Where a tensor lives is tracked per tensor object: in the verifier ("placement") the fixture's
`make_inputs` gets the device `cuda:0`; tensors made for it, and everything computed from them,
are "device" tensors (their memory is CPU memory); tensors built without a device are "host"
tensors; `.to()`, `.cuda()`, `.cpu()` and `copy_` move values between the two. Inside the
simulation a device tensor answers `.device` with `cuda:0` and `.is_cuda` with True, and a
`device=` naming CUDA is served on the CPU, so a kernel takes its GPU branch (`if x.is_cuda:`,
`if device.type == "cuda": torch.cuda.synchronize(device)`); `torch.cuda.is_available()`
stays False, so "pinned" buffers are pageable, and CUDA-only APIs (streams, events) fail. In the pytest plugin ("assume") every tensor counts as a device
tensor except those built from host data (`torch.tensor(list)`, `from_numpy`, scalars that
indexing lifts), since a CPU test suite cannot say which of its tensors a GPU run would place.

What the simulation cannot see is in `CATALOGUE_COVERAGE`; the counts are one per syncing
operation, where CUDA's debug mode may count two or three for one op (`bincount`, `isin`).
"""

from __future__ import annotations

import math
import os
import sys
from contextlib import ExitStack, contextmanager
from types import FrameType
from typing import Any, Callable, Iterator, TypeGuard

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakIdKeyDictionary

from synclint.verify.sites import RACE, SYNC, WAIT, Recording, SyncEvent, in_allowed_region, user_site
from synclint.verify.wrappers import synchronize_wrappers

SIM_DEVICE = torch.device("cpu", 0)  # where simulated GPU tensors really live (CPU memory, a device of its own)
SHOWN_DEVICE = torch.device("cuda", 0)  # what they answer to `.device`, so that GPU branches run
PAGEABLE_WAIT_BYTES = 4 << 20  # catalogue: non_blocking from pageable memory waits from 4 MB on

# Which catalogue rows the simulation sees ("yes"), and which it cannot ("no", with why).
CATALOGUE_COVERAGE: dict[str, str] = {
    "nonzero, argwhere, where(cond), x[mask], masked_select, unique*, repeat_interleave without output_size": "yes",
    "bincount, histc without min/max, F.one_hot without num_classes, torch.isin on its sorting path": "yes",
    "t.item(), t.tolist(), bool/int/float(t), f'{t:.3f}', print(t), is_nonzero, x[:t], torch.arange(t)": "yes",
    "if/while/assert on a device tensor, builtin max() over a device tensor, `in`": "yes",
    "x.cpu(), x.to('cpu'), x.numpy() of a device tensor": "yes",
    "host tensor .to(device)/.cuda() without non_blocking, dst.copy_(host) into a device tensor": "yes",
    "torch.tensor/as_tensor/asarray(host data, device=dev), x.new_tensor(list)": "yes",
    "x[[1, 2]] and x[cpu_index] on a device tensor; x[i] = 1.0 (scalar into one element)": "yes",
    "x.masked_fill(mask, device_0dim), torch.equal/allclose of two device tensors": "yes",
    "linalg.inv/cholesky/solve (the error check), Categorical(validate_args), clip_grad_norm_(error_if_nonfinite)": "yes",
    "torch.cuda.synchronize, Event/Stream.synchronize, torch.accelerator.synchronize": "yes (counted, not run)",
    "non_blocking=True copies from pageable memory of 4 MB and more (they wait)": "yes (by size; pinning cannot be simulated)",
    "reading a host buffer filled by a non-blocking device-to-host copy, before any synchronize": "yes (reported as a race)",
    "syncs inside CUDA-only code paths (custom kernels, cuDNN/cuBLAS workspace, NCCL)": "no: the CPU runs other code",
    "pinned vs pageable host memory (torch.cuda.is_available() is False, so pin_memory is off)": "no",
    "the number of syncs per op (CUDA may count 2-3 for one call)": "no: one per operation",
    "code that calls CUDA-only APIs (streams, events, torch.cuda.* queries) on the simulated device": "no: it raises",
    "allocator syncs (cudaFree on a cache flush), lazy CUDA initialisation": "no",
}

_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
_VERIFY_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep

_DATA_DEPENDENT = {"nonzero", "nonzero_numpy", "argwhere", "masked_select", "_unique", "_unique2", "unique_dim",
                   "unique_consecutive", "unique_dim_consecutive", "bincount"}
_INDEX_PUT = {"index_put", "index_put_", "_index_put_impl_"}
_LIFTS = {"lift_fresh", "lift", "lift_fresh_copy"}


def _is_tensor(x: Any) -> TypeGuard[torch.Tensor]:
    return isinstance(x, torch.Tensor)


def _root(t: torch.Tensor) -> torch.Tensor:
    base = t._base
    return base if base is not None else t


def _called_from_torch() -> bool:
    """Is the Python-level torch call being handled made by torch's own Python code?"""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_VERIFY_DIR)
                                 or frame.f_code.co_filename.endswith(os.sep + "overrides.py")):
        frame = frame.f_back
    return frame is not None and os.path.realpath(frame.f_code.co_filename).startswith(_TORCH_DIR)


class Simulator:
    """Tracks where tensors live and records what would sync. One per run; not shared across threads."""

    simulated = True
    kind = "cpu"

    def __init__(self, is_user: Callable[[str], bool], placement: bool = True) -> None:
        self.is_user = is_user
        self.placement = placement
        self.device = SHOWN_DEVICE if placement else torch.device("cpu")
        self._where: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> True (device) / False (host)
        self._pending: WeakIdKeyDictionary = WeakIdKeyDictionary()  # host root -> True: a non-blocking D2H landed here
        self._context: list[bool] = []  # per Python-level torch call: does it take a device tensor?
        self.quiet = 0
        self.recording: Recording | None = None
        self._device_descr = torch._C.TensorBase.__dict__.get("device")
        self._is_cuda_descr = torch._C.TensorBase.__dict__.get("is_cuda")
        self._data_descr = torch._C.TensorBase.__dict__.get("data")

    # ---------------------------------------------------------------- where tensors live

    def on_device(self, t: Any) -> bool:
        if not _is_tensor(t):
            return False
        where = self._where.get(t)
        if where is None:
            base = t._base
            where = self._where.get(base) if base is not None else None
        if where is None:
            return not self.placement  # placement: unknown tensors are host; assume: device
        return where

    def place(self, out: Any, device: bool, skip: tuple = ()) -> None:
        for leaf in tree_leaves(out):
            if _is_tensor(leaf) and not any(leaf is s for s in skip):
                self._where[leaf] = device

    def names_device(self, device: Any) -> bool:
        """Does a `device=` argument name the (simulated) GPU?"""
        if device is None:
            return False
        if isinstance(device, int):
            return True
        try:
            device = torch.device(device)
        except (TypeError, RuntimeError):
            return False
        if not self.placement:
            return True  # assume: any placement is the device
        return device.type != "cpu" or device == SIM_DEVICE

    # ---------------------------------------------------------------- events

    def emit(self, kind: str, op: str) -> None:
        if self.recording is None or self.quiet:
            return
        site, chain = user_site(self.is_user)
        self.recording.add(SyncEvent(kind, op, site, allowed=in_allowed_region(chain)))

    def transfer(self, src: torch.Tensor, to_device: bool, non_blocking: bool, result: torch.Tensor | None,
                 what: str) -> None:
        """A copy between host and device: a sync, a wait, or (device to host, non-blocking) a pending buffer."""
        if to_device:
            if not non_blocking:
                self.emit(SYNC, f"{what}: blocking host-to-device copy")
            elif src.nbytes >= PAGEABLE_WAIT_BYTES:
                self.emit(WAIT, f"{what}: non_blocking copy of {src.nbytes >> 20} MB from pageable memory")
        else:
            if not non_blocking:
                self.emit(SYNC, f"{what}: device-to-host copy")
            elif result is not None:
                self._pending[_root(result)] = True

    def read_host(self, t: torch.Tensor, what: str) -> None:
        if self._pending.get(_root(t)):
            self.emit(RACE, f"{what}: reads a host buffer before its non_blocking device-to-host copy landed")
            self._pending.pop(_root(t), None)

    def synchronized(self, label: str) -> None:
        self.emit(SYNC, f"{label}()")
        self._pending = WeakIdKeyDictionary()

    # ---------------------------------------------------------------- aten level

    def before_aten(self, func, args: tuple, kwargs: dict) -> None:
        name = func.overloadpacket.__name__
        dev = self.on_device
        first = args[0] if args else None
        if name == "_local_scalar_dense":
            if dev(first):
                self.emit(SYNC, "aten._local_scalar_dense (.item(), bool(), int(), float(), format)")
            elif first is not None:
                self.read_host(first, "aten._local_scalar_dense")
            return
        if self._pending and not func.is_view:
            for i, leaf in enumerate(args):
                # Writing into the buffer (copy_, fill_, ...) is no read of it.
                if _is_tensor(leaf) and not (i == 0 and name.endswith("_")) and not dev(leaf):
                    self.read_host(leaf, f"aten.{name}")
        if name in _DATA_DEPENDENT:
            if _is_tensor(first) and dev(first):
                self.emit(SYNC, f"aten.{name} (data-dependent output shape)")
        elif name == "index":
            if dev(first):
                for idx in args[1]:
                    if idx is None:
                        continue
                    if not dev(idx):
                        self.emit(SYNC, "aten.index with a host index (list or CPU tensor): blocking copy of the index")
                        break
                    if idx.dtype in (torch.bool, torch.uint8):
                        self.emit(SYNC, "aten.index with a bool mask (data-dependent output shape)")
                        break
        elif name in _INDEX_PUT:
            self._index_put(args, kwargs)
        elif name == "copy_":
            dst, src = args[0], args[1]
            non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
            if dev(dst) != dev(src):
                self.transfer(src, dev(dst), non_blocking, dst, "copy_")
        elif name == "_to_copy":
            device = kwargs.get("device")
            if device is not None:
                to_device = self.names_device(device)
                if first is not None and to_device != dev(first):
                    self.transfer(first, to_device, bool(kwargs.get("non_blocking", False)), None, "aten._to_copy")
        elif name in ("masked_fill", "masked_fill_"):
            value = args[2] if len(args) > 2 else kwargs.get("value")
            if _is_tensor(value) and dev(value) and dev(first):
                self.emit(SYNC, "aten.masked_fill with a device scalar (read on the host)")
        elif name in ("equal", "allclose"):
            if len(args) > 1 and (dev(args[0]) or dev(args[1])) and args[0] is not args[1]:
                self.emit(SYNC, f"aten.{name} (result read on the host)")
        elif name == "histc":
            lo = args[2] if len(args) > 2 else kwargs.get("min", 0)
            hi = args[3] if len(args) > 3 else kwargs.get("max", 0)
            if dev(first) and lo == hi:
                self.emit(SYNC, "aten.histc without min/max (range read on the host)")
        elif name == "isin":
            elements = args[0] if len(args) > 0 else kwargs.get("elements")
            test = args[1] if len(args) > 1 else kwargs.get("test_elements", kwargs.get("test_element"))
            if _is_tensor(elements) and _is_tensor(test) and dev(elements) and elements.numel():
                # aten's heuristic (numpy's): a test set this long takes the sorting path, which syncs.
                if test.numel() >= int(10.0 * math.pow(float(elements.numel()), 0.145)):
                    self.emit(SYNC, f"aten.isin with a long test set ({test.numel()} elements: sorting path)")
        elif name == "_linalg_check_errors":
            if dev(first):
                self.emit(SYNC, f"aten._linalg_check_errors ({args[1] if len(args) > 1 else 'linalg'} validates on the host)")
        elif name == "repeat_interleave" and func._overloadname in ("Tensor", "self_Tensor"):
            repeats = args[1] if func._overloadname == "self_Tensor" else first
            if _is_tensor(repeats) and dev(repeats) and kwargs.get("output_size") is None:
                self.emit(SYNC, "aten.repeat_interleave without output_size (data-dependent output shape)")

    def _index_put(self, args: tuple, kwargs: dict) -> None:
        dev = self.on_device
        self_t, indices, value = args[0], args[1], args[2]
        accumulate = bool(args[3] if len(args) > 3 else kwargs.get("accumulate", False))
        if not dev(self_t):
            return
        present = [i for i in indices if i is not None]
        if any(not dev(i) for i in present):
            self.emit(SYNC, "index_put_ with a host index (list or CPU tensor): blocking copy of the index")
            return
        masks = [i for i in present if i.dtype in (torch.bool, torch.uint8)]
        if (not accumulate and len(present) == 1 and masks and _is_tensor(value) and value.numel() == 1
                and not dev(value)):
            return  # aten's fast path: masked_fill_ with the host scalar, no wait (catalogue: x[mask] = 0.0)
        if masks:
            self.emit(SYNC, "index_put_ with a bool mask (data-dependent: the mask becomes indices)")
        elif _is_tensor(value) and not dev(value):
            self.emit(SYNC, "index_put_ / setitem of a host scalar or tensor: blocking host-to-device copy")

    def after_aten(self, func, args: tuple, kwargs: dict, out: Any) -> None:
        name = func.overloadpacket.__name__
        if name in _LIFTS:
            self.place(out, False)
            return
        tensors = [leaf for leaf in tree_leaves((args, kwargs)) if _is_tensor(leaf)]
        device = kwargs.get("device")
        if name == "_to_copy" and device is not None:
            where = self.names_device(device)
        elif device is not None and self.names_device(device) and self.placement:
            where = True
        elif tensors:
            where = any(self.on_device(t) for t in tensors)
        elif not self.placement:
            where = True
        else:
            # A factory: placed where its caller asked; inside a Python-level call on device
            # tensors, aten's composites make their temporaries with the input's (real) device.
            where = bool(self._context and self._context[-1])
        self.place(out, where, skip=tuple(tensors))

    # ---------------------------------------------------------------- Python level

    def torch_function(self, func, args: tuple, kwargs: dict) -> Any:
        handler = self._handlers.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        owner = getattr(func, "__self__", None)
        if owner is not None and getattr(func, "__name__", "") == "__get__" and args and _is_tensor(args[0]):
            if self.placement and owner is self._device_descr and self.on_device(args[0]):
                return SHOWN_DEVICE
            if self.placement and owner is self._is_cuda_descr and self.on_device(args[0]):
                return True
        if owner is self._data_descr and getattr(func, "__name__", "") == "__set__" and len(args) > 1:
            result = func(*args, **kwargs)  # `param.data = moved` (Module.to): the tensor now lives where `moved` does
            self.place(args[0], self.on_device(args[1]))
            return result
        if self.placement:
            args, kwargs = self._serve_on_cpu(args, kwargs)
        tensors = [leaf for leaf in tree_leaves((args, kwargs)) if _is_tensor(leaf)]
        self._context.append(any(self.on_device(t) for t in tensors))
        try:
            return func(*args, **kwargs)
        finally:
            self._context.pop()

    def _serve_on_cpu(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """A CUDA device in a call's arguments becomes the simulated device (real CPU memory)."""

        def cuda(value: Any) -> bool:
            return isinstance(value, torch.device) and value.type == "cuda"

        if any(cuda(a) for a in args):
            args = tuple(SIM_DEVICE if cuda(a) else a for a in args)
        device = kwargs.get("device")
        if device is not None and not isinstance(device, torch.device):
            try:
                device = torch.device(device)
            except (TypeError, RuntimeError, ValueError):
                device = None
        if cuda(device):
            kwargs = {**kwargs, "device": SIM_DEVICE}
        return args, kwargs

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        self.quiet += 1
        try:
            yield
        finally:
            self.quiet -= 1

    def _move(self, src: torch.Tensor, to_device: bool | None, non_blocking: bool, call: Callable[[], torch.Tensor],
              what: str) -> torch.Tensor:
        """Run a move on the CPU and keep host and device copies apart (a real cross-device move copies)."""
        from_device = self.on_device(src)
        with self._quiet():
            result = call()
            if to_device is None:
                to_device = from_device
            if to_device != from_device and result is src:
                result = src.clone()
        if to_device != from_device:
            self.transfer(src, to_device, non_blocking, result, what)
        self.place(result, to_device)
        return result

    def _to(self, func, args, kwargs):
        src, rest = args[0], args[1:]
        other = rest[0] if rest and _is_tensor(rest[0]) else kwargs.get("other")
        if _is_tensor(other):
            to_device: bool | None = self.on_device(other)
            non_blocking = bool(rest[1] if len(rest) > 1 else kwargs.get("non_blocking", False))
            return self._move(src, to_device, non_blocking, lambda: func(*args, **kwargs), ".to(tensor)")
        device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*rest, **kwargs)
        if device is None:
            to_device = None
        elif not self.placement:
            to_device = None if device.type == "cpu" else True  # a CPU test cannot tell placement from a copy back
        elif device == torch.device("cpu") and _called_from_torch():
            # torch's own code (clip_grad_norm_, optimizers) moves tensors to devices that its C++
            # grouping read off the real tensors, which live on the CPU here: same-device moves.
            to_device = None
        else:
            to_device = self.names_device(device)
        options: dict[str, Any] = {"non_blocking": non_blocking, "copy": bool(kwargs.get("copy", False))}
        if dtype is not None:
            options["dtype"] = dtype
        if memory_format is not None:
            options["memory_format"] = memory_format
        real_device = None if device is None else torch.device("cpu")
        return self._move(src, to_device, bool(non_blocking),
                          lambda: func(src, real_device, **options) if real_device is not None else func(src, **options),
                          ".to()")

    def _cuda(self, func, args, kwargs):
        if not self.placement:
            return func(*args, **kwargs)
        src = args[0]
        non_blocking = bool(args[2] if len(args) > 2 else kwargs.get("non_blocking", False))
        return self._move(src, True, non_blocking, lambda: src, ".cuda()")

    def _cpu(self, func, args, kwargs):
        src = args[0]
        return self._move(src, False, False, lambda: func(*args, **kwargs), ".cpu()")

    @staticmethod
    def _read(label: str):
        def handler(self, func, args, kwargs):
            src = args[0]
            if self.on_device(src):
                self.emit(SYNC, f"{label}: device-to-host read")
            else:
                self.read_host(src, label)
            with self._quiet():
                return func(*args, **kwargs)

        return handler

    def _format(self, func, args, kwargs):
        if args[0].dim() == 0:  # a 0-dim tensor formats through .item(): the aten level sees it
            return func(*args, **kwargs)
        return Simulator._read("format(tensor)")(self, func, args, kwargs)

    @staticmethod
    def _from_data(label: str, method: bool = False):
        """torch.tensor / as_tensor / asarray / Tensor.new_tensor: host data copied where `device=` says."""

        def handler(self, func, args, kwargs):
            data = args[1] if method else (args[0] if args else kwargs.get("data", kwargs.get("obj")))
            device = kwargs.get("device")
            to_device: bool | None
            if device is not None:
                to_device = self.names_device(device)
            elif method:
                to_device = self.on_device(args[0])
            elif _is_tensor(data):
                to_device = None  # torch.tensor(t) / as_tensor(t) stay where t is
            else:
                to_device = False
            if device is not None:
                kwargs = {**kwargs, "device": torch.device("cpu")}
            if _is_tensor(data):
                return self._move(data, to_device, False, lambda: func(*args, **kwargs), label)
            if any(_is_tensor(leaf) and self.on_device(leaf) for leaf in tree_leaves(data)):
                self.emit(SYNC, f"{label} of device tensors: each element read on the host")
            with self._quiet():
                result = func(*args, **kwargs)
            if to_device:
                self.emit(SYNC, f"{label}(host data, device=...): blocking host-to-device copy")
            self.place(result, to_device)
            return result

        return handler

    def _one_hot(self, func, args, kwargs):
        tensor = args[0]
        num_classes = args[1] if len(args) > 1 else kwargs.get("num_classes", -1)
        where = self.on_device(tensor)
        if where and num_classes in (-1, None):
            self.emit(SYNC, "F.one_hot without num_classes (class count read on the host)")
        # The CPU kernel validates the values with .item() whatever num_classes says; CUDA does not.
        with self._quiet():
            result = func(*args, **kwargs)
        self.place(result, where)
        return result

    _handlers: dict[Any, Callable] = {}

    @classmethod
    def _install_handlers(cls) -> None:
        if cls._handlers:
            return
        T = torch.Tensor
        cls._handlers = {
            T.to: cls._to,
            T.cuda: cls._cuda,
            T.cpu: cls._cpu,
            T.tolist: cls._read(".tolist()"),
            T.numpy: cls._read(".numpy()"),
            T.__array__: cls._read("numpy.asarray(tensor)"),
            T.__repr__: cls._read("print/repr(tensor)"),
            T.__format__: cls._format,
            torch.tensor: cls._from_data("torch.tensor"),
            torch.as_tensor: cls._from_data("torch.as_tensor"),
            torch.asarray: cls._from_data("torch.asarray"),
            T.new_tensor: cls._from_data("Tensor.new_tensor", method=True),
            torch.nn.functional.one_hot: cls._one_hot,
        }

    # ---------------------------------------------------------------- entering

    @contextmanager
    def _modes(self) -> Iterator[None]:
        self._install_handlers()
        with ExitStack() as stack:
            stack.enter_context(_FunctionMode(self))
            stack.enter_context(_DispatchMode(self))
            yield

    @contextmanager
    def prepare(self) -> Iterator[None]:
        """Track placement while building inputs; record nothing."""
        with self._modes():
            yield

    @contextmanager
    def watch(self, recording: Recording | None = None) -> Iterator[Recording]:
        recording = Recording() if recording is None else recording
        self.recording = recording
        try:
            with synchronize_wrappers(self.synchronized, call_through=False), self._modes():
                yield recording
        finally:
            self.recording = None


class _FunctionMode(TorchFunctionMode):
    def __init__(self, sim: Simulator) -> None:
        super().__init__()
        self.sim = sim

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return self.sim.torch_function(func, args, kwargs or {})


class _DispatchMode(TorchDispatchMode):
    def __init__(self, sim: Simulator) -> None:
        super().__init__()
        self.sim = sim

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        sim = self.sim
        with torch._C.DisableTorchFunction():
            if not sim.quiet:
                sim.before_aten(func, args, kwargs)
            out = func(*args, **kwargs)
            sim.after_aten(func, args, kwargs, out)
        return out
