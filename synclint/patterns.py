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


def statements_code(module: cst.Module, statements, indentation: str) -> str:
    """Source of statements placed where a statement at `indentation` began (first line unindented).

    Used by fixes that replace one statement with several: the edit starts after the
    original statement's indentation, so every following line carries it explicitly.
    """
    lines: list[str] = []
    for statement in statements:
        code = module.code_for_node(statement.with_changes(leading_lines=()))
        lines.extend(code.splitlines())
    head, *rest = lines
    return "\n".join([head, *[(indentation + line) if line.strip() else "" for line in rest]])


def one_line(text: str, limit: int = 60) -> str:
    """Source text for a one-line message: whitespace runs collapsed, long text shortened."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def keyword_arg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value passed as `name=` to `call`, else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def with_keyword_arg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended as its last argument, in the call's own layout.

    A multi-line call keeps one argument per line and its trailing comma; the whitespace
    before the closing parenthesis moves to the new last argument.
    """
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not call.args:
        return call.with_changes(args=[new_arg])
    *earlier, last = call.args
    separator = earlier[-1].comma if earlier and isinstance(earlier[-1].comma, cst.Comma) else cst.Comma(
        whitespace_after=cst.SimpleWhitespace(" ")
    )
    new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    last = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*earlier, last, new_arg])


def local_assignments(func: cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
    """The values assigned to each local name in `func`'s body (not in nested functions or
    classes). None stands for a binding that is not one expression: a loop or `with` target,
    an unpacking, an augmented assignment. Parameters are not included."""
    assigned: dict[str, list[cst.BaseExpression | None]] = {}

    def bind(target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                bind(element.value, None)
        elif isinstance(target, cst.StarredElement):
            bind(target.value, None)

    class Collector(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                bind(target.target, node.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None:
                bind(node.target, node.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bind(node.target, None)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            bind(node.target, node.value)

        def visit_For(self, node: cst.For) -> None:
            bind(node.target, None)

        def visit_CompFor(self, node: cst.CompFor) -> None:
            bind(node.target, None)

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                bind(node.asname.name, None)

    func.visit(Collector())
    return assigned


def parameter(func: cst.FunctionDef, name: str) -> cst.Param | None:
    """The parameter of `func` called `name`, if any."""
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if isinstance(param, cst.Param) and param.name.value == name:
            return param
    return None


# Calls that build a host tensor from Python or numpy data. A copy of their result to the
# device is SYNC103's (host-data-to-device); SYNC102 leaves those chains alone.
HOST_DATA_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy"})
