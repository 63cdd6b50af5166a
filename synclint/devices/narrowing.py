"""Branch narrowing: what a test proves inside the branch it guards.

`if x.is_cpu:`, `if device.type == "cpu":`, `assert not t.is_cuda`: in the branch where such a
test holds, the names it tests are host tensors, and the code there is the CPU side of a
dispatch, where a tensor the code does not place is no more a GPU tensor than not.
"""

from __future__ import annotations

import re

import libcst as cst

from synclint.devices.conventions import OTHER_DEVICE_TYPES, platform_name
from synclint.devices.lattice import Env, host_tensor
from synclint.syntax import code_text

# The key, in an environment, that marks code that runs only off the GPU (see `_on_cpu_in`):
# no Python name can collide with it.
CPU_PATH = " cpu path"


def on_cpu_in(env: Env, test: cst.BaseExpression, holds: bool) -> Env:
    """`env` where `test` is `holds`: the tensors and devices it proves on the CPU are host tensors."""
    names = on_cpu_when(test, holds)
    if not names:
        return env
    refined = dict(env)
    for name in names:
        refined[name] = host_tensor(f"{name} is on the CPU where `{code_text(test)}` is {holds}")
    # The code dispatches on the device here: what runs in this branch is the CPU path, where
    # a tensor the code does not place (a parameter, a buffer) is no more a GPU tensor than not.
    refined[CPU_PATH] = host_tensor(f"this path runs only where `{code_text(test)}` is {holds}")
    return refined


def on_cpu_when(test: cst.BaseExpression, holds: bool) -> set[str]:
    """The names that `test` being `holds` proves on the CPU: `x.device.type == "cpu"`,
    `x.is_cpu`, `not x.is_cuda`, and devices: `device.type == "cpu"` (each joined by `and`
    when it holds, by `or` when it fails)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return on_cpu_when(test.expression, not holds)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == holds:
            return on_cpu_when(test.left, holds) | on_cpu_when(test.right, holds)
        return set()
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name):
        if test.attr.value == "is_cpu" and holds or test.attr.value == "is_cuda" and not holds:
            return {test.value.value}
        return set()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, target = test.left, test.comparisons[0]
        equal = isinstance(target.operator, cst.Equal)
        if not equal and not isinstance(target.operator, cst.NotEqual):
            return set()
        text = code_text(target.comparator).strip("\"'")
        on_cpu = text == "cpu" and equal == holds or text == "cuda" and equal != holds
        if isinstance(left, cst.Name) and "device" in left.value.lower():
            return {left.value} if on_cpu else set()  # `device_type == "cuda"`, `device == "cpu"`
        if not (isinstance(left, cst.Attribute) and left.attr.value == "type"):
            return set()
        owner = left.value  # `x.device` (x a tensor) or `device`
        if isinstance(owner, cst.Attribute) and owner.attr.value == "device":
            owner = owner.value
        if isinstance(owner, cst.Name) and (text == "cpu" and equal == holds or text == "cuda" and equal != holds):
            return {owner.value}
    return set()


def tensors_when(test: cst.BaseExpression, holds: bool, qualname) -> dict[str, str]:
    """The names that `test` being `holds` proves torch tensors, each with the test's text:
    `isinstance(x, torch.Tensor)`, `torch.is_tensor(x)` (joined by `and` when it holds, by `or`
    when it fails). `qualname(expr)` gives an expression's qualified name through the imports."""
    return _proven(test, holds, lambda call: _is_tensor_check(call, qualname))


# Types whose instances live on the host: `isinstance(x, (str, Path))` proves `x` no tensor.
HOST_TYPES = frozenset("str bytes int float bool complex list tuple dict set frozenset Path PurePath PathLike".split())
HOST_MODULES = ("numpy.", "pathlib.", "PIL.", "os.")


def hosts_when(test: cst.BaseExpression, holds: bool, qualname) -> dict[str, str]:
    """The names that `test` being `holds` proves host values, each with the test's text:
    `isinstance(x, (str, Path))`, `isinstance(x, np.ndarray)` (joined as `tensors_when` joins)."""
    def host_kind(kind: cst.BaseExpression) -> bool:
        qual = qualname(kind) or (kind.value if isinstance(kind, cst.Name) else "")
        return qual in HOST_TYPES or qual.startswith(HOST_MODULES)

    return _proven(test, holds, lambda call: (kinds := _isinstance_kinds(call)) is not None and all(map(host_kind, kinds)))


def _proven(test: cst.BaseExpression, holds: bool, check) -> dict[str, str]:
    """The names that `test` being `holds` proves of the kind `check(call)` accepts of a call on a
    name (`isinstance(x, ...)`), each with the test's text: through `not`, and joined by `and`
    when it holds, by `or` when it fails."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _proven(test.expression, not holds, check)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == holds:
            return {**_proven(test.left, holds, check), **_proven(test.right, holds, check)}
        return {}
    if not holds or not isinstance(test, cst.Call) or not test.args or not isinstance(test.args[0].value, cst.Name):
        return {}
    return {test.args[0].value.value: code_text(test)} if check(test) else {}


def _isinstance_kinds(call: cst.Call) -> list[cst.BaseExpression] | None:
    """The classes `isinstance(x, C)` or `isinstance(x, (C, D))` tests for; None for another call."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "isinstance" and len(call.args) == 2):
        return None
    kinds = call.args[1].value
    return [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]


def _is_tensor_check(call: cst.Call, qualname) -> bool:
    kinds = _isinstance_kinds(call)
    if kinds is None:
        return qualname(call.func) == "torch.is_tensor"
    return all((qualname(kind) or "").startswith("torch.") and (qualname(kind) or "").endswith("Tensor") for kind in kinds)


# The key, in an environment, that marks code that runs only on another accelerator (XPU, NPU,
# TPU/XLA, HPU, MPS, ...): its value's `because` names it. No Python name can collide with it.
OTHER_PLATFORM = " other platform"
_OTHER_PLATFORMS = OTHER_DEVICE_TYPES
_PLATFORM_CHECK = re.compile(rf"^is_(?:torch_)?({'|'.join((*OTHER_DEVICE_TYPES, 'ipex', 'habana', 'gaudi'))})"
                             r"(?:_available|_installed)?$")
# `torch.backends.mps.is_available()`, `torch.xpu.is_available()`: a platform's own module asked.
_MODULE_CHECKS = ("is_available", "is_built", "is_initialized")
_PLATFORM_NAME = re.compile(rf"(?:^|_)({'|'.join(OTHER_DEVICE_TYPES)})(?:$|_)", re.IGNORECASE)


def other_platform_when(test: cst.BaseExpression, holds: bool) -> str | None:
    """The accelerator other than a CUDA GPU that `test` being `holds` proves the code runs on:
    `device.type == "xpu"`, `is_npu_available()`, `current_platform.is_tpu()`,
    `state.distributed_type == DistributedType.XLA`, `hasattr(torch, "npu")`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return other_platform_when(test.expression, not holds)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == holds:
            return other_platform_when(test.left, holds) or other_platform_when(test.right, holds)
        return None
    if not holds:
        return None
    if isinstance(test, cst.Call):
        name = test.func.attr.value if isinstance(test.func, cst.Attribute) else (
            test.func.value if isinstance(test.func, cst.Name) else "")
        match = _PLATFORM_CHECK.match(name)
        if match:
            return platform_name(match.group(1))
        if name in _MODULE_CHECKS and isinstance(test.func, cst.Attribute):
            owner = code_text(test.func.value).split(".")
            if owner[0] == "torch" and owner[-1] in _OTHER_PLATFORMS:
                return owner[-1].upper()
        if name == "hasattr" and len(test.args) == 2 and isinstance(test.args[1].value, cst.SimpleString):
            attr = test.args[1].value.evaluated_value
            if isinstance(attr, str) and attr in _OTHER_PLATFORMS and code_text(test.args[0].value) == "torch":
                return attr.upper()
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.Is, cst.In)):
            return None
        for side in (test.left, target.comparator):
            if isinstance(side, cst.SimpleString):
                text = side.evaluated_value if isinstance(side.evaluated_value, str) else ""
                if text.split(":")[0] in _OTHER_PLATFORMS:
                    return text.split(":")[0].upper()
            elif isinstance(side, cst.Attribute):
                match = _PLATFORM_NAME.search(side.attr.value)
                if match and side.attr.value.isupper():  # `DistributedType.XLA`, `DeviceType.MULTI_NPU`
                    return match.group(1).upper()
    return None
