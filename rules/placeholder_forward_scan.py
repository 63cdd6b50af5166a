"""SYNC104 placeholder-forward-scan."""

from __future__ import annotations

import re

import libcst as cst

from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import dotted_name, find_all, method_call

# Names of sentinel constants that mark unfilled slots at the end of a list.
SENTINEL_NAME = re.compile(r"placeholder|sentinel|(^|_)pad(ding)?(_|$)", re.IGNORECASE)
# Names of lists that grow step after step: token histories and output buffers.
GROWING_LIST_NAME = re.compile(r"token|ids|output|history|buffer", re.IGNORECASE)
# Where `-1` is a different thing: the inferred dimension of a shape, an axis.
SHAPE_NAME = re.compile(r"shape|size|dim|stride|axes|axis|perm", re.IGNORECASE)

SEED_BEFORE = """\
def update_async_output_token_ids(output_token_ids, sampled_token_ids):
    for req_output_token_ids, new_ids in zip(output_token_ids, sampled_token_ids):
        if not req_output_token_ids or req_output_token_ids[-1] != -1:
            continue
        first_placeholder = req_output_token_ids.index(-1)
        req_output_token_ids[first_placeholder:] = new_ids
"""
SEED_AFTER = """\
def update_async_output_token_ids(output_token_ids, sampled_token_ids):
    for req_output_token_ids, new_ids in zip(output_token_ids, sampled_token_ids):
        if not req_output_token_ids or req_output_token_ids[-1] != -1:
            continue
        first_placeholder = len(req_output_token_ids)
        while (
            first_placeholder > 0 and req_output_token_ids[first_placeholder - 1] == -1
        ):
            first_placeholder -= 1
        req_output_token_ids[first_placeholder:] = new_ids
"""


class PlaceholderForwardScan(Rule):
    code = "SYNC104"
    name = "placeholder-forward-scan"
    summary = "`lst.index(sentinel)` scans a growing list from the front for placeholders that sit at its end"
    prefilter = (".index(",)
    syncs = False  # host work that grows with the output, not a wait for the GPU
    docs = """
    ## What it does
    Flags `lst.index(sentinel)` where `lst` is a Python list that grows step after step (a
    token history, an output buffer) and the sentinel marks unfilled slots at its end: a
    negative literal such as `-1`, or a constant named like a placeholder, sentinel or pad.
    `.index(-1)` on any list is flagged, except on shapes and sizes, where `-1` is the
    inferred dimension; other sentinels only on lists named like token or output histories.

    ## Why is this bad?
    It is not a GPU sync but host work on the critical path that grows with the output:
    `.index` walks the whole list from the front to reach placeholders that sit at the end.
    With async scheduling, vLLM kept `-1` placeholders at the end of every request's output
    token list; the forward scan cost 674 us per call at 60,000 tokens, 117 ms per step
    for 128 such requests, while the GPU waited for the next batch (vLLM PR #42938).

    ## Example
    ```python
    first_placeholder = req_output_token_ids.index(-1)
    ```

    ## Use instead
    Scan backwards over the trailing placeholders only (0.3 us at 60,000 tokens):
    ```python
    first_placeholder = len(req_output_token_ids)
    while first_placeholder > 0 and req_output_token_ids[first_placeholder - 1] == -1:
        first_placeholder -= 1
    ```

    ## Fix safety
    `i = lst.index(sentinel)` on a line of its own becomes the backward scan above, as an
    unsafe fix: the two differ when the sentinel also occurs before the trailing run (the
    scan returns the start of the run, `.index` the first occurrence) or not at all (`.index`
    raises `ValueError`, the scan returns `len(lst)`). Other uses of `.index` have no fix.
    """

    VALID = [
        Valid("shape = [4, -1, 8]\ninferred = shape.index(-1)\n"),
        Valid("new_shape = list(x.shape)\ni = new_shape.index(-1)\n"),
        Valid("names = ['a', 'b']\ni = names.index('b')\n"),
        Valid("token_ids = [1, 2, 3]\ni = token_ids.index(eos_token_id)\n"),
        Valid("values = [3, 1, 2]\ni = values.index(PAD_ID)\n"),
        Valid("i = token_ids.index(1)\n"),
    ]
    INVALID = [
        Invalid(SEED_BEFORE, expected_fix=SEED_AFTER, count=1, confidence=Confidence.HIGH),
        Invalid(
            "def f(new_ids):\n    n = len(new_ids) if new_ids[-1] != -1 else new_ids.index(-1)\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "PLACEHOLDER_TOKEN_ID = -1\n\n\nclass Batch:\n"
            "  def start(self, i):\n"
            "    self.start = self.output_ids[i].index(PLACEHOLDER_TOKEN_ID)\n"
            "    first = self.output_ids[i].index(PLACEHOLDER_TOKEN_ID)\n"
            "    return first\n",
            expected_fix="PLACEHOLDER_TOKEN_ID = -1\n\n\nclass Batch:\n"
            "  def start(self, i):\n"
            "    self.start = self.output_ids[i].index(PLACEHOLDER_TOKEN_ID)\n"
            "    first = len(self.output_ids[i])\n"
            "    while first > 0 and self.output_ids[i][first - 1] == PLACEHOLDER_TOKEN_ID:\n"
            "      first -= 1\n"
            "    return first\n",
            count=2,
            confidence=Confidence.MEDIUM,
        ),
        Invalid("history = []\nwhile True:\n    pos = history.index(-100); break\n", count=1),
        Invalid("seen = [0, 5, -1]\nstart = seen.index(-1, 1)\n", count=1, confidence=Confidence.MEDIUM),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # `.index(...)` calls that are the whole value of `name = ...` on a line of their own.
        self._assigned: dict[int, cst.Assign] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1 or not isinstance(node.body[0], cst.Assign):
            return
        assign = node.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            self._assigned[id(assign.value)] = assign

    def visit_Call(self, node: cst.Call) -> None:
        index = method_call(node, "index")
        if index is None or not node.args or node.args[0].keyword is not None or node.args[0].star:
            return
        receiver, sentinel = index.value, node.args[0].value
        list_name = _last_name(receiver)
        is_minus_one = _negative_literal(sentinel) == -1
        if _negative_literal(sentinel) is None and not SENTINEL_NAME.search(_last_name(sentinel) or ""):
            return
        if list_name is not None and SHAPE_NAME.search(list_name):
            return
        growing = list_name is not None and GROWING_LIST_NAME.search(list_name) is not None
        if not (growing or is_minus_one) or self.where(receiver).is_tensor:
            return
        history = list_name is not None and re.search(r"token_ids|output", list_name, re.IGNORECASE) is not None
        confidence = Certainty.HIGH if is_minus_one and history else Certainty.MEDIUM
        text = self.code_of(node)
        message = (
            f"`{text}` scans the list from the front for placeholders that sit at its end;"
            " host time grows with the list on every call"
        )
        self.report(
            node,
            message,
            certainty=confidence,
            because=f"{self.code_of(sentinel)} marks unfilled slots at the end of {self.code_of(receiver)}",
            fix=self._backward_scan(node, receiver, sentinel),
        )

    def _backward_scan(
        self, call: cst.Call, receiver: cst.BaseExpression, sentinel: cst.BaseExpression
    ) -> Replacement | None:
        """`i = lst.index(s)` -> a scan back over the trailing run of `s` (vLLM PR #42938)."""
        assign = self._assigned.get(id(call))
        if assign is None or len(call.args) != 1:
            return None
        target = assign.targets[0].target
        assert isinstance(target, cst.Name)
        # The receiver and sentinel are evaluated on every step of the scan: no calls, and
        # no reference to the index being computed.
        for expr in (receiver, sentinel):
            found = find_all(expr, cst.Call, cst.Await, cst.NamedExpr, cst.Name)
            if any(not isinstance(node, cst.Name) or node.value == target.value for node in found):
                return None
        i, lst, value = target.value, self.code_of(receiver), self.code_of(sentinel)
        newline, indentation = self.module.default_newline, self.indentation()
        body_indentation = indentation + self.module.default_indent
        scan = (
            f"{i} = len({lst}){newline}"
            f"{indentation}while {i} > 0 and {lst}[{i} - 1] == {value}:{newline}"
            f"{body_indentation}{i} -= 1"
        )
        return Replacement(
            assign,
            scan,
            Applicability.UNSAFE,
            f"Scan back over the trailing `{value}` placeholders instead of searching from the front",
        )


def _negative_literal(expr: cst.BaseExpression) -> int | None:
    """The value of a literal such as `-1`, else None."""
    if (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
    ):
        return -int(expr.expression.evaluated_value)
    return None


def _last_name(expr: cst.BaseExpression) -> str | None:
    """The name a value goes by: `a.b` -> `b`, `a.b[i]` -> `b`, `x.size()` -> `size`."""
    while isinstance(expr, (cst.Subscript, cst.Call)):
        expr = expr.value if isinstance(expr, cst.Subscript) else expr.func
    name = dotted_name(expr)
    return name.rsplit(".", 1)[-1] if name is not None else None
