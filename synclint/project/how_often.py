"""Where and how often each function of the project runs, solved once over the call graph.

Roots are facts of PyTorch and Python:

* repeats: a module's `forward` and the methods named as per-step ones (`conventions.STEP_FUNCTIONS`:
  trainer step hooks, `step`, `sample`, ...), hooks registered on modules, and whatever a loop that runs
  a model calls (a training, generation or decode loop: `frequency.Loops.kind`, or a loop whose
  callees run one);
* runs on the host: the item and iteration methods of datasets and samplers, collate functions, and
  the callables handed to data loading (`collate_fn=`, `transform=`): DataLoader workers run them;
* runs once: set-up, loading, checkpointing and export by their names (`conventions.INIT_FUNCTIONS`),
  entry points (`main`), what a module's top level calls, and functions whose results a decorator keeps
  (`@lru_cache`: once per distinct argument);
* only in tests: test functions and test files;
* entry points of unknown frequency: public functions and methods nothing in the project calls (a
  library's users call them), and private ones the project names somewhere the graph cannot follow;
* never runs: private functions nothing calls, no text of the project names and no decorator hands to
  a registry.

A function takes the most frequent kind of any root that reaches it (repeats first, then unknown,
host, once, tests, never), through the calls its summary lists (`calls`, `dispatch`), each reaching the
project's overrides of the method it names (class-hierarchy analysis). A cached function is reached
as once, whatever calls it. Each answer keeps the path from its root, which the finding's `because` names.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from synclint.devices.conventions import DATA_CLASS, DATA_METHODS, ENTRY_POINTS, is_test_path, name_matches, names_a_step
from synclint.frequency import named_to_run_once
from synclint.project.facts import ClassSummary, FunctionSummary, ModuleSummary, short_name


class Runs(enum.IntEnum):
    """How often a function runs, the most frequent first (the order in which kinds win)."""

    REPEATS = 0
    LOOPS = 1  # called in a loop (that runs no model) of code that may repeat: as often as that loop
    UNKNOWN = 2  # an entry point of the project's users, or a call the graph cannot follow
    HOST = 3
    ONCE = 4
    TESTS = 5
    NEVER = 6


@dataclass(frozen=True)
class Frequency:
    runs: Runs
    path: tuple[str, ...]  # qualified names from the root down to the function
    root: str  # why the root runs as it does, in words
    loops_run_model: bool = False  # one of its loops calls a function that runs a model

    def describe(self, root: str | None = None) -> str:
        """`every step: Block.forward() -> Block._norm() -> _mask()`: the root's reason (or `root`, said
        otherwise), then the path."""
        return f"{root or self.root}: " + " -> ".join(f"{short_name(q)}()" for q in self.path)


def solve(functions: dict[str, FunctionSummary], classes: dict[str, ClassSummary],
          resolve: Callable[[str], str | None], ancestors: Callable[[str], list[str]],
          modules: Iterable[ModuleSummary]) -> dict[str, Frequency]:
    """How often each function of `functions` runs (see the module docstring)."""
    modules = list(modules)
    overrides = _overrides(functions, classes)

    def targets(names: Iterable[str]) -> list[str]:
        found: list[str] = []
        for name in names:
            target = resolve(name)
            if target is None and name.endswith(".__call__"):
                target = resolve(name[: -len("__call__")] + "forward")  # calling a module runs its forward
            if target is None:
                continue
            found.append(target)
            found.extend(overrides.get(target, ()))
        return list(dict.fromkeys(found))

    edges: dict[str, list[str]] = {}  # caller -> callees that run as often as it does
    once_edges: dict[str, list[str]] = {}  # caller -> callees it calls only from its code that runs once
    called: set[str] = set()
    for qual, func in functions.items():
        once = set(targets(func.calls_once))
        every = [t for t in targets((*func.calls, *func.dispatch)) if t != qual]
        edges[qual] = [t for t in every if t not in once]
        once_edges[qual] = [t for t in every if t in once]
        called.update(every)
    drives = _drives_model(functions, edges)

    roots: dict[Runs, dict[str, tuple[str, str | None]]] = {kind: {} for kind in Runs}  # target -> (why, caller)
    # What runs once whatever calls it (a kept result, set-up by its name) is no path to a step.
    barriers: set[str] = set()

    def root(kind: Runs, target: str, why: str, caller: str | None = None) -> None:
        roots[kind].setdefault(target, (why, caller))

    for module in modules:
        for target in targets(module.top_model_loop_calls):
            root(Runs.REPEATS, target, "every step, in a loop that runs a model")
        for target in targets(module.hook_callbacks):
            root(Runs.REPEATS, target, "every step, as a hook on a module")
        for target in targets(module.host_callbacks):
            root(Runs.HOST, target, "on the host, in data loading")
        for target in targets(module.top_calls):
            root(Runs.ONCE, target, "once, at the top level of a module")
        called.update(targets((*module.top_calls, *module.top_model_loop_calls, *module.hook_callbacks,
                               *module.host_callbacks)))
    used_names = frozenset().union(*(module.private_names for module in modules))
    loops_run_model = set()
    for qual, func in functions.items():
        name = qual.rpartition(".")[2]
        plain = targets(func.plain_loop_calls)
        if any(t in drives for t in plain):
            loops_run_model.add(qual)
        for target in targets(func.model_loop_calls) + (plain if qual in loops_run_model else []):
            if target != qual:
                root(Runs.REPEATS, target, "every step, in a loop that runs a model", qual)
        if is_test_path(func.path) or name.startswith("test"):
            root(Runs.TESTS, qual, "only in tests")
        elif func.cached or named_to_run_once([name]) or name_matches(name, ENTRY_POINTS):
            if qual not in roots[Runs.ONCE]:  # (a module's top level that calls it says so first)
                barriers.add(qual)
            root(Runs.ONCE, qual, "once per distinct argument, as its decorator keeps the result" if func.cached
                 else "once, in set-up code")
        elif _is_data_method(qual, name, ancestors):
            root(Runs.HOST, qual, "on the host, in data loading")
        elif names_a_step(name):
            root(Runs.REPEATS, qual, "every step")
        elif qual not in called:
            private = name.startswith("_") and not name.startswith("__")
            if private and name not in used_names and not func.registered:
                root(Runs.NEVER, qual, "never: nothing in the project calls it")
            else:
                root(Runs.UNKNOWN, qual, "as often as the project's users call it")

    solved = _propagate(roots, edges, once_edges, barriers, loops_run_model, functions)
    # The functions called in the plain loops of code that may repeat (not once, on the host, in tests
    # or never) run as often as those loops: solved again with them as roots, until they settle.
    for _ in range(4):
        before = dict(roots[Runs.LOOPS])
        for qual, func in functions.items():
            found = solved.get(qual)
            if found is None or found.runs in (Runs.REPEATS, Runs.LOOPS, Runs.UNKNOWN):
                for target in targets(func.plain_loop_calls):
                    if target != qual:
                        root(Runs.LOOPS, target, "in a loop", qual)
        if roots[Runs.LOOPS] == before:
            break
        solved = _propagate(roots, edges, once_edges, barriers, loops_run_model, functions)
    return solved


def _propagate(roots: dict[Runs, dict[str, tuple[str, str | None]]], edges: dict[str, list[str]],
               once_edges: dict[str, list[str]], barriers: set[str], loops_run_model: set[str],
               functions: dict[str, FunctionSummary]) -> dict[str, Frequency]:
    """Each function's kind: the most frequent whose roots reach it, breadth first (the shortest path)."""
    solved: dict[str, Frequency] = {}
    for kind in Runs:  # the most frequent kind first: a function keeps the first that reaches it
        parent: dict[str, str | None] = {}
        why: dict[str, str] = {}
        queue: deque[str] = deque()
        frequent = kind <= Runs.UNKNOWN
        for target, (reason, caller) in sorted(roots[kind].items()):
            if target in solved or target not in functions or (frequent and target in barriers):
                continue
            parent[target], why[target] = caller, reason
            queue.append(target)
        while queue:
            qual = queue.popleft()
            nexts = edges.get(qual, []) + (once_edges.get(qual, []) if kind >= Runs.ONCE else [])
            for target in nexts:
                if target in parent or target in solved or (frequent and target in barriers):
                    continue
                parent[target], why[target] = qual, why[qual]
                queue.append(target)
        for qual in parent:
            path = [qual]
            step = parent[qual]
            while step is not None and len(path) < 8:
                path.append(step)
                step = parent.get(step)
            solved[qual] = Frequency(kind, tuple(reversed(path)), why[qual], qual in loops_run_model)
    return solved


def _is_data_method(qual: str, name: str, ancestors: Callable[[str], list[str]]) -> bool:
    """Whether `qual` is a method DataLoader workers call: an item or iteration method, or a collate
    method, of a dataset, sampler or collator (by the class's name or a base's)."""
    owner = qual.rpartition(".")[0]
    if not owner or not name_matches(name, DATA_METHODS):
        return False
    return any(DATA_CLASS.search(cls.rpartition(".")[2]) for cls in ancestors(owner))


def _overrides(functions: dict[str, FunctionSummary], classes: dict[str, ClassSummary]) -> dict[str, list[str]]:
    """For each method, the methods of the same name that the project's subclasses of its class
    define: a call of the base's method may run any of them."""
    children: dict[str, list[str]] = {}
    for qual, cls in classes.items():
        for base in cls.bases:
            children.setdefault(base, []).append(qual)
    found: dict[str, list[str]] = {}
    for qual in functions:
        owner, _, name = qual.rpartition(".")
        if owner not in classes:
            continue
        pending, seen, below = list(children.get(owner, ())), set(), []
        while pending:
            sub = pending.pop()
            if sub in seen:
                continue
            seen.add(sub)
            if f"{sub}.{name}" in functions:
                below.append(f"{sub}.{name}")
            pending.extend(children.get(sub, ()))
        if below:
            found[qual] = sorted(below)
    return found


def _drives_model(functions: dict[str, FunctionSummary], edges: dict[str, list[str]]) -> set[str]:
    """The functions that run a step of training or inference, themselves or through what they call
    (a module's `forward` is one): the least fixed point over the callers."""
    callers: dict[str, list[str]] = {}
    for caller, callees in edges.items():
        for callee in callees:
            callers.setdefault(callee, []).append(caller)
    found = {qual for qual, func in functions.items() if func.runs_model or qual.rpartition(".")[2] == "forward"}
    pending = list(found)
    while pending:
        for caller in callers.get(pending.pop(), ()):
            if caller not in found:
                found.add(caller)
                pending.append(caller)
    return found
