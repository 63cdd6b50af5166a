"""Shapes of code that several rules share: where Python coerces a value to bool, ..."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from synclint.devices import Where


def bool_operands(expr: cst.BaseExpression, last_is_coerced: bool = True) -> Iterator[cst.BaseExpression]:
    """The sub-expressions that Python turns into a bool when `expr` is evaluated for truth.

    `a and b` tests `a`, and tests `b` only where the whole is itself tested (in `if`,
    `while`, `assert`, ...); in `y = a and b`, `b` is returned as it is. `not a` tests `a`.
    """
    expr = _unparen(expr)
    if isinstance(expr, cst.BooleanOperation):
        yield from bool_operands(expr.left, True)
        yield from bool_operands(expr.right, last_is_coerced)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from bool_operands(expr.expression, True)
    elif last_is_coerced:
        yield expr


def logical_nodes(expr: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    """The `and`/`or`/`not` nodes at the top of a test, which `bool_operands` already covers."""
    expr = _unparen(expr)
    if isinstance(expr, cst.BooleanOperation):
        yield expr
        yield from logical_nodes(expr.left)
        yield from logical_nodes(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield expr
        yield from logical_nodes(expr.expression)


def _unparen(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr


def tensor_phrase(where: Where) -> str:
    """How a message names the value: proven CUDA, or a tensor whose device is unknown."""
    from synclint.model import Confidence

    if where.confidence >= Confidence.HIGH:
        return "is a CUDA tensor"
    if where.confidence >= Confidence.MEDIUM:
        return "is a tensor, likely on the GPU"
    return "may be a CUDA tensor"


def method_call(node: cst.CSTNode, *names: str) -> cst.Attribute | None:
    """`node` as `<receiver>.<name>(...)` for one of `names`: the Attribute, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in names:
        return node.func
    return None
