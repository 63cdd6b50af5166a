"""The fast paths of the engine give what libcst's own machinery gives.

`traversal.walk` must call a visitor as `node.visit` does (same nodes, same order),
`traversal.children` give libcst's children, `syntax.ModuleScopes` what a walk of each scope
finds, `conventions.name_matches` what fnmatch says, and `engine._positions` the positions
libcst's PositionProvider gives.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from conftest import REPO
from synclint import engine
from synclint.config import build_settings
from synclint.engine import check_text, rules_for_text
from synclint.model import Confidence
from synclint.registry import builtin_rules
from synclint.devices.conventions import EPOCH_FUNCTIONS, INIT_FUNCTIONS, STEP_FUNCTIONS, name_matches
from synclint.syntax import ModuleScopes, local_assignments, self_attribute_assignments
from synclint.traversal import TRIVIA, _children_order, children, walk

# Syntax that the repository's own code may not show: each node class with its own order.
VARIETY = '''\
"""Module docstring."""
from __future__ import annotations
from . import sibling
from .pkg.mod import a as b, c
from os import *
import torch.cuda as tc, numpy


@decorator(arg=1)
# a comment between decorators
@other
async def coroutine[T: int, *Ts, **P](x: T, /, y: int = 2, *args: int, z, **kwargs) -> T | None:
    global counter
    nonlocal_value = [i async for i in aiter() if i if not i]
    async with ctx() as (a, b), other():
        await thing
    async for item in source:
        yield item
    yield from range(3)
    return (yield)


class Model(Base, metaclass=Meta):
    field: int = 0

    def method(self, t):
        def inner():
            nonlocal t
            t = t + 1
        x = lambda q, *r, s=1, **u: q
        y = {k: v for k, v in zip(a, b)}
        z = {*a, *b}
        w = (*a, *b)
        d = {**a, "k": 1}
        f = f"{t!r:>{width}} {t=} {'nested'} {t:{'spec'}}"
        g = t[1:2, ::3, ...]
        del t[0], t.attr
        assert t, "message"
        raise ValueError("x") from None
        if (n := len(t)) > 1:
            pass
        elif t is not None and not t:
            ...
        else:
            t @= t
        while t:
            break
        else:
            continue
        for i, (j, k) in enumerate(pairs):
            print(i, j, k, sep="", *rest, **options)
        try:
            pass
        except* (TypeError, ValueError) as group:
            pass
        try:
            pass
        except Exception:
            pass
        else:
            pass
        finally:
            pass
        match command:
            case [1, *others] if others:
                pass
            case {"key": value, **rest}:
                pass
            case Point(x=0, y=yy) | None as captured:
                pass
            case _:
                pass
        type Alias = list[int]
        return -t ** 2 if t else ~t


x: "torch.Tensor" = 1; y = 2
print(x if x else y, [*range(3)], 1 < 2 <= 3 != 4, a or b and c)
'''


def _corpus() -> list[tuple[str, str]]:
    files = sorted([*(REPO / "synclint").rglob("*.py"), *(REPO / "rules").glob("*.py"), *(REPO / "fixtures").rglob("*.py")])
    return [("variety.py", VARIETY), *((str(p.relative_to(REPO)), p.read_text(encoding="utf-8")) for p in files)]


class Recorder(cst.CSTVisitor):
    """Records every callback, trivia included."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # a visitor may stop the descent

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.events.append(("enter", id(node), attribute))

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.events.append(("exit", id(original_node), attribute))


class EveryField(dict):
    """Attribute hooks for every field of every node class."""

    def get(self, cls, default=()):
        return tuple(name for name, _ in _children_order(cls) or ())


class Plain(cst.CSTVisitor):
    """A visitor of content nodes only, as the rules write them: `walk` skips the trivia."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.events.append(("name", id(node)))

    def visit_Call(self, node: cst.Call) -> None:
        self.events.append(("call", id(node)))

    def leave_Call(self, original_node: cst.Call) -> None:
        self.events.append(("/call", id(original_node)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.events.append(("def", id(node)))
        return node.name.value != "inner"


@pytest.mark.parametrize("name, code", _corpus(), ids=lambda item: item if isinstance(item, str) and "\n" not in item else "")
def test_walk_calls_a_visitor_as_libcst_visit_does(name, code):
    module = cst.parse_module(code)
    expected, got = Recorder(), Recorder()
    module.visit(expected)
    walk(module, got, attribute_hooks=EveryField())

    def comparable(events):  # libcst skips the hooks of an f-string's absent format spec; walk does not
        return [e for e in events if not (e[0] in ("enter", "exit") and e[2] == "format_spec")]

    assert comparable(got.events) == comparable(expected.events)
    expected_plain, got_plain = Plain(), Plain()
    module.visit(expected_plain)
    walk(module, got_plain)
    assert got_plain.events == expected_plain.events


def test_walk_skips_trivia_only_where_nothing_asks_for_it():
    module = cst.parse_module("f(a, b)  # note\n")

    class Comments(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.comments: list[str] = []

        def visit_Comment(self, node: cst.Comment) -> None:
            self.comments.append(node.value)

    visitor = Comments()
    walk(module, visitor)
    assert visitor.comments == ["# note"]
    assert cst.Comment in TRIVIA


def _findings(code: str, name: str) -> list:
    """Every finding, low confidence included: more positions to compare."""
    settings = replace(build_settings({}, Path("."), None), min_confidence=Confidence.LOW)
    return check_text(code, name, settings)


@pytest.mark.parametrize("name, code", [item for item in _corpus() if item[0].startswith("fixtures")], ids=lambda item: item if isinstance(item, str) and "\n" not in item else "")
def test_positions_around_the_anchor_are_the_whole_module_positions(name, code, monkeypatch):
    fast = _findings(code, name)
    monkeypatch.setattr(engine, "_positions", lambda module, text, reports: engine._all_positions(module))
    assert fast == _findings(code, name)


def test_positions_of_twice_written_functions_and_other_newlines(monkeypatch):
    method = "    def read(self, x):\n        return x.item()\n"
    code = (
        "import torch\n\n\nclass A:\n" + method + "\n\nclass B:\n\tpass\n\n\nclass C:\n" + method
        + "\n\ndef f(x: torch.Tensor):\n\tif x.any():\n\t\tpass\n"
    )
    for text in (code, code.replace("\n", "\r\n")):
        fast = _findings(text, "twice.py")
        monkeypatch.setattr(engine, "_positions", lambda module, text, reports: engine._all_positions(module))
        assert fast == _findings(text, "twice.py")
        monkeypatch.undo()
        assert fast


def test_prefilters_are_necessary_words():
    rules = {rule.code: rule for rule in builtin_rules()}
    no_torch = "def f(x_gpu):\n    return x_gpu.inverse(), isinstance(x_gpu, list)\n"
    assert rules["SYNC109"] in rules_for_text(no_torch, list(rules.values()))
    assert rules["SYNC109"] not in rules_for_text("isinstance(a, b)\n", list(rules.values()))
    assert rules["SYNC103"] in rules_for_text("y = x_gpu.new_tensor([1])\n", list(rules.values()))


@pytest.mark.parametrize("name, code", _corpus(), ids=lambda item: item if isinstance(item, str) and "\n" not in item else "")
def test_children_are_libcsts_children_less_the_trivia(name, code):
    module = cst.parse_module(code)
    nodes: list[cst.CSTNode] = []

    class Every(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nodes.append(node)
            return True

    walk(module, Every())
    assert len(nodes) > 1
    for node in nodes:
        assert children(node) == [child for child in node.children if type(child) not in TRIVIA]


def test_a_visitor_that_overrides_on_visit_still_gets_its_leave_methods():
    module = cst.parse_module("f(g(x))\nh()\n")

    class Calls(cst.CSTVisitor):
        walks_trivia = False

        def __init__(self) -> None:
            super().__init__()
            self.events: list[str] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Call):
                self.events.append("call " + cst.Module([]).code_for_node(node.func))
            return True

        def leave_Call(self, original_node: cst.Call) -> None:
            self.events.append("left " + cst.Module([]).code_for_node(original_node.func))

    expected, got = Calls(), Calls()
    module.visit(expected)
    walk(module, got)
    assert got.events == expected.events == ["call f", "call g", "left g", "left f", "call h", "left h"]


@pytest.mark.parametrize("name, code", _corpus(), ids=lambda item: item if isinstance(item, str) and "\n" not in item else "")
def test_one_walk_of_a_module_finds_what_a_walk_of_each_scope_finds(name, code):
    module = cst.parse_module(code)
    scopes: list[cst.CSTNode] = [module]

    class Scopes(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            scopes.append(node)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            scopes.append(node)

        def visit_Lambda(self, node: cst.Lambda) -> None:
            scopes.append(node)

    walk(module, Scopes())
    found = ModuleScopes(module)

    def same(got: dict, expected: dict) -> bool:  # the very value nodes, in order
        return got.keys() == expected.keys() and all(
            [id(v) for v in got[k]] == [id(v) for v in expected[k]] for k in expected)

    for scope in scopes:
        assert same(found.local(scope), local_assignments(scope))  # type: ignore[arg-type]
        if isinstance(scope, cst.ClassDef):
            assert same(found.self_attributes(scope), self_attribute_assignments(scope))
        if isinstance(scope, (cst.FunctionDef, cst.Module)):
            for classes in (False, True):
                expected = _OwnNodes(scope, classes)
                walk(scope, expected)
                assert [id(n) for n in found.own_nodes(scope, classes)] == [id(n) for n in expected.nodes]


class _OwnNodes(cst.CSTVisitor):
    """A walk of one scope for the nodes `ModuleScopes.own_nodes` keeps of it."""

    def __init__(self, scope: cst.CSTNode, classes: bool) -> None:
        super().__init__()
        self.scope, self.classes, self.nodes = scope, classes, []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.scope

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self.classes

    def visit_Call(self, node: cst.Call) -> None:
        self.nodes.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.nodes.append(node)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.nodes.append(node)

    def visit_If(self, node: cst.If) -> None:
        self.nodes.append(node)


def test_name_patterns_match_as_fnmatch_does():
    names = ["forward", "train_step", "step", "_step", "step_fn", "on_train_epoch_end", "on_epoch_start", "__init__",
             "init_weights", "_init_cache", "load_model", "capture_graph", "decode", "x_decode", "sample_next_token",
             "Forward", "stepwise", "", "main", "run_cli", "collate_fn", "__getitem__", "a.b"]
    for patterns in (STEP_FUNCTIONS, INIT_FUNCTIONS, EPOCH_FUNCTIONS, ("*_step", "step_*", "decode", "*[ab]?"), ()):
        for name in names:
            assert name_matches(name, patterns) == any(fnmatch.fnmatchcase(name, p) for p in patterns), (name, patterns)
