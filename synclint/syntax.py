"""What code spells, read off libcst nodes: names, arguments, parameters, blocks, bindings.

Nothing here knows where a value lives (that is `synclint.devices`) or what a rule wants
(`synclint.patterns`); the device model, the project summaries and the rules all read
syntax through these helpers, one helper per question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import libcst as cst

from synclint.traversal import walk

_EMPTY_MODULE = cst.Module(body=())

# Where code runs: a function's body, or the module's top level.
Scope = cst.Module | cst.FunctionDef


def code_text(node: cst.CSTNode, limit: int = 60) -> str:
    """The source of `node` as written, cut to `limit` characters (for explanations)."""
    text = _EMPTY_MODULE.code_for_node(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def last_name(expr: cst.BaseExpression) -> str | None:
    """`c` of `a.b.c` or of `c`; None for anything else."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def self_attribute(expr: cst.BaseExpression) -> str | None:
    """`x` of `self.x`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


# ---- calls ------------------------------------------------------------------------------


def keyword_arg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value passed as `name=` to `call`, else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def keywords(call: cst.Call) -> set[str]:
    """The names `call` passes by keyword."""
    return {arg.keyword.value for arg in call.args if arg.keyword is not None}


def positional_args(call: cst.Call) -> list[cst.BaseExpression]:
    """The values `call` passes by position, `*spread` ones left out."""
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument of a parameter that may be passed at `position` or as `keyword=`."""
    value = keyword_arg(call, keyword)
    if value is not None:
        return value
    positional = positional_args(call)
    return positional[position] if len(positional) > position else None


def method_call(node: cst.CSTNode, *names: str) -> cst.Attribute | None:
    """`node` as `<receiver>.<name>(...)` for one of `names`: the Attribute, else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in names:
        return node.func
    return None


def is_literal_true(value: cst.BaseExpression | None) -> bool:
    """Whether an argument is the literal `True`."""
    return isinstance(value, cst.Name) and value.value == "True"


def is_literal_false(value: cst.BaseExpression | None) -> bool:
    """Whether an argument is the literal `False`."""
    return isinstance(value, cst.Name) and value.value == "False"


def may_be_true(value: cst.BaseExpression | None) -> bool:
    """Whether an argument may be true: anything but an absent, `False` or `0` value."""
    if value is None:
        return False
    if isinstance(value, cst.Name):
        return value.value != "False"
    if isinstance(value, cst.Integer):
        return value.value != "0"
    return True


def string_key(expr: cst.BaseExpression) -> str | None:
    """The text of a plain string literal used as a key (`d["key"]`), if it names something."""
    if isinstance(expr, cst.SimpleString) and not expr.prefix.strip("rRuU"):
        value = expr.evaluated_value
        if isinstance(value, str) and value.isidentifier():
            return value
    return None


def constant_position(expr: cst.Subscript) -> int | None:
    """The position `t[1]` or `t[-1]` reads, when it is a constant."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    value = expr.slice[0].slice.value
    negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
    if negative and isinstance(value, cst.UnaryOperation):
        value = value.expression
    if not isinstance(value, cst.Integer):
        return None
    return -int(value.value, 0) if negative else int(value.value, 0)


# ---- functions and classes ---------------------------------------------------------------


def parameter(func: cst.FunctionDef, name: str) -> cst.Param | None:
    """The parameter of `func` called `name`, if any."""
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if isinstance(param, cst.Param) and param.name.value == name:
            return param
    return None


def annotated_class(annotation: cst.BaseExpression) -> str | None:
    """The class an annotation names: `Meta`, `mod.Meta`, `Meta | None`, `Optional[Meta]`, `"Meta"`."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return text if isinstance(text, str) and text.replace(".", "").isidentifier() else None
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        names = {annotated_class(annotation.left), annotated_class(annotation.right)} - {None, "None"}
        return names.pop() if len(names) == 1 else None
    if isinstance(annotation, cst.Subscript) and (dotted_name(annotation.value) or "").endswith("Optional"):
        inner = annotation.slice[0].slice
        return annotated_class(inner.value) if isinstance(inner, cst.Index) else None
    return dotted_name(annotation)


def is_property(func: cst.FunctionDef) -> bool:
    """Whether `func` is a property's getter or setter (`@property`, `@cached_property`, `@x.setter`)."""
    for dec in func.decorators:
        name = dotted_name(dec.decorator) or ""
        if name.split(".")[-1] in ("property", "cached_property", "setter"):
            return True
    return False


def own_method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` defined in the body of `cls` itself."""
    return next((stmt for stmt in statements(cls.body) if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name),
                None)


def statements(body: cst.BaseSuite) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    """The statements of a block (an indented block or a one-line suite)."""
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return body.body
    return ()


def child_blocks(stmt: cst.BaseCompoundStatement) -> Iterator[Sequence]:
    """The statements of each block a compound statement holds (branches, handlers, cases)."""
    if isinstance(stmt, (cst.If, cst.For, cst.While)):
        yield statements(stmt.body)
        orelse = stmt.orelse
        while orelse is not None:
            yield statements(orelse.body)
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield statements(stmt.body)
        for handler in stmt.handlers:
            yield statements(handler.body)
        if stmt.orelse is not None:
            yield statements(stmt.orelse.body)
        if stmt.finalbody is not None:
            yield statements(stmt.finalbody.body)
    elif isinstance(stmt, cst.With):
        yield statements(stmt.body)
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield statements(case.body)


def ends_function(body: cst.BaseSuite) -> bool:
    """Whether a block always ends the function (`return` or `raise` as its last statement)."""
    found = statements(body)
    if not found:
        return False
    last = found[-1]
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return isinstance(last, (cst.Return, cst.Raise))


# ---- what a piece of code holds ------------------------------------------------------------


def names_in(node: cst.CSTNode) -> set[str]:
    """The plain names used anywhere in `node` (`x.device` uses `x`, not a name `device`)."""
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

    walk(node, Names())
    return names


def contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Whether `node` is `root` or lies inside it."""
    found: list[bool] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, child: cst.CSTNode) -> bool:
            if child is node:
                found.append(True)
            return not found

    walk(root, Finder())
    return bool(found)


def small_holding(statement: cst.CSTNode, node: cst.CSTNode) -> cst.CSTNode:
    """The statement whose facts hold where `node` sits in `statement`: the small statement of a
    line that holds it (`a = f(x); b = 1`), or the compound statement itself (its header)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return statement
    if len(statement.body) == 1:
        return statement.body[0]
    return next((small for small in statement.body if contains(small, node)), statement)


_Node = TypeVar("_Node", bound=cst.CSTNode)
_Other = TypeVar("_Other", bound=cst.CSTNode)


@overload
def find_all(node: cst.CSTNode, kind: type[_Node], /) -> list[_Node]: ...
@overload
def find_all(node: cst.CSTNode, kind: type[_Node], other: type[_Other], /) -> list[_Node | _Other]: ...
@overload
def find_all(node: cst.CSTNode, *types: type[cst.CSTNode]) -> list[cst.CSTNode]: ...
def find_all(node: cst.CSTNode, *types: type[cst.CSTNode]) -> list[Any]:
    """The nodes of `types` in `node` (itself included), in source order: what
    `libcst.matchers.findall(node, m.A() | m.B())` finds, on the fast walk (synclint.traversal)."""
    found: list[cst.CSTNode] = []

    class Finder(cst.CSTVisitor):
        walks_trivia = False  # types of content only

        def on_visit(self, visited: cst.CSTNode) -> bool:
            if isinstance(visited, types):
                found.append(visited)
            return True

    walk(node, Finder())
    return found


# ---- bindings ------------------------------------------------------------------------------

# How a binding binds: `x = v`, `x: T = v`, `x += v`, `(x := v)`, `for x in ...` (in a loop
# or a comprehension), `with ... as x`.
ASSIGN, ANNOTATED, AUGMENTED, WALRUS, LOOP, WITH = "assign", "annotated", "augmented", "walrus", "loop", "with"


@dataclass(frozen=True)
class Binding:
    target: cst.BaseExpression  # a Name, Attribute or Subscript (tuples are unpacked)
    value: cst.BaseExpression | None  # the value bound, None where it is not one expression
    kind: str  # ASSIGN, ANNOTATED, ...


def unpacked(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The single targets an assignment target binds: `a, (b, *c)` -> `a`, `b`, `c`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [single for element in target.elements for single in unpacked(element.value)]
    if isinstance(target, cst.StarredElement):
        return unpacked(target.value)
    return [target]


def bindings(root: cst.CSTNode, stop_at: tuple[type[cst.CSTNode], ...] = ()) -> list[Binding]:
    """Every binding in `root` (itself entered), in source order, not descending into the nodes
    of `stop_at` (nested scopes) other than `root`. An annotation without a value binds nothing."""
    collector = _Bindings(root, stop_at)
    walk(root, collector)
    return collector.found


class _Bindings(cst.CSTVisitor):
    """The walk of `bindings` (a class of its own: the walk keeps what it learns of a visitor class)."""

    def __init__(self, root: cst.CSTNode, stop_at: tuple[type[cst.CSTNode], ...]) -> None:
        self.root = root
        self.stop_at = stop_at
        self.found: list[Binding] = []

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None, kind: str) -> None:
        singles = unpacked(target)
        if len(singles) == 1 and singles[0] is target:
            self.add(Binding(target, value, kind))
        else:
            for single in singles:
                self.add(Binding(single, None, kind))

    def add(self, binding: Binding) -> None:
        self.found.append(binding)

    def enters(self, node: cst.CSTNode) -> bool:
        return node is self.root or not isinstance(node, self.stop_at)

    visit_FunctionDef = visit_ClassDef = visit_Lambda = enters

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.bind(target.target, node.value, ASSIGN)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, node.value, ANNOTATED)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bind(node.target, None, AUGMENTED)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bind(node.target, node.value, WALRUS)

    def visit_For(self, node: cst.For) -> None:
        self.bind(node.target, None, LOOP)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.bind(node.target, None, LOOP)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bind(node.asname.name, None, WITH)


class ModuleScopes(_Bindings):
    """One walk of a module, kept by scope, for the questions asked of nearly every function:

    * every binding: what `local_assignments` finds of each function, lambda, class body and the
      module (the bindings whose innermost of these it is), and `self_attribute_assignments` of
      each class (those whose innermost class it is);
    * the calls, attribute reads, `assert`s and `if`s of each function's own code (`own_nodes`).

    The same as a walk of each scope, in the same order: a pre-order walk of the module is,
    within any node, a pre-order walk of that node."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(module, ())
        self._scopes: list[cst.CSTNode] = [module]
        self._classes: list[cst.ClassDef | None] = [None]
        self._functions: list[cst.CSTNode] = [module]
        self._class_depth = [0]  # per function above: the classes entered within it
        self._local: dict[int, list[Binding]] = {}
        self._in_class: dict[int, list[Binding]] = {}
        self._own: dict[int, list[tuple[cst.CSTNode, bool]]] = {}
        self._locals: dict[int, dict[str, list[cst.BaseExpression | None]]] = {}
        self._attributes: dict[int, dict[str, list[cst.BaseExpression]]] = {}
        walk(module, self)

    def add(self, binding: Binding) -> None:
        self._local.setdefault(id(self._scopes[-1]), []).append(binding)
        cls = self._classes[-1]
        if cls is not None:
            self._in_class.setdefault(id(cls), []).append(binding)

    def _keep(self, node: cst.CSTNode) -> None:
        """A call, attribute read, `assert` or `if` of its function's own code (and whether it sits in a
        class that function defines)."""
        self._own.setdefault(id(self._functions[-1]), []).append((node, self._class_depth[-1] > 0))

    visit_Call = visit_Attribute = visit_Assert = visit_If = _keep

    def visit_FunctionDef(self, node: cst.CSTNode) -> bool:
        self._scopes.append(node)
        self._functions.append(node)
        self._class_depth.append(0)
        return True

    def leave_FunctionDef(self, node: cst.CSTNode) -> None:
        self._scopes.pop()
        self._functions.pop()
        self._class_depth.pop()

    def visit_Lambda(self, node: cst.CSTNode) -> bool:
        self._scopes.append(node)
        return True

    def leave_Lambda(self, node: cst.CSTNode) -> None:
        self._scopes.pop()

    def visit_ClassDef(self, node: cst.CSTNode) -> bool:
        assert isinstance(node, cst.ClassDef)
        self._scopes.append(node)
        self._classes.append(node)
        self._class_depth[-1] += 1
        return True

    def leave_ClassDef(self, node: cst.CSTNode) -> None:
        self._scopes.pop()
        self._classes.pop()
        self._class_depth[-1] -= 1

    def own_nodes(self, scope: cst.FunctionDef | cst.Module, classes: bool) -> Iterator[cst.CSTNode]:
        """The calls, attribute reads, `assert`s and `if`s of `scope`'s own code, in source order: not
        those of the functions it defines; those of the classes it defines only with `classes`.
        Lambdas are its own code; a function's decorators and defaults are its own, not its scope's."""
        for node, in_class in self._own.get(id(scope), ()):
            if classes or not in_class:
                yield node

    def local(self, scope: cst.FunctionDef | cst.Lambda | cst.ClassDef | cst.Module
              ) -> dict[str, list[cst.BaseExpression | None]]:
        """`local_assignments(scope)`, for a scope of this module. Shared: read it, do not change it."""
        found = self._locals.get(id(scope))
        if found is None:
            found = self._locals[id(scope)] = _by_name(self._local.get(id(scope), ()))
        return found

    def self_attributes(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        """`self_attribute_assignments(cls)`, for a class of this module. Shared: read it, do not change it."""
        found = self._attributes.get(id(cls))
        if found is None:
            found = self._attributes[id(cls)] = _self_attributes(self._in_class.get(id(cls), ()))
        return found


_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def local_assignments(scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression | None]]:
    """The values assigned to each name in a function's or module's own body, or in any other
    node (a loop: its body and target), not in nested functions, classes or lambdas. None stands
    for a binding that is not one expression: a loop or `with` target, an unpacking, an augmented
    assignment. Parameters are not included."""
    return _by_name(bindings(scope, _NESTED_SCOPES))


def _by_name(found: Iterable[Binding]) -> dict[str, list[cst.BaseExpression | None]]:
    assigned: dict[str, list[cst.BaseExpression | None]] = {}
    for binding in found:
        if isinstance(binding.target, cst.Name):
            assigned.setdefault(binding.target.value, []).append(binding.value)
    return assigned


def self_attribute_assignments(cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
    """The values assigned to each `self.<attr>` in the methods of `cls` (annotated ones included)."""
    return _self_attributes(bindings(cls, (cst.ClassDef,)))


def _self_attributes(found: Iterable[Binding]) -> dict[str, list[cst.BaseExpression]]:
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for binding in found:
        attr = self_attribute(binding.target)
        if attr is not None and binding.value is not None and binding.kind in (ASSIGN, ANNOTATED):
            assigned.setdefault(attr, []).append(binding.value)
    return assigned


def assigned_targets(body: cst.CSTNode) -> set[str]:
    """What a block assigns, as code: `x`, `self.x`, and `cache[]` for any `cache[key] = ...`;
    `self.register_buffer("x", ...)` and `setattr(self, "x", ...)` assign `self.x`."""
    targets: set[str] = set()
    for binding in bindings(body):
        if binding.kind in (ASSIGN, ANNOTATED):
            target = binding.target
            if isinstance(target, cst.Subscript):
                targets.add(_EMPTY_MODULE.code_for_node(target.value) + "[]")
            else:
                targets.add(_EMPTY_MODULE.code_for_node(target))
    for call in find_all(body, cst.Call):
        name = last_name(call.func)
        owner = call.func.value if isinstance(call.func, cst.Attribute) else (call.args[0].value if call.args else None)
        args = call.args if isinstance(call.func, cst.Attribute) else call.args[1:]
        if (name in ("register_buffer", "register_parameter", "setattr") and owner is not None and args
                and isinstance(args[0].value, cst.SimpleString) and isinstance(args[0].value.evaluated_value, str)):
            targets.add(f"{_EMPTY_MODULE.code_for_node(owner)}.{args[0].value.evaluated_value}")
    return targets


def interval_of(test: cst.BaseExpression, guard: re.Pattern[str] | None = None) -> cst.BaseExpression | None:
    """The period of an `if` that holds once every so many steps: `log_interval` of
    `step % log_interval == 0`, `not it % 100`, `(i + 1) % accum == 0 and rank == 0`; with
    `guard`, also a call whose name it matches (`every_n_steps(step, 100)`), the call itself."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return interval_of(test.left, guard) or interval_of(test.right, guard)
    if guard is not None and isinstance(test, cst.Call):
        name = test.func.attr.value if isinstance(test.func, cst.Attribute) else (
            test.func.value if isinstance(test.func, cst.Name) else "")
        return test if guard.search(name) else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _modulo_period(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        sides = (test.left, target.comparator)
        if isinstance(target.operator, cst.Equal) and any(
                isinstance(side, cst.Integer) and side.evaluated_value == 0 for side in sides):
            return _modulo_period(sides[0]) or _modulo_period(sides[1])
    return None


def _modulo_period(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        return expr.right
    return None


def is_dataclass(cls: cst.ClassDef | None) -> bool:
    """Whether a class is decorated as a dataclass (`@dataclass`, `@dataclasses.dataclass(frozen=True)`)."""
    return cls is not None and any("dataclass" in (dotted_name(d.decorator if not isinstance(d.decorator, cst.Call)
                                                              else d.decorator.func) or "") for d in cls.decorators)


def memoizes(module: cst.Module, guard: cst.If, per_object: bool = False) -> bool:
    """Whether `guard` computes a value once and keeps it, so that its body runs the first time only:
    `if self._t is None: self._t = ...`, `if key not in cache: cache[key] = ...`, `if not hasattr(obj,
    "x"): obj.x = ...`, `if not self._activated: ...; self._activated = True`. With `per_object` (a
    dataclass: a record made per step), a value kept in `self` is not kept across steps."""
    # (A local name is no cache: `if out is None: out = ...` runs on every call that passes no `out`.)
    cached = [name for name in (_cached_by(module, part) for part in _disjuncts(guard.test))
              if name is not None and ("." in name or name.endswith("[]")) and not (per_object and name.startswith("self."))]
    return bool(cached) and not assigned_targets(guard.body).isdisjoint(cached)


def _disjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return [*_disjuncts(test.left), *_disjuncts(test.right)]
    return [test]


def _cached_by(module: cst.Module, test: cst.BaseExpression) -> str | None:
    """What a memoizing test checks for: `x` in `x is None`, `cache` in `key not in cache`,
    `obj.name` in `not hasattr(obj, "name")`, `self.done` in `not self.done`."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.Is) and isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            return module.code_for_node(test.left)
        if isinstance(target.operator, cst.NotIn):
            return module.code_for_node(target.comparator) + "[]"
    if (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Call)
            and isinstance(test.expression.func, cst.Name) and test.expression.func.value == "hasattr"
            and len(test.expression.args) == 2 and isinstance(test.expression.args[1].value, cst.SimpleString)):
        name = test.expression.args[1].value.evaluated_value
        return f"{module.code_for_node(test.expression.args[0].value)}.{name}" if isinstance(name, str) else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(
            test.expression, (cst.Name, cst.Attribute)):
        return module.code_for_node(test.expression)
    return None
