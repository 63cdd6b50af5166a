"""SYNC101 sync-in-condition."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import bool_operands, logical_nodes, statements_code, tensor_phrase
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import find_all, method_call, parameter

GUARDED_CLAMP = """import torch


def cast_overflow_tensors(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""
UNCONDITIONAL_CLAMP = """import torch


def cast_overflow_tensors(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    clamp_value = torch.finfo(x.dtype).max - offset
    x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""


class SyncInCondition(Rule):
    code = "SYNC101"
    name = "sync-in-condition"
    summary = "A GPU tensor is used where Python needs a bool, so the host waits for the GPU"
    prefilter = ("torch",)
    docs = """
    ## What it does
    Flags a CUDA tensor evaluated for truth by Python: the test of `if`, `while`, `assert` and
    `a if cond else b`, the operands of `and`, `or` and `not`, `bool(t)`, and `t.item()` used
    as a condition. `t.any()` alone stays on the GPU and is not flagged; `if t.any():` is.

    ## Why is this bad?
    Python needs the value now, so PyTorch copies it to the host, and the copy waits for
    every kernel queued before it: the host stops feeding the GPU (measured on an H100:
    `if (x > 3).any():` returns after 20 ms with 20 ms of work queued, 140 us when idle).
    `x.isinf().any() or x.isnan().any()` waits twice.

    ## Example
    ```python
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - 1000
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    ```

    ## Use instead
    Keep the decision on the GPU: compute both branches and select with `torch.where`, or do
    the work unconditionally when it is harmless (vLLM PR #42347 made this clamp
    unconditional: 2-8x faster than the guarded version).
    ```python
    clamp_value = torch.finfo(x.dtype).max - 1000
    x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    ```

    ## Fix safety
    The guarded clamp (`if <t>.isinf().any() or <t>.isnan().any():` around a clamp of `t`)
    is rewritten to the unconditional clamp, as an unsafe fix: it is bit-identical for
    bfloat16 and float32, but for float16 it changes finite values beyond the clamp bound
    (65,504 becomes 64,504) that the guarded version left alone. Other conditions have no fix.
    """

    VALID = [
        Valid("import numpy as np\na = np.zeros(3)\nif a.any():\n    pass\n"),
        Valid("import torch\nx = torch.zeros(3, device='cuda')\nflag = x.any()\n"),
        Valid("import torch\nx = torch.zeros(3, device='cuda')\nif x is not None and x.shape[0] > 0:\n    pass\n"),
        Valid("import torch\nx = torch.zeros(3)\nif x.any():\n    pass\n"),
        Valid("def launch(args):\n    if args.multi_gpu:\n        return 'torchrun'\n"),  # a flag named like a GPU tensor
        # `if mask:` of an optional tensor is a None check (a tensor of many elements has no truth value).
        Valid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):\n"
              "        if mask:\n            x = x * mask\n        return x\n"),
        # A name that asks a yes/no question about the device is a flag, not a tensor on it.
        Valid(
            "import torch\nfrom vllm.platforms import current_platform\nclass TopK(torch.nn.Module):\n"
            "    def __init__(self):\n        self._is_cuda = current_platform.is_cuda()\n"
            "        self._capable = self._is_cuda and current_platform.has_device_capability(90)\n"
            "    def forward(self, x: torch.Tensor):\n        if self._is_cuda and not self._capable:\n            pass\n"
        ),
        Valid(
            "import torch\nfrom vllm.utils import gpu_sync_allowed\nx = torch.ones(2, device='cuda')\n"
            "with gpu_sync_allowed():\n    assert (x > 0).all()\n"
        ),
    ]
    INVALID = [
        Invalid(GUARDED_CLAMP, expected_fix=UNCONDITIONAL_CLAMP, count=2),
        Invalid(
            "import torch\n\ndef f(n):\n    x = torch.randn(n, device='cuda')\n"
            "    if x.isinf().any() or x.isnan().any():\n        x = x * 0\n    return x\n",
            count=2,
            confidence=Confidence.HIGH,
        ),
        Invalid("import torch\nt = torch.ones(4).cuda()\nwhile t.sum() > 0:\n    t -= 1\n"),
        Invalid("import torch\nt = torch.ones(4, device='cuda')\nassert (t >= 0).all()\n"),
        Invalid("import torch\nt = torch.ones(1, device='cuda')\ny = 1 if t.item() else 2\n"),
        Invalid("import torch\nt = torch.ones(1, device='cuda')\nok = not t\n"),
        Invalid("import torch\nt = torch.ones(1, device='cuda')\nu = t\nz = t and u\n", count=1),
        Invalid("import torch\nt = torch.ones(1, device='cuda')\nflag = bool(t)\n"),
        Invalid(
            "import torch\n\ndef g(x: torch.Tensor):\n    if (x > 0).all():\n        return 1\n",
            confidence=Confidence.MEDIUM,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._covered: set[int] = set()

    # Tests: every operand is coerced.
    def visit_If(self, node: cst.If) -> None:
        fix = self._unconditional_clamp(node)
        self._check(node.test, last_is_coerced=True, fix=fix)

    def visit_While(self, node: cst.While) -> None:
        self._check_test(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check_test(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check_test(node.test)

    # Values: `not t`, `t and u` (the last operand is returned as it is), `bool(t)`.
    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if id(node) not in self._covered:
            self._check(node, last_is_coerced=False)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and id(node) not in self._covered:
            self._check(node, last_is_coerced=True)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "bool" and len(node.args) == 1:
            self._check_operand(node.args[0].value)

    def _check_test(self, test: cst.BaseExpression) -> None:
        self._check(test, last_is_coerced=True)

    def _check(self, expr: cst.BaseExpression, last_is_coerced: bool, fix: Replacement | None = None) -> None:
        self._covered.update(id(n) for n in logical_nodes(expr))
        for operand in bool_operands(expr, last_is_coerced):
            self._check_operand(operand, fix)

    def _unconditional_clamp(self, node: cst.If) -> Replacement | None:
        """The fix for `if t.isinf().any() or t.isnan().any(): <clamp t>` (vLLM PR #42347)."""
        test = node.test
        if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
            return None
        if not (isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or)):
            return None
        checked = {self._overflow_check_target(test.left), self._overflow_check_target(test.right)}
        if len(checked) != 1:
            return None
        (target,) = checked
        if target is None:
            return None
        body = node.body.body
        if any(find_all(stmt, cst.Return, cst.Raise, cst.Break, cst.Continue) for stmt in body):
            return None
        if not any(self._clamps(stmt, target) for stmt in body):
            return None
        return Replacement(
            node,
            statements_code(self.module, body, self.indentation()),
            Applicability.UNSAFE,
            "Clamp unconditionally (for float16 this also clamps finite values beyond the bound)",
        )

    def _overflow_check_target(self, expr: cst.BaseExpression) -> str | None:
        """`t` for `t.isinf().any()` / `t.isnan().any()` / `torch.isinf(t).any()`, else None."""
        any_call = method_call(expr, "any")
        if any_call is None or not isinstance(any_call.value, cst.Call):
            return None
        inner = any_call.value
        check = method_call(inner, "isinf", "isnan")
        if check is not None and not inner.args:
            return self.code_of(check.value)
        if self.qualname(inner.func) in ("torch.isinf", "torch.isnan") and len(inner.args) == 1:
            return self.code_of(inner.args[0].value)
        return None

    def _clamps(self, stmt: cst.CSTNode, target: str) -> bool:
        for call in find_all(stmt, cst.Call):
            if self.qualname(call.func) == "torch.clamp" and call.args and self.code_of(call.args[0].value) == target:
                return True
            clamp = method_call(call, "clamp", "clamp_")
            if clamp is not None and self.code_of(clamp.value) == target:
                return True
        return False

    def _check_operand(self, operand: cst.BaseExpression, fix: Replacement | None = None) -> None:
        item = method_call(operand, "item")
        where = self.where_read(item.value) if item is not None else self.where(operand)
        if not where.on_device:
            return
        text = self.code_of(operand)
        if item is not None:
            message = f"`{text}` copies a GPU value to the host to test it; the host waits for the GPU"
        else:
            message = f"`{text}` {tensor_phrase(where)}, used as a Python bool; the host waits for the GPU"
            if where.certainty < Certainty.HIGH and self._may_be_none(operand):
                # `if mask:` of an optional tensor is a None check: the truth value of a tensor of
                # more than one element raises, so code that works tests it for None.
                why = f"{where.because}; but `{text}` may be None, and `if {text}:` reads as a None check"
                where = replace(where, certainty=Certainty.LOW, because=why)
        self.report_where(operand, message, where, fix=fix)

    def _may_be_none(self, operand: cst.BaseExpression) -> bool:
        """Whether `operand` is a parameter that defaults to None or is annotated optional."""
        func = self.function
        if not isinstance(operand, cst.Name) or func is None:
            return False
        param = parameter(func, operand.value)
        if param is None:
            return False
        if isinstance(param.default, cst.Name) and param.default.value == "None":
            return True
        annotation = self.code_of(param.annotation.annotation) if param.annotation is not None else ""
        return "Optional" in annotation or "None" in annotation
