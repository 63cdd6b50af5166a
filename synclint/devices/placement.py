"""Where a device spec puts a tensor: the strings torch parses as devices (`"cuda"`, `"cuda:0"`,
`f"cuda:{rank}"`), `torch.device(...)`, the names and attributes that hold one, `device=` arguments
and `.to(...)` targets. A spec is a host value with a `spec` (lattice.py); joined over branches,
`"cuda" if c else "cpu"` is the GPU on one path, so a copy to it may block.

The evaluator (evaluate.py) mixes this in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from synclint.devices.conventions import names_a_device, names_the_host
from synclint.devices.lattice import HOST, UNKNOWN, Env, Place, Where, device, host_tensor, join_spec
from synclint.devices.torch_api import DTYPE_NAMES
from synclint.evidence import Basis, Certainty
from synclint.syntax import Scope, code_text, keyword_arg, last_name, names_in

if TYPE_CHECKING:
    from synclint.devices.model import DeviceModel
    from synclint.devices.symbols import Symbols


class Placement:
    """The evaluator's part that reads device specs (mixed into `Evaluator`)."""

    model: DeviceModel
    symbols: Symbols
    scope: Scope | None
    env: Env

    def eval(self, expr: cst.BaseExpression) -> Where:
        raise NotImplementedError

    def _eval_SimpleString(self, expr: cst.SimpleString) -> Where:
        """A string; one that torch parses as a device (`"cuda"`, `"cuda:0"`, `"cpu"`) is a device spec."""
        text = expr.evaluated_value
        spec = self.device_of(expr) if isinstance(text, str) and parses_as_device(text) else None
        return replace(HOST, spec=spec) if spec is not None and spec.place is not Place.UNKNOWN else HOST

    def _eval_FormattedString(self, expr: cst.FormattedString) -> Where:
        """`f"cuda:{rank}"`: whatever the index, a device of the type its text begins with."""
        kind = formatted_device_type(expr)
        if kind is None:
            return HOST
        spec = self.device_of(cst.SimpleString(repr(kind)))
        return replace(HOST, spec=Where(spec.place, spec.certainty, f"device {code_text(expr)}"))


    def _to_target(self, call: cst.Call) -> Where | None:
        """Where `.to(...)` puts the tensor, or None when it keeps the device (dtype only)."""
        device_arg = keyword_arg(call, "device")
        candidates = [device_arg] if device_arg is not None else [a.value for a in call.args if a.keyword is None][:1]
        for arg in candidates:
            qual = self.symbols.qualname(arg) or ""
            if qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in DTYPE_NAMES:
                return None
            if isinstance(arg, cst.Attribute) and arg.attr.value == "dtype":
                return None
            placed = self.device_of(arg)
            if placed.place is Place.UNKNOWN:
                other = self.eval(arg)
                if other.on_device:  # `x.to(grad)`: to the device (and dtype) of another tensor
                    return Where(Place.DEVICE, max(other.certainty, Certainty.MEDIUM), f"moved to the device of `{code_text(arg)}`")
                return None
            if placed.on_device:
                because = f"moved by .to({code_text(arg)})"
                if placed.certainty < Certainty.HIGH and placed.because and placed.because != code_text(arg):
                    because += f" ({placed.because})"  # `dev` is the GPU on one path
                return Where(placed.place, placed.certainty, because, basis=spec_basis(arg, placed))
            return placed
        return None

    def cpu_by_default(self, name: str) -> Where | None:
        """For a parameter `name` of the function whose default is the CPU (`device="cpu"`,
        `device=torch.device("cpu")`) and that no call in this file sets: a spec of unknown place that
        says so (`CPU_BY_DEFAULT`), which an attribute it is stored in keeps (`self._device = device`,
        `torch.device(device)`), in this class and, through the project's facts, in its subclasses."""
        if not isinstance(self.scope, cst.FunctionDef):
            return None
        param = self.model.symbols.parameter(self.scope, name)
        default = param.default if param is not None else None
        if (isinstance(default, (cst.SimpleString, cst.Call)) and self.device_of(default).on_host
                and not self.model.passed_here(self.scope, name)):
            return CPU_BY_DEFAULT
        return None

    def device_of(self, arg: cst.BaseExpression) -> Where:
        """What a `device=` argument (or the first argument of `.to`) means."""
        if isinstance(arg, cst.SimpleString):
            text = arg.evaluated_value if isinstance(arg.evaluated_value, str) else ""
            if text.startswith("cpu") or text == "meta":
                return host_tensor(f"device {text!r}")
            kind = text.split(":", 1)[0]
            if kind and kind != "cuda" and kind.isidentifier():
                # `"xpu"`, `"npu:0"`, `"mps"`, `"musa"`: a device, but another accelerator's, where the
                # host waits for it and not for a CUDA GPU (ROCm GPUs are "cuda" to torch)
                return Where(Place.DEVICE, Certainty.LOW, f"device {text!r}, not a CUDA GPU")
            return device(f"device {text!r}")
        if isinstance(arg, cst.Integer):
            return device(f"device {arg.value}")
        if isinstance(arg, cst.Name) and arg.value == "None":
            return host_tensor("device=None")
        if isinstance(arg, cst.Call) and self.symbols.qualname(arg.func) == "torch.device" and arg.args:
            named = keyword_arg(arg, "type") or arg.args[0].value
            return self.device_of(named)
        if isinstance(arg, cst.IfExp):  # what the code says on each path, before what its text reads as
            return join_spec_or_unknown(self.device_of(arg.body), self.device_of(arg.orelse))
        if isinstance(arg, cst.BooleanOperation):  # `device or "cpu"`: one or the other
            return join_spec_or_unknown(self.device_of(arg.left), self.device_of(arg.right))
        if isinstance(arg, (cst.Name, cst.Attribute, cst.Subscript, cst.FormattedString)):
            spec = self.eval(arg).spec  # a device spec the code made (`dev = "cuda" if c else "cpu"`)
            if spec is not None:
                return spec
        if isinstance(arg, cst.Call) and (self.symbols.qualname(arg.func) or "").endswith("current_device"):
            return device(code_text(arg))
        if isinstance(arg, cst.Call) and not self.model.host_code and names_a_device(last_name(arg.func) or "") and (
                not names_the_host(code_text(arg))):
            return device(code_text(arg))  # `get_accelerator().get_current_device()`, `get_device_of_batch(b)`
        if isinstance(arg, cst.Attribute) and arg.attr.value == "device":
            owner = self.eval(arg.value)
            if owner.on_device and owner.certainty is Certainty.LOW:
                owner = UNKNOWN  # a tensor of unknown device: `x.device` names the device it computes on
            if owner.is_tensor:
                return Where(owner.place, owner.certainty, f"{code_text(arg)}" if owner.on_device else None)
            text = code_text(arg)
            if "cpu" in text.lower():
                return host_tensor(text)
            if self.model.host_code:
                return UNKNOWN  # host-side code: a device variable there is as often the CPU
            # A module's device is where it was put; a settings object's or an unknown value's, a guess.
            return device(text, Certainty.MEDIUM if owner.place in (Place.UNKNOWN, Place.HOST) else Certainty.HIGH)
        text = code_text(arg)
        if names_the_host(text):
            return host_tensor(text)
        if isinstance(arg, cst.Name) and (known := self.env.get(arg.value)) is not None and known.place is Place.HOST_TENSOR:
            return known  # a device the code tested: `if device.type == "cpu":`
        if isinstance(arg, cst.Name) and isinstance(self.scope, cst.FunctionDef):
            values = self.model.local_values(self.scope).get(arg.value, ())
            if len(values) == 1 and values[0] is not None and arg.value not in names_in(values[0]):
                # `device = x.device` (or `... if ... else None`) with `x` on the CPU: the CPU.
                assigned = self.device_of(values[0])
                if assigned.on_host:
                    return host_tensor(f"{arg.value} = {code_text(values[0])}")
            param = self.model.symbols.parameter(self.scope, arg.value)
            default = param.default if param is not None else None
            if (cpu := self.cpu_by_default(arg.value)) is not None:
                return cpu  # `device: str = "cpu"` that no call in this file sets: the CPU unless a caller asks
            if (isinstance(default, cst.Name) and default.value == "None" and not values and not self.model.host_code
                    and not self.model.passed_here(self.scope, arg.value)):
                # `device=None` that no call in this file sets: the GPU where a caller passes one, the
                # default device (the CPU) where none does; a sync here is not proven for every caller
                return device("a parameter that defaults to None: the GPU where a caller passes one", Certainty.MEDIUM)
        if isinstance(arg, (cst.Name, cst.Attribute)) and not self.model.host_code and names_a_device(text):
            return device(text)
        return UNKNOWN


# A device that is the CPU unless a caller asks for another: the host, as the code is run by default.
CPU_BY_DEFAULT = host_tensor("a device parameter that defaults to the CPU")

# The device types torch parses (`torch.device("cuda:0")`); a string of one of them, with or without
# an index, is a device spec.
DEVICE_TYPES = frozenset(
    "cpu cuda meta mps xpu npu hpu xla mtia musa ipu ve lazy vulkan opengl opencl ideep hip fpga maia "
    "privateuseone".split()
)


def parses_as_device(text: str) -> bool:
    kind, _, index = text.partition(":")
    return kind in DEVICE_TYPES and (not index or index.isdigit())


def formatted_device_type(expr: cst.FormattedString) -> str | None:
    """The device type of `f"cuda:{rank}"` (its text up to the first `:`), or None."""
    first = expr.parts[0] if expr.parts else None
    if not isinstance(first, cst.FormattedStringText) or ":" not in first.value:
        return None
    kind = first.value.split(":", 1)[0]
    return kind if kind in DEVICE_TYPES and first.value.split(":", 1)[1] == "" and len(expr.parts) == 2 else None


def join_spec_or_unknown(a: Where, b: Where) -> Where:
    """Where a tensor put on `a if c else b` lives (UNKNOWN when nothing is known)."""
    joined = join_spec(a, b)
    return joined if joined is not None else UNKNOWN


def spec_basis(spec: cst.BaseExpression, placed: Where) -> Basis:
    """What a tensor made on or moved to the device `spec` names rests on: a variable or parameter
    (`device=dev`: whatever callers or configuration make it), a value's own device (`x.device`: where
    that value already lives), or else what the spec's own place rests on."""
    if isinstance(spec, cst.Attribute) and spec.attr.value == "device":
        return Basis.SPEC_OF_VALUE
    if isinstance(spec, cst.Name):
        return Basis.SPEC_NAME
    return placed.basis
