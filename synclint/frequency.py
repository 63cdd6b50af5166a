"""How often a line runs, as far as the code says: the facts behind a finding's context.

A finding's context (`config.CONTEXTS`) says how often its line runs: in a loop or a per-step method
(`loop`, `step`), once every so many steps (`interval`: `if step % log_every == 0:`, a guard such as
`every_n_steps(...)`, a per-epoch hook), or once (`init`: set-up, checkpointing and teardown functions
by their names, a `__main__` block outside its loops, an `except` block, the block of an `if` that
keeps what it computes). The engine tracks the blocks around each node; these functions read them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import libcst as cst

from synclint.devices.lattice import Where
from synclint.devices.conventions import (
    EPOCH_FUNCTIONS,
    INIT_FUNCTIONS,
    MODEL_METHODS,
    PERIODIC_GUARD,
    STEP_CALLS,
    STEPPING,
    WEIGHT_LOADER,
    name_matches,
)
from synclint.traversal import walk
from synclint.syntax import Scope, code_text, dotted_name, interval_of, local_assignments

# Why code in these blocks runs once (`Site.once`).
MAIN_BLOCK = 'in an `if __name__ == "__main__":` block, which runs once'
EXCEPT_BLOCK = "in an `except` block, which runs only when an error is caught"


def named_to_run_once(function_names: list[str]) -> bool:
    """Whether one of the functions around the code is set-up, loading, checkpointing or teardown by its name."""
    return any(name_matches(name, INIT_FUNCTIONS) for name in function_names) or any(
        WEIGHT_LOADER.search(name) for name in function_names)


def in_epoch_function(scope: Scope) -> bool:
    """Whether `scope` is a per-epoch hook by its name (`on_train_epoch_end`)."""
    return isinstance(scope, cst.FunctionDef) and name_matches(scope.name.value, EPOCH_FUNCTIONS)


def periodic_guard(test: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
    """The period of an `if` that holds once every so many steps, or the guard call that says so; also
    of a flag that `scope` sets only to such a test (`is_log = step % log_every == 0`, then `if is_log:`)."""
    period = interval_of(test, PERIODIC_GUARD)
    flags = [test] if isinstance(test, cst.Name) else [side for side in (test.left, test.right) if isinstance(
        side, cst.Name)] if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) else []
    if period is not None or not flags:
        return period
    assigned = _assignments(scope)
    for flag in flags:
        values = assigned.get(flag.value) or [None]
        periods = [interval_of(value, PERIODIC_GUARD) if value is not None else None for value in values]
        if all(p is not None for p in periods):
            return periods[0]
    return None


# The names a function assigns, for the last function asked of: the `if`s of a function are met one
# after another, and each would otherwise walk its whole body again.
_assigned: list[tuple[Scope, dict[str, list[cst.BaseExpression | None]]]] = []


def _assignments(scope: Scope) -> dict[str, list[cst.BaseExpression | None]]:
    if not _assigned or _assigned[0][0] is not scope:
        _assigned[:] = [(scope, local_assignments(scope))]
    return _assigned[0][1]


def interval_phrase(intervals: tuple[cst.If, ...], scope: Scope) -> str | None:
    """How often the code runs, when an `if` around it (innermost last) or its function says once every
    so many steps."""
    if intervals:
        period = periodic_guard(intervals[-1].test, scope)
        text = code_text(cast(cst.BaseExpression, period), 40)
        return f"only when `{text}` holds" if isinstance(period, cst.Call) else f"once every `{text}` steps"
    return "once per epoch" if in_epoch_function(scope) else None


def first_time_only(guard: cst.If) -> str:
    """Why the body of a memoizing `if` (`syntax.memoizes`) runs once."""
    return f"under `if {code_text(guard.test, 50)}:`, whose block runs the first time only"


def is_main_guard(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(side, cst.Name) and side.value == "__name__" for side in sides) and any(
        isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__" for side in sides)


# ---- loops that run a model -------------------------------------------------------------------

def runs_model_call(call: cst.Call) -> bool | None:
    """Whether a call, by what it calls, is a step of training or inference: `loss.backward()`,
    `optimizer.step()`, `model.generate(...)`, `self.train_step(batch)`, `x.forward(...)`. None: its
    callee may be a module that the caller must ask the device model about (`model(x)`, `self.net(x)`)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        if name in MODEL_METHODS:
            return True
        if name == "step":
            receiver = dotted_name(func.value) or ""
            return bool(STEPPING.search(receiver.rpartition(".")[2])) or receiver in ("self", "")
        if name_matches(name, STEP_CALLS):
            return True
        return None if isinstance(func.value, cst.Name) and func.value.value == "self" else False
    if isinstance(func, cst.Name):
        if name_matches(func.value, STEP_CALLS):
            return True
        return None
    return False


def loop_runs_model(loop: cst.CSTNode, is_module: Callable[[cst.BaseExpression], bool]) -> bool:
    """Whether a loop's body (a comprehension: all of it) runs a step of training or inference
    (`runs_model_call`), a call of a module among them (`model(x)`, `self.net(x)`: `is_module` of the callee).
    The calls are looked at in source order, not those of the functions, classes and lambdas it defines,
    and the walk ends at the first that runs a model."""
    body = loop.body if isinstance(loop, (cst.For, cst.While)) else loop
    finder = _ModelCall(body, is_module)
    walk(body, finder)
    return finder.found


_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


class _ModelCall(cst.CSTVisitor):
    """The walk of `loop_runs_model`."""

    walks_trivia = False  # calls only

    def __init__(self, root: cst.CSTNode, is_module: Callable[[cst.BaseExpression], bool]) -> None:
        self.root = root
        self.is_module = is_module
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found:
            return False
        kind = type(node)
        if kind is cst.Call:
            call = cast(cst.Call, node)
            verdict = runs_model_call(call)
            if verdict if verdict is not None else self.is_module(call.func):
                self.found = True
                return False
        return node is self.root or kind not in _NESTED_SCOPES


# Decorators that keep a function's results: its body runs once per distinct argument.
_CACHING = frozenset({"lru_cache", "cache", "cached_property", "cached", "memoize"})
# Decorators that wrap a function without handing it to anyone: a function with any other decorator
# (`@registry.register("name")`, `@app.route(...)`, `@hook`) may be called through what it was given to.
_PLAIN_DECORATORS = _CACHING | frozenset({
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "wraps", "no_grad", "inference_mode",
    "enable_grad", "compile", "script", "ignore", "unused", "overload", "override", "abstractmethod", "final",
    "deprecated", "contextmanager", "asynccontextmanager", "dataclass", "jit", "autocast", "custom_fwd",
    "custom_bwd", "once_differentiable", "wrap", "disable"})


def _decorator_names(func: cst.FunctionDef) -> list[str | None]:
    """The last name of each decorator (`functools.lru_cache(maxsize=8)`: `lru_cache`; None where it is
    no dotted name, such as `@hooks[0]`)."""
    names: list[str | None] = []
    for decorator in func.decorators:
        expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = dotted_name(expr)
        names.append(name.rpartition(".")[2] if name is not None else None)
    return names


def is_registered(func: cst.FunctionDef) -> bool:
    """Whether a decorator may hand the function to a registry or a framework, which calls it where no
    call in the text shows (`@AttentionBackendRegistry.register(...)`, `@app.get("/")`)."""
    return any(name not in _PLAIN_DECORATORS for name in _decorator_names(func))


def is_cached(func: cst.FunctionDef) -> bool:
    """Whether a decorator keeps the function's results (`functools.lru_cache`, `cache`,
    `cached_property`): its body runs once per distinct argument, not once per call."""
    return any(name in _CACHING for name in _decorator_names(func))


class Loops:
    """The loops around the node being visited, per scope (for, while, comprehensions; outermost first),
    and what they say of how often it runs (`kind`). `where(func, loop)` is the device model's verdict
    on a callee in a loop's body (is it a module?)."""

    def __init__(self, where: Callable[[cst.BaseExpression, cst.CSTNode], Where]) -> None:
        self.where = where
        self.stack: list[tuple[cst.CSTNode, ...]] = [()]
        self._runs_model: dict[int, bool] = {}  # id(loop) -> `loop_runs_model`

    def enter_scope(self) -> None:
        self.stack.append(())

    def leave_scope(self) -> None:
        self.stack.pop()

    def enter(self, loop: cst.CSTNode) -> None:
        self.stack[-1] = (*self.stack[-1], loop)

    def leave(self) -> None:
        self.stack[-1] = self.stack[-1][:-1]

    def around(self) -> tuple[cst.CSTNode, ...]:
        return self.stack[-1]

    def depth(self) -> int:
        return len(self.stack[-1])

    def kind(self) -> str:
        """"model" when a loop around the node runs a model (a training, generation or decode loop: it
        repeats whatever runs it), "plain" when it sits only in other loops (they repeat as often as
        their function runs), "" outside loops."""
        loops = self.stack[-1]
        return "" if not loops else "model" if any(self.runs_model(loop) for loop in loops) else "plain"

    def runs_model(self, loop: cst.CSTNode) -> bool:
        known = self._runs_model.get(id(loop))
        if known is None:
            known = self._runs_model[id(loop)] = loop_runs_model(loop, lambda func: self.where(func, loop).is_module)
        return known
