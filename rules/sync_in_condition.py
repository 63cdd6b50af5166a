"""SYNC101 sync-in-condition."""

from __future__ import annotations

import libcst as cst

from synclint.patterns import bool_operands, logical_nodes, method_call, tensor_phrase
from synclint.rule import Invalid, Rule, Valid
from synclint.model import Confidence


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
        Valid(
            "import torch\nfrom vllm.utils import gpu_sync_allowed\nx = torch.ones(2, device='cuda')\n"
            "with gpu_sync_allowed():\n    assert (x > 0).all()\n"
        ),
    ]
    INVALID = [
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
        self._check_test(node.test)

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

    def _check(self, expr: cst.BaseExpression, last_is_coerced: bool) -> None:
        self._covered.update(id(n) for n in logical_nodes(expr))
        for operand in bool_operands(expr, last_is_coerced):
            self._check_operand(operand)

    def _check_operand(self, operand: cst.BaseExpression) -> None:
        item = method_call(operand, "item")
        where = self.where(item.value if item is not None else operand)
        if not where.on_device:
            return
        text = self.code_of(operand)
        if item is not None:
            message = f"`{text}` copies a GPU value to the host to test it; the host waits for the GPU"
        else:
            message = f"`{text}` {tensor_phrase(where)} used as a Python bool; the host waits for the GPU"
        self.report_where(operand, message, where)
