"""Branch narrowing: what a test proves inside the branch it guards.

`if x.is_cpu:`, `if device.type == "cpu":`, `assert not t.is_cuda`: in the branch where such a
test holds, the names it tests are host tensors, and the code there is the CPU side of a
dispatch, where a tensor the code does not place is no more a GPU tensor than not.
"""

from __future__ import annotations

import libcst as cst

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
        if not (isinstance(left, cst.Attribute) and left.attr.value == "type"):
            return set()
        owner = left.value  # `x.device` (x a tensor) or `device`
        if isinstance(owner, cst.Attribute) and owner.attr.value == "device":
            owner = owner.value
        if isinstance(owner, cst.Name) and (text == "cpu" and equal == holds or text == "cuda" and equal != holds):
            return {owner.value}
    return set()
