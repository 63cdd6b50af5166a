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
    uses: dict[str, str] = {}

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_Assert(self, node: cst.Assert) -> None:
            for name in on_cpu_when(node.test, True):
                uses.setdefault(name, code_text(node))

        def visit_If(self, node: cst.If) -> None:
            body = statements(node.body)
            if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Raise):
                for name in on_cpu_when(node.test, False):
                    uses.setdefault(name, f"if {code_text(node.test)}: raise")

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
                uses.setdefault(func_expr.value.value, code_text(node))

    walk(func, Finder())
    return uses
