"""How often a line runs, as far as the code says: the facts behind a finding's context.

A finding's context (`config.CONTEXTS`) says how often its line runs: in a loop or a per-step method
(`loop`, `step`), once every so many steps (`interval`: `if step % log_every == 0:`, a guard such as
`every_n_steps(...)`, a per-epoch hook), or once (`init`: set-up, checkpointing and teardown functions
by their names, a `__main__` block outside its loops, an `except` block, the block of an `if` that
keeps what it computes). The engine tracks the blocks around each node; these functions read them.
"""

from __future__ import annotations

import fnmatch
from typing import cast

import libcst as cst

from synclint.devices.conventions import EPOCH_FUNCTIONS, INIT_FUNCTIONS, PERIODIC_GUARD, WEIGHT_LOADER
from synclint.syntax import Scope, code_text, interval_of, local_assignments

# Why code in these blocks runs once (`Site.once`).
MAIN_BLOCK = 'in an `if __name__ == "__main__":` block, which runs once'
EXCEPT_BLOCK = "in an `except` block, which runs only when an error is caught"


def named_to_run_once(function_names: list[str]) -> bool:
    """Whether one of the functions around the code is set-up, loading, checkpointing or teardown by its name."""
    return any(fnmatch.fnmatchcase(name, pattern) for name in function_names for pattern in INIT_FUNCTIONS) or any(
        WEIGHT_LOADER.search(name) for name in function_names)


def in_epoch_function(scope: Scope) -> bool:
    """Whether `scope` is a per-epoch hook by its name (`on_train_epoch_end`)."""
    return isinstance(scope, cst.FunctionDef) and any(
        fnmatch.fnmatchcase(scope.name.value, pattern) for pattern in EPOCH_FUNCTIONS)


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
