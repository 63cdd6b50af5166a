"""What a function's own code shows about its names, whatever their annotations say.

A parameter annotated `torch.Tensor` that the function converts with `.numpy()` (which raises
on a GPU tensor), pins, uploads with `non_blocking=True`, or requires on the CPU (`assert
x.device.type == "cpu"`, `if not x.is_cpu: raise ...`) is a host tensor.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from synclint.devices.narrowing import on_cpu_when
from synclint.syntax import code_text, is_literal_true, keyword_arg, statements


def host_uses(own: Iterable[cst.CSTNode]) -> dict[str, str]:
    """Names that a function itself treats as host tensors, from the nodes of its own code (`own`:
    `ModuleScopes.own_nodes`, classes it defines included): `x.numpy()` (which raises on a GPU
    tensor), `x.pin_memory()`, `x.to(device, non_blocking=True)` (an upload), and names it
    requires on the CPU (`assert x.device.type == "cpu"`, `if not x.is_cpu: raise ...`). A
    parameter annotated `torch.Tensor` and used so is a host tensor, whatever its annotation says."""
    uses: dict[str, str] = {}
    for node in own:
        if isinstance(node, cst.Assert):
            for name in on_cpu_when(node.test, True):
                uses.setdefault(name, code_text(node))
        elif isinstance(node, cst.If):
            body = statements(node.body)
            if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Raise):
                for name in on_cpu_when(node.test, False):
                    uses.setdefault(name, f"if {code_text(node.test)}: raise")
        elif isinstance(node, cst.Call):
            func_expr = node.func
            if not (isinstance(func_expr, cst.Attribute) and isinstance(func_expr.value, cst.Name)):
                continue
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
    return uses


# Methods and attributes that only a torch tensor has: numpy arrays, Python values and nn.Modules
# have none of them (`.float()`, `.to()`, `.cuda()` are left out: modules have them too).
TENSOR_ONLY_METHODS = frozenset(
    "backward detach detach_ numel nelement element_size unsqueeze unsqueeze_ permute contiguous masked_fill "
    "masked_fill_ view_as type_as expand_as clone retain_grad long int bool dim new_zeros new_ones "
    "new_empty new_full new_tensor masked_select index_select exp_ log_softmax expand "
    "repeat_interleave scatter_ index_add_ index_fill_ narrow unflatten".split()
)
TENSOR_ONLY_ATTRIBUTES = frozenset("grad is_cuda is_leaf grad_fn requires_grad".split())


def tensor_uses(own: Iterable[cst.CSTNode]) -> dict[str, str]:
    """Names that a scope's own code (`own`: `ModuleScopes.own_nodes`, not the classes it defines)
    uses as only a torch tensor can be used: `loss.backward()`, `x.detach()`, `p.grad`, `x.size(0)`,
    `accelerator.backward(loss)`; each with the first such use. (numpy shares `.item()`,
    `.tolist()`, `.sum()`, `.any()`: those say nothing.)"""
    uses: dict[str, str] = {}
    for node in own:
        if isinstance(node, cst.Call):
            func = node.func
            if not isinstance(func, cst.Attribute):
                continue
            if func.attr.value == "backward" and node.args:
                if isinstance(node.args[0].value, cst.Name):  # `accelerator.backward(loss)`, `fabric.backward(loss)`
                    uses.setdefault(node.args[0].value.value, code_text(node))
            elif isinstance(func.value, cst.Name) and func.attr.value in TENSOR_ONLY_METHODS and (
                    func.value.value not in ("self", "cls")):
                uses.setdefault(func.value.value, code_text(node))
        elif isinstance(node, cst.Attribute):
            if isinstance(node.value, cst.Name) and node.attr.value in TENSOR_ONLY_ATTRIBUTES and (
                    node.value.value not in ("self", "cls")):
                uses.setdefault(node.value.value, code_text(node))
    return uses


def runs_a_model(own: Iterable[cst.CSTNode], conventions) -> str | None:
    """The first call in a function's own code (`own`: `ModuleScopes.own_nodes`, classes it defines
    included) of something named as a model or a layer (`self.transformer(...)`, `model(x)`,
    `self.unet(...)`): code that runs a model hands it tensors on the model's device. None when it
    calls none."""
    for node in own:
        if not isinstance(node, cst.Call):
            continue
        callee = node.func
        if isinstance(callee, cst.Attribute) and callee.attr.value in ("forward", "generate"):
            callee = callee.value  # `self.model.forward(batch)`, `model.generate(ids)`
        name = callee.attr.value if isinstance(callee, cst.Attribute) and isinstance(callee.value, cst.Name) and (
            callee.value.value == "self") else callee.value if isinstance(callee, cst.Name) else None
        by_name = conventions.classify(name) if name else None
        if by_name is not None and by_name.is_module:
            return code_text(node.func) + "(...)"
    return None
