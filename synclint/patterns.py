"""Shapes of code that several rules share: where Python coerces a value to bool, ..."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, overload

import libcst as cst

from synclint.devices.lattice import Where, device
from synclint.devices.torch_api import BOOL_RESULTS
from synclint.devices.conventions import MASK_NAME
from synclint.syntax import dotted_name, keyword_arg, method_call, parameter

if TYPE_CHECKING:
    from synclint.rule import Rule


def bool_operands(expr: cst.BaseExpression, last_is_coerced: bool = True) -> Iterator[cst.BaseExpression]:
    """The sub-expressions that Python turns into a bool when `expr` is evaluated for truth.

    `a and b` tests `a`, and tests `b` only where the whole is itself tested (in `if`,
    `while`, `assert`, ...); in `y = a and b`, `b` is returned as it is. `not a` tests `a`.
    """
    if isinstance(expr, cst.BooleanOperation):
        yield from bool_operands(expr.left, True)
        yield from bool_operands(expr.right, last_is_coerced)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from bool_operands(expr.expression, True)
    elif last_is_coerced:
        yield expr


def logical_nodes(expr: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    """The `and`/`or`/`not` nodes at the top of a test, which `bool_operands` already covers."""
    if isinstance(expr, cst.BooleanOperation):
        yield expr
        yield from logical_nodes(expr.left)
        yield from logical_nodes(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield expr
        yield from logical_nodes(expr.expression)


def tensor_phrase(where: Where) -> str:
    """How a message names the value: proven CUDA, or a tensor whose device is unknown."""
    from synclint.evidence import Certainty

    if where.certainty >= Certainty.HIGH:
        return "is a CUDA tensor"
    if where.certainty >= Certainty.MEDIUM:
        return "is a tensor, likely on the GPU"
    return "may be a CUDA tensor"


def statements_code(module: cst.Module, statements, indentation: str) -> str:
    """Source of statements placed where a statement at `indentation` began (first line unindented).

    Used by fixes that replace one statement with several: the edit starts after the
    original statement's indentation, so every following line carries it explicitly.
    The statements are written inside a block indented by `indentation`, so that libcst
    indents each statement line and leaves the text inside multi-line strings and
    brackets exactly as it was (re-indenting lines by hand would change a string's value).
    Comments before the first statement are left out: they lie outside the replaced span.
    """
    first, *rest = statements
    statements = [first.with_changes(leading_lines=()), *rest]
    newline = module.default_newline
    if not indentation:
        return "".join(module.code_for_node(statement) for statement in statements).rstrip(newline)
    block = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=statements, indent=indentation))
    body = module.code_for_node(block).split(newline, 1)[1]
    return body[len(indentation):].rstrip(newline)


def one_line(text: str, limit: int = 60) -> str:
    """Source text for a one-line message: comments that end a line dropped, line breaks joined as
    code reads, long text shortened."""
    if "#" in text and "\n" in text:
        text = without_comments(text)
    flat = re.sub(r"\s+([)\].,])", r"\1", re.sub(r"([(\[])\s+", r"\1", " ".join(text.split())))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def without_comments(code: str) -> str:
    """`code` without its comments that a line break ends (`(has  # any\n).any()` -> `(has  \n).any()`);
    a `#` inside a string literal stays, and so does one that no line break ends (text cut short)."""
    out: list[str] = []
    i, n, quote = 0, len(code), ""
    while i < n:
        char = code[i]
        if quote:
            if char == "\\":
                out.append(code[i:i + 2])
                i += 2
                continue
            if code.startswith(quote, i):
                out.append(quote)
                i += len(quote)
                quote = ""
                continue
            out.append(char)
            i += 1
        elif char in "'\"":
            quote = code[i:i + 3] if code[i:i + 3] in ("'''", '"""') else char
            out.append(quote)
            i += len(quote)
        elif char == "#" and (end := code.find("\n", i)) != -1:
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out)


@overload
def one_line_message(message: str) -> str: ...


@overload
def one_line_message(message: None) -> None: ...


def one_line_message(message: str | None) -> str | None:
    """A finding's message (or `because`) on one line: the code it quotes between backticks as
    `one_line` writes it (whole), the prose around it with its line breaks joined."""
    if message is None or ("\n" not in message and "\r" not in message):
        return message
    parts = message.split("`")
    return "`".join(one_line(part, limit=len(part)) if i % 2 else " ".join(part.split(" ")).replace("\r\n", " ")
                    .replace("\n", " ").replace("\r", " ") for i, part in enumerate(parts))


def with_keyword_arg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended as its last argument, in the call's own layout.

    A multi-line call with a trailing comma keeps one argument per line and the comma; one
    without (`f(\n    a\n)`, as black hugs arguments that fit on one line) gets the new argument
    on the same line; the whitespace before the closing parenthesis moves to the new last argument.
    """
    new_arg = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not call.args:
        return call.with_changes(args=[new_arg])
    *earlier, last = call.args
    if earlier and isinstance(earlier[-1].comma, cst.Comma):
        separator = earlier[-1].comma
    elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace) and isinstance(last.comma, cst.Comma):
        # f(\n    a,\n): one argument per line, as black keeps it for the trailing comma
        separator = cst.Comma(whitespace_after=call.whitespace_before_args)
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new_arg = new_arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    last = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*earlier, last, new_arg])


def with_keyword_value(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value`: an existing `name=` argument takes the new value, else it is appended."""
    if keyword_arg(call, name) is None:
        return with_keyword_arg(call, name, value)
    return call.with_changes(
        args=[
            arg.with_changes(value=value) if arg.keyword is not None and arg.keyword.value == name else arg
            for arg in call.args
        ]
    )


def gpu_copy_target(rule: "Rule", call: cst.Call) -> Where | None:
    """Where `x.to(...)` or `x.cuda(...)` sends `x`, when that is the GPU and every argument's meaning
    is known (a device, a dtype, `non_blocking=`); None otherwise, e.g. for `to(device, dtype, True)`."""
    attr = method_call(call, "to", "cuda")
    positional = [arg.value for arg in call.args if arg.keyword is None]
    if attr is None or any(arg.star for arg in call.args):
        return None
    if attr.attr.value == "cuda":
        return device(".cuda()") if len(positional) <= 1 else None  # cuda(device, non_blocking)
    if len(positional) == 2:
        second = positional[1]
        if not ((rule.qualname(second) or "").startswith("torch.") or "dtype" in rule.code_of(second)):
            return None  # to(other, non_blocking)
    elif len(positional) > 2:
        return None  # to(device, dtype, non_blocking, ...)
    target = rule.to_target(call)
    return target if target is not None and target.on_device else None


_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


class BoolTensors:
    """Tells whether an expression is, by its form, a boolean tensor: a comparison, `~m`,
    `a & m`, `x.isnan()`, `t.bool()`, `dtype=torch.bool`, or a local name whose every
    assignment in its function is one of these (the file context keeps each scope's
    assignments for all rules)."""

    def __init__(self, rule: "Rule") -> None:
        self.rule = rule

    def __call__(self, expr: cst.BaseExpression) -> bool:
        return self._is_bool(expr, frozenset())

    def _is_bool(self, expr: cst.BaseExpression, seen: frozenset[str]) -> bool:
        if isinstance(expr, cst.Comparison):
            return all(isinstance(t.operator, _COMPARISONS) for t in expr.comparisons)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self._is_bool(expr.expression, seen)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return self._is_bool(expr.left, seen) or self._is_bool(expr.right, seen)
        if isinstance(expr, cst.Subscript):
            return self._is_bool(expr.value, seen)
        if isinstance(expr, cst.Call):
            return self._is_bool_call(expr)
        if isinstance(expr, cst.Name) and expr.value not in seen:
            return self._is_bool_name(expr.value, seen | {expr.value})
        return False

    def _is_bool_call(self, call: cst.Call) -> bool:
        qualname = self.rule.qualname
        dtype = keyword_arg(call, "dtype")
        if dtype is not None:
            return qualname(dtype) == "torch.bool"
        qual = qualname(call.func)
        if qual in ("torch.cat", "torch.concat", "torch.stack") and call.args:
            # Masks joined: `torch.cat(pad_masks)`, `torch.stack([a > 0, b > 0])`.
            parts = call.args[0].value
            if isinstance(parts, (cst.List, cst.Tuple)):
                return bool(parts.elements) and all(self._is_bool(e.value, frozenset()) for e in parts.elements)
            return bool(MASK_NAME.search(dotted_name(parts) or ""))
        if qual is not None:
            return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in BOOL_RESULTS
        if not isinstance(call.func, cst.Attribute):
            return False
        method = call.func.attr.value
        if method in ("to", "type") and call.args:
            return qualname(call.args[0].value) == "torch.bool"
        return method in BOOL_RESULTS

    def _is_bool_name(self, name: str, seen: frozenset[str]) -> bool:
        function = self.rule.function
        if function is not None and parameter(function, name) is not None:
            return False
        values = self.rule.assignments().get(name, [])
        return bool(values) and all(value is not None and self._is_bool(value, seen) for value in values)
