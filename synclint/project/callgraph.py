"""The call graph beyond the calls a name resolves: what one file says of where its code runs.

`CallRecorder` (synclint.project.summaries) notes the calls a name resolves: `f()`, `self.m()`,
`super().m()`, `self.decoder.update()` where every assignment of `self.decoder` makes a project
class's object (`Symbols.receiver_class`). `GraphRecorder` rides along and notes, as facts of
Python rather than idioms of one project:

* methods called on objects whose class the code shows though no name resolves them: the elements of
  a container a loop walks (`for f in self.filters: f.apply(...)`, where `self.filters = [A(), B()]`
  or an `nn.ModuleList` of `Block(...)`), and a local variable every assignment of which constructs
  one class (`decoder = Decoder(...)`, then `decoder.update(...)`);
* functions handed to other calls (`functools.partial(f, ...)`, `map(self._g, xs)`, `pool.submit(f)`):
  the caller is taken to run them;
* where code starts running: the module's top level (once: at import, or as a script), the callbacks
  given to data loading (`collate_fn=`, `worker_init_fn=`, `transform=`: on the host, in DataLoader
  workers), hooks (`register_forward_hook(f)`: every forward);
* which loops run a model (`FileContext.loop_kind`), what each function calls in them, and whether a
  function's body runs a step of training or inference itself;
* the private names the text uses other than where it defines them.

`synclint.project.how_often` solves how often each function runs from these facts.
"""

from __future__ import annotations

import builtins
import re
from collections import Counter

import libcst as cst

from synclint.frequency import is_cached, is_registered, runs_model_call
from synclint.project.facts import ModuleSummary, ProjectFile

_BUILTINS = frozenset(dir(builtins))
# Keywords that hand a callable to data loading, which runs it on the host (in DataLoader workers).
HOST_CALLBACK_KEYWORDS = frozenset({"collate_fn", "worker_init_fn", "transform", "transforms", "target_transform",
                                    "pre_transform", "preprocess_fn", "preprocess"})
# `x.register_forward_hook(f)`, `register_forward_pre_hook`, `register_full_backward_hook`, `register_hook`.
_HOOK_REGISTRATION = re.compile(r"^register_\w*hook$")
# Private names (`_helper`, `_Cls`), not dunders; the ones a `def` or `class` line defines are not uses.
_PRIVATE_NAME = re.compile(r"(?<![\w])_[A-Za-z0-9]\w*")
_DEFINITION = re.compile(r"\b(?:def|class)[ \t]+(_[A-Za-z0-9]\w*)")


class GraphRecorder:
    """Notes a file's call-graph facts during the batched walk (see the module docstring)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.symbols = ctx.devices.symbols
        self.dispatch: dict[str, list[str]] = {}  # caller -> callees beyond `calls`
        self.model_loop_calls: dict[str, set[str]] = {}
        self.plain_loop_calls: dict[str, set[str]] = {}
        self.runs_model: set[str] = set()
        self.top_calls: set[str] = set()
        self.top_model_loop_calls: set[str] = set()
        self.host_callbacks: set[str] = set()
        self.hook_callbacks: set[str] = set()

    def visit_call(self, node: cst.Call, owner: str | None) -> None:
        scope = self.ctx.scopes[-1]
        callees = []
        callee = self.symbols.callee_qualname(node.func, scope)
        if callee is not None:
            callees.append(callee)
        callees.extend(self._dispatched(node.func, scope) if callee is None else ())
        handed = self._handed(node, scope)
        loop = self.ctx.loops.kind()
        if owner is None:
            if not isinstance(scope, cst.Module):
                return  # a nested class's method or a function nested in one: no summary holds it
            (self.top_model_loop_calls if loop == "model" else self.top_calls).update(callees + handed)
            return
        self.dispatch.setdefault(owner, []).extend(c for c in callees + handed if c != callee)
        if loop == "model":
            self.model_loop_calls.setdefault(owner, set()).update(callees + handed)
        elif loop == "plain":
            self.plain_loop_calls.setdefault(owner, set()).update(callees + handed)
        if owner not in self.runs_model and self._runs_model(node, callee):
            self.runs_model.add(owner)

    def _runs_model(self, node: cst.Call, callee: str | None) -> bool:
        """Whether the call is a step of training or inference: by what it calls, or a call of a module
        (`model(x)`, `self.net(x)`) as the device model knows modules (not asked of project functions)."""
        verdict = runs_model_call(node)
        func = node.func
        if verdict is None and isinstance(func, cst.Name) and (func.value in _BUILTINS or self.symbols.qualname(func)):
            return False  # a builtin or an imported function, not a module kept in a variable
        if verdict is None and callee is None:
            scope = self.ctx.scopes[-1]
            stmt = self.ctx.statements[-1] if self.ctx.statements else None
            verdict = self.ctx.devices.where(node.func, scope, stmt, self.ctx.comprehensions[-1]).is_module
        return bool(verdict)

    def _dispatched(self, func: cst.BaseExpression, scope) -> list[str]:
        """`obj.m(...)` where `obj` is an element of a container of project objects that a loop
        around the call walks, or a local variable every assignment of which constructs one class."""
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return []
        name, method = func.value.value, func.attr.value
        for loop in reversed(self.ctx.loops.around()):
            if isinstance(loop, cst.For) and isinstance(loop.target, cst.Name) and loop.target.value == name:
                return [f"{cls}.{method}" for cls in sorted(self._elements(loop.iter, scope))]
        if isinstance(scope, cst.FunctionDef):
            values = self.ctx.assignments(scope).get(name)
            if values:
                made = {self.symbols.constructed_class(value) for value in values}
                if len(made) == 1 and None not in made:
                    return [f"{made.pop()}.{method}"]
        return []

    def _elements(self, iterable: cst.BaseExpression, scope) -> frozenset[str]:
        """The project classes of the objects `iterable` yields: a container built there, or kept in `self`."""
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args and \
                iterable.func.attr.value == "values":
            iterable = iterable.func.value
        found = self.symbols.element_classes(iterable)
        if found:
            return found
        if (isinstance(iterable, cst.Attribute) and isinstance(iterable.value, cst.Name) and iterable.value.value == "self"
                and isinstance(scope, cst.FunctionDef) and (cls := self.symbols.self_class(scope)) is not None):
            return self.symbols.kept_objects(cls).get(iterable.attr.value, (frozenset(), frozenset()))[1]
        return frozenset()

    def _handed(self, node: cst.Call, scope) -> list[str]:
        """The project functions a call is handed as arguments (run by the caller, as far as the graph
        goes), less those handed to data loading or registered as hooks (noted as such)."""
        handed = []
        hook = isinstance(node.func, cst.Attribute) and bool(_HOOK_REGISTRATION.match(node.func.attr.value))
        for arg in node.args:
            value = arg.value
            to_data_loading = arg.keyword is not None and arg.keyword.value in HOST_CALLBACK_KEYWORDS
            target = None
            if isinstance(value, (cst.Name, cst.Attribute)):
                target = self.symbols.callee_qualname(value, scope)
            elif to_data_loading:
                made = self.symbols.constructed_class(value)  # `transform=Normalize(...)`: its __call__
                target = f"{made}.__call__" if made is not None else None
            if target is None:
                continue
            if to_data_loading:
                self.host_callbacks.add(target)
            elif hook:
                self.hook_callbacks.add(target)
            else:
                handed.append(target)
        return handed

    def facts(self, qual: str, func: cst.FunctionDef) -> dict:
        """The `FunctionSummary` fields of function `qual`."""
        return {"dispatch": tuple(dict.fromkeys(self.dispatch.get(qual, ()))),
                "model_loop_calls": tuple(sorted(self.model_loop_calls.get(qual, ()))),
                "plain_loop_calls": tuple(sorted(self.plain_loop_calls.get(qual, ()))),
                "runs_model": qual in self.runs_model,
                "cached": is_cached(func),
                "registered": is_registered(func)}

    def add_module_facts(self, summary: ModuleSummary, text: str) -> None:
        summary.top_calls = tuple(sorted(self.top_calls))
        summary.top_model_loop_calls = tuple(sorted(self.top_model_loop_calls))
        summary.host_callbacks = tuple(sorted(self.host_callbacks))
        summary.hook_callbacks = tuple(sorted(self.hook_callbacks))
        summary.private_names = private_names(text)


def private_names(text: str) -> frozenset[str]:
    """The private names (`_helper`) a module's text uses, other than where it defines them."""
    used = Counter(_PRIVATE_NAME.findall(text))
    defined = Counter(_DEFINITION.findall(text))
    return frozenset(name for name, count in used.items() if count > defined.get(name, 0))


def private_names_only(project: ProjectFile | None, relpath: str, text: str) -> ModuleSummary:
    """The summary of a file no rule needs to parse (it never mentions torch): the private names it
    uses, which may call the project's private functions."""
    return ModuleSummary(project.module if project is not None else "", relpath, private_names=private_names(text))
