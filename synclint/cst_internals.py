"""Every use of libcst's private internals, in one place.

synclint reads libcst's trees through its public API, except for four things that the public
API makes too slow on large files (each measured where it is used):

* parsing without validating every node the parser builds (`CSTNode.__post_init__`);
* the order in which a node class visits its children (the code of `_visit_and_replace_children`),
  for the read-only walk of `synclint.traversal`, and that method itself where the order is unknown;
* positions of the nodes of one statement (`PositionProvidingCodegenState`, the provider's
  `_computed` table), instead of the whole module's;
* the code of a node at a given indentation (`CodegenState`, what `Module.code_for_node` uses).

pyproject.toml pins libcst to the major version whose internals these are; `tests/test_traversal.py`
and the position tests fail if a release changes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import cast

import libcst as cst
from libcst._nodes import op as _op
from libcst._nodes import whitespace as _whitespace
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState


def _no_validation(self: cst.CSTNode) -> None:
    pass


def parse_module_unvalidated(text: str) -> cst.Module:
    """`libcst.parse_module`, without validating each node the parser builds.

    Every libcst node validates its fields in `CSTNode.__post_init__` when it is built: a
    fifth of the time of a parse, spent on trees the parser only builds valid (libcst's own
    comment there suggests not validating when parsing). Validation is switched off for the
    parse alone, so nodes that rules build for fixes are still checked. (Not thread-safe: a
    node built by another thread during a parse would go unchecked; synclint checks files in
    processes.)
    """
    post_init = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = post_init  # type: ignore[method-assign]


def token_node_classes() -> frozenset[type]:
    """The node classes of operators and whitespace (libcst defines them in two modules)."""
    return frozenset(
        cls
        for module in (_op, _whitespace)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, cst.CSTNode) and cls.__module__ == module.__name__
    )


def children_fields(cls: type) -> list[str]:
    """The fields whose children a node class visits, in the order it visits them.

    The field names `_visit_and_replace_children` passes (`visit_sequence(self, "lpar", ...)`)
    are constants of its code, which the compiler numbers in source order, each once. Raises
    (StopIteration, AttributeError, ...) where the class has no such method to read."""
    owner = next(c for c in cls.__mro__ if "_visit_and_replace_children" in vars(c))
    code = vars(owner)["_visit_and_replace_children"].__code__
    names = {f.name for f in dataclasses.fields(cls)}
    return [const for const in code.co_consts if isinstance(const, str) and const in names]


def visit_children(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """libcst's own visit of a node's children (where `children_fields` could not be read)."""
    node._visit_and_replace_children(visitor)


def positions_in(module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...]
                 ) -> tuple[Mapping[cst.CSTNode, CodeRange], str]:
    """The positions of the nodes in `node`, counted from its own first line, as it is written
    inside blocks indented by `indents`; and its code as so written."""
    provider = PositionProvider()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline, provider=provider
    )
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return cast("Mapping[cst.CSTNode, CodeRange]", provider._computed), "".join(state.tokens)  # (computed eagerly)


def code_at_indent(module: cst.Module, node: cst.CSTNode, indentation: str) -> str:
    """Source of `node` inside a statement at `indentation`.

    `Module.code_for_node` renders a node as if at the top level, so a call continued on further
    lines inside brackets would lose the enclosing blocks' indentation; this keeps it.
    """
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.append(indentation)
    node._codegen(state)
    return "".join(state.tokens)
