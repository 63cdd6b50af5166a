"""What a function's own code shows about its names, whatever their annotations say.

A parameter annotated `torch.Tensor` that the function converts with `.numpy()` (which raises
on a GPU tensor), pins, uploads with `non_blocking=True`, or requires on the CPU (`assert
x.device.type == "cpu"`, `if not x.is_cpu: raise ...`) is a host tensor.
"""

from __future__ import annotations

import libcst as cst

from synclint.devices.narrowing import on_cpu_when
from synclint.syntax import code_text, is_literal_true, keyword_arg, statements
from synclint.traversal import walk


def host_uses(func: cst.FunctionDef) -> dict[str, str]:
    """Names that `func` itself treats as host tensors: `x.numpy()` (which raises on a GPU
    tensor), `x.pin_memory()`, `x.to(device, non_blocking=True)` (an upload), and names it
    requires on the CPU (`assert x.device.type == "cpu"`, `if not x.is_cpu: raise ...`). A
    parameter annotated `torch.Tensor` and used so is a host tensor, whatever its annotation says."""
    finder = _HostUses(func)
    walk(func, finder)
    return finder.uses


class _HostUses(cst.CSTVisitor):
    """The walk of `host_uses` (visitor classes live at module level: the walk keeps what it learns of each)."""

    def __init__(self, func: cst.FunctionDef) -> None:
        self.func = func
        self.uses: dict[str, str] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func

    def visit_Assert(self, node: cst.Assert) -> None:
        for name in on_cpu_when(node.test, True):
            self.uses.setdefault(name, code_text(node))

    def visit_If(self, node: cst.If) -> None:
        body = statements(node.body)
        if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Raise):
            for name in on_cpu_when(node.test, False):
                self.uses.setdefault(name, f"if {code_text(node.test)}: raise")

    def visit_Call(self, node: cst.Call) -> None:
        func_expr = node.func
        if not (isinstance(func_expr, cst.Attribute) and isinstance(func_expr.value, cst.Name)):
            return
        method = func_expr.attr.value
        non_blocking = keyword_arg(node, "non_blocking")
        target = keyword_arg(node, "device") or next((arg.value for arg in node.args if arg.keyword is None), None)
        uploads = (
            method in ("to", "cuda")
            and is_literal_true(non_blocking)
            and (target is None or "cpu" not in code_text(target).lower())
        )
        if (method == "numpy" and keyword_arg(node, "force") is None) or method == "pin_memory" or uploads:
            self.uses.setdefault(func_expr.value.value, code_text(node))


# Methods and attributes that only a torch tensor has: numpy arrays, Python values and nn.Modules
# have none of them (`.float()`, `.to()`, `.cuda()` are left out: modules have them too).
TENSOR_ONLY_METHODS = frozenset(
    "backward detach detach_ numel nelement element_size unsqueeze unsqueeze_ permute contiguous masked_fill "
    "masked_fill_ view_as type_as expand_as clone retain_grad long int bool dim new_zeros new_ones "
    "new_empty new_full new_tensor masked_select index_select exp_ log_softmax expand "
    "repeat_interleave scatter_ index_add_ index_fill_ narrow unflatten".split()
)
TENSOR_ONLY_ATTRIBUTES = frozenset("grad is_cuda is_leaf grad_fn requires_grad".split())


def tensor_uses(scope: cst.Module | cst.FunctionDef) -> dict[str, str]:
    """Names that `scope`'s own code uses as only a torch tensor can be used: `loss.backward()`,
    `x.detach()`, `p.grad`, `x.size(0)`, `accelerator.backward(loss)`; each with the first such use.
    (numpy shares `.item()`, `.tolist()`, `.sum()`, `.any()`: those say nothing.)"""
    finder = _TensorUses(scope)
    walk(scope, finder)
    return finder.uses


class _TensorUses(cst.CSTVisitor):
    """The walk of `tensor_uses`."""

    def __init__(self, scope: cst.Module | cst.FunctionDef) -> None:
        self.scope = scope
        self.uses: dict[str, str] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.scope

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "backward" and node.args:
            if isinstance(node.args[0].value, cst.Name):  # `accelerator.backward(loss)`, `fabric.backward(loss)`
                self.uses.setdefault(node.args[0].value.value, code_text(node))
        elif isinstance(func.value, cst.Name) and func.attr.value in TENSOR_ONLY_METHODS and (
                func.value.value not in ("self", "cls")):
            self.uses.setdefault(func.value.value, code_text(node))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in TENSOR_ONLY_ATTRIBUTES and (
                node.value.value not in ("self", "cls")):
            self.uses.setdefault(node.value.value, code_text(node))


def runs_a_model(func: cst.FunctionDef, conventions) -> str | None:
    """The first call in `func`'s own code of something named as a model or a layer
    (`self.transformer(...)`, `model(x)`, `self.unet(...)`): code that runs a model hands it
    tensors on the model's device. None when it calls none."""
    finder = _ModelCall(func, conventions)
    walk(func, finder)
    return finder.found


class _ModelCall(cst.CSTVisitor):
    """The walk of `runs_a_model`."""

    def __init__(self, func: cst.FunctionDef, conventions) -> None:
        self.func = func
        self.conventions = conventions
        self.found: str | None = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.func

    def visit_Call(self, node: cst.Call) -> bool:
        callee = node.func
        if isinstance(callee, cst.Attribute) and callee.attr.value in ("forward", "generate"):
            callee = callee.value  # `self.model.forward(batch)`, `model.generate(ids)`
        name = callee.attr.value if isinstance(callee, cst.Attribute) and isinstance(callee.value, cst.Name) and (
            callee.value.value == "self") else callee.value if isinstance(callee, cst.Name) else None
        by_name = self.conventions.classify(name) if name else None
        if by_name is not None and by_name.is_module and self.found is None:
            self.found = code_text(node.func) + "(...)"
        return self.found is None
