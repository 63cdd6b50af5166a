"""A read-only walk of a libcst tree for `CSTVisitor`s, many times faster than `node.visit`.

libcst's `CSTNode.visit` is built for transformers: leaving a node, it builds a new copy of it
from its visited children (`_visit_and_replace_children`), and every copy is validated in
`__post_init__`, even for a `CSTVisitor` that changes nothing; and it visits every whitespace,
comma and parenthesis as a node. `walk` makes the same `on_visit`/`on_leave` calls, on the same
(original) nodes, in the same order, and builds nothing (over vLLM 0.33.0, a visitor of every
node and field takes 123 s with it against 356 s with `node.visit`; a visitor of content nodes,
as rules write them, also skips the trivia):

* the order of a node's children is libcst's own: read once per node class from the code of
  its `_visit_and_replace_children` (the field names its `visit_*(self, "field", ...)` calls
  pass, in source order); where that cannot be read, libcst itself visits the node's children;
* the punctuation and whitespace nodes (`TRIVIA`) are skipped unless the visitor has a
  `visit_`/`leave_` method for one of them, or overrides `on_visit`/`on_leave` without saying
  (with `walks_trivia = False`) that it does not look at them;
* `on_visit_attribute`/`on_leave_attribute` are called only for the (class, field) pairs given
  as `attribute_hooks`; a visitor that needs them all (it overrides them, or has
  `visit_<Node>_<field>` methods) and gives none is walked by `node.visit`.

`tests/test_traversal.py` checks the order against `node.visit` on real code.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping

import libcst as cst
from libcst import MaybeSentinel

from synclint.cst_internals import children_fields, token_node_classes, visit_children

# Tokens with no content a rule can ask about: operators, punctuation, brackets, whitespace,
# comments and newlines (which a `Comment`/`EmptyLine` rule would still get: see `walk`).
TRIVIA: frozenset[type] = token_node_classes() | {
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
    cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Asynchronous,
}
TRIVIA_NAMES = frozenset(cls.__name__ for cls in TRIVIA)
# libcst's `add_slots` rebuilds each node class; the class it started from stays a subclass of
# the base, so classes are told apart by where they are defined.
_TRIVIA_KEYS = frozenset((cls.__module__, cls.__qualname__) for cls in TRIVIA)

# (field, is_trivia_only) per node class, in libcst's visiting order; None: order unknown.
_ORDERS: dict[type, tuple[tuple[str, bool], ...] | None] = {}
# The fields a walk descends into per node class, each with whether it is hooked, per kind of
# walk: (skips trivia, id of the hooks) -> (the hooks, kept so that the id stays theirs; plans).
_PLANS: dict[tuple[bool, int], tuple[Mapping, dict[type, tuple[tuple[str, bool], ...] | None]]] = {}
_NO_HOOKS: Mapping[type, tuple[str, ...]] = {}
# Per type of a field's value: whether it is a node (`isinstance` on libcst's ABCs is slow).
_IS_NODE: dict[type, bool] = {}


def _children_order(cls: type) -> tuple[tuple[str, bool], ...] | None:
    if cls in _ORDERS:
        return _ORDERS[cls]
    try:
        order = _read_order(cls)
    except (StopIteration, TypeError, NameError, AttributeError):
        order = None
    _ORDERS[cls] = order
    return order


def _read_order(cls: type) -> tuple[tuple[str, bool], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((name, _is_trivia_type(hints.get(name))) for name in children_fields(cls))


def _is_trivia_type(annotation: object) -> bool:
    """Whether a field's annotation admits only trivia nodes (and None, sentinels, sequences)."""
    if annotation is None:
        return False
    args = typing.get_args(annotation)
    if args:  # Sequence[X], Union[X, Y], Optional[X]
        return all(_is_trivia_type(arg) for arg in args if arg is not type(None) and arg is not MaybeSentinel)
    if not isinstance(annotation, type):
        return False
    if annotation is MaybeSentinel:
        return True
    return issubclass(annotation, cst.CSTNode) and all(_subclasses_are_trivia(annotation))


def _subclasses_are_trivia(cls: type):
    """Yields, for `cls` and each concrete subclass, whether it is trivia."""
    stack = [cls]
    while stack:
        current = stack.pop()
        if not inspect.isabstract(current):
            yield (current.__module__, current.__qualname__) in _TRIVIA_KEYS
        stack.extend(current.__subclasses__())


def _overrides(visitor: cst.CSTVisitor, name: str) -> bool:
    """Whether the visitor's class defines `name` itself (CSTVisitor has a no-op `visit_X`,
    `leave_X`, `visit_X_field`, ... for every node class and field)."""
    return getattr(type(visitor), name, None) is not getattr(cst.CSTVisitor, name, None)


def _own_callbacks(visitor: cst.CSTVisitor) -> list[str]:
    """The `visit_*`/`leave_*` methods the visitor's own classes define (not `dir()`, which
    lists CSTVisitor's two thousand no-ops: rules make a visitor class per call)."""
    base = set(cst.CSTVisitor.__mro__)
    return [
        attr
        for cls in type(visitor).__mro__
        if cls not in base
        for attr in vars(cls)
        if attr.startswith(("visit_", "leave_"))
    ]


def walk(
    node: cst.CSTNode,
    visitor: cst.CSTVisitor,
    attribute_hooks: Mapping[type, tuple[str, ...]] | None = None,
) -> None:
    """Visit `node` and its descendants with `visitor`, as `node.visit(visitor)` would (read-only)."""
    kind = type(visitor)
    known = vars(kind).get("_synclint_walk_callbacks")  # kept on the visitor's class, as its methods are
    if known is None:
        known = _own_callbacks(visitor)
        setattr(kind, "_synclint_walk_callbacks", known)
    callbacks = known
    attribute_calls = (
        _overrides(visitor, "on_visit_attribute")
        or _overrides(visitor, "on_leave_attribute")
        or any(attr.count("_") >= 2 for attr in callbacks)  # visit_<Node>_<field>
    )
    if attribute_calls and attribute_hooks is None:
        node.visit(visitor)
        return
    custom = _overrides(visitor, "on_visit") or _overrides(visitor, "on_leave")
    if custom:
        skip_trivia = getattr(visitor, "walks_trivia", True) is False
    else:
        skip_trivia = not ({attr.split("_", 1)[1] for attr in callbacks} & TRIVIA_NAMES)
    hooks = attribute_hooks if attribute_hooks is not None else _NO_HOOKS
    _Walker(visitor, custom, skip_trivia, hooks, frozenset(callbacks)).run(node)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children that are not trivia (whitespace, commas, brackets), in libcst's order:
    `node.children` without its trivia, and without its cost (libcst collects them by visiting)."""
    order = _children_order(type(node))
    if order is None:
        return [child for child in node.children if type(child) not in TRIVIA]
    found: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for name, trivia in order:
        if trivia:
            continue
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(child for child in value if type(child) not in TRIVIA)
        elif kind not in TRIVIA:
            node_value = is_node.get(kind)
            if node_value is None:
                node_value = is_node[kind] = issubclass(kind, cst.CSTNode)
            if node_value:
                found.append(value)
    return found


def _unbound(kind: type, name: str):
    """`kind`'s method `name` as a function of (visitor, node)."""
    method = inspect.getattr_static(kind, name)
    if isinstance(method, types.FunctionType):
        return method
    return lambda visitor, node: getattr(visitor, name)(node)  # a staticmethod, a classmethod, ...


class _Walker:
    def __init__(self, visitor: cst.CSTVisitor, custom: bool, skip_trivia: bool,
                 hooks: Mapping[type, tuple[str, ...]], callbacks: frozenset[str]) -> None:
        self.visitor = visitor
        self.callbacks = callbacks  # the visit_/leave_ methods the visitor defines
        self.custom = custom
        self.skip_trivia = skip_trivia
        self.hooks = hooks
        self.plans = _PLANS.setdefault((skip_trivia, id(hooks)), (hooks, {}))[1]
        # Per node class, for plain visitors: the visitor class's visit_ and leave_ functions
        # (or None), kept on the visitor class: rules make a visitor per question.
        kind = type(visitor)
        methods = vars(kind).get("_synclint_walk_methods")
        if methods is None:
            methods = {}
            setattr(kind, "_synclint_walk_methods", methods)
        self.methods: dict[type, tuple] = methods

    def _plan(self, cls: type) -> tuple[tuple[str, bool], ...] | None:
        order = _children_order(cls)
        if order is None:
            plan = None
        else:
            hooked = self.hooks.get(cls, ())
            plan = tuple(
                (name, name in hooked) for name, trivia in order if not (trivia and self.skip_trivia) or name in hooked
            )
        self.plans[cls] = plan
        return plan

    def _methods(self, cls: type) -> tuple:
        kind = type(self.visitor)
        found = tuple(
            _unbound(kind, name) if name in self.callbacks else None
            for name in ("visit_" + cls.__name__, "leave_" + cls.__name__)
        )
        self.methods[cls] = found
        return found

    def run(self, root: cst.CSTNode) -> None:
        visitor = self.visitor
        plans = self.plans
        methods = self.methods
        custom = self.custom
        on_visit = visitor.on_visit
        on_leave = visitor.on_leave
        # CSTVisitor's own on_leave only calls leave_<Node> methods: with none, it is not called.
        leaves = custom and (_overrides(visitor, "on_leave") or any(c.startswith("leave_") for c in self.callbacks))
        skip = TRIVIA if self.skip_trivia else frozenset()
        on_visit_attribute = visitor.on_visit_attribute
        on_leave_attribute = visitor.on_leave_attribute
        is_node = _IS_NODE
        unknown: typing.Any = object()  # a sentinel: `plan is unknown` below narrows nothing for mypy

        def visit(node: cst.CSTNode) -> None:
            cls = type(node)
            if custom:
                descend = on_visit(node)
            else:
                found = methods.get(cls)
                if found is None:
                    found = self._methods(cls)
                enter, leave = found
                descend = enter is None or enter(visitor, node) is not False
            if descend:
                plan = plans.get(cls, unknown)
                if plan is unknown:
                    plan = self._plan(cls)
                if plan is None:  # order unknown: let libcst visit the children
                    visit_children(node, visitor)
                else:
                    for name, hooked in plan:
                        value = getattr(node, name)
                        if hooked:
                            on_visit_attribute(node, name)
                        kind = type(value)
                        if kind is tuple or kind is list:
                            for child in value:
                                if type(child) not in skip:
                                    visit(child)
                        elif kind not in skip:
                            node_value = is_node.get(kind)
                            if node_value is None:
                                node_value = is_node[kind] = issubclass(kind, cst.CSTNode)
                            if node_value:
                                visit(value)
                        if hooked:
                            on_leave_attribute(node, name)
            if custom:
                if leaves:
                    on_leave(node)
            elif leave is not None:
                leave(visitor, node)

        visit(root)
