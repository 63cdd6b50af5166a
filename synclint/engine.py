"""Checking one file: decode, prefilter, parse, one batched traversal of all rules, filter.

Positions are resolved only for the reports that pass the filters, and only around them
(`_positions`): libcst's PositionProvider regenerates the whole file's code, which on vLLM's
largest file costs more than the rest of the check.
"""

from __future__ import annotations

import functools
import pickle
import re
import traceback
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from synclint.config import Settings
from synclint.cst_internals import code_at_indent, parse_module_unvalidated, positions_in
from synclint.devices.conventions import (
    HOST_SIDE_CLASS,
    NameConventions,
    is_host_code_path,
    is_test_path,
    names_a_step,
    other_accelerator,
    other_accelerator_scope,
)
from synclint.devices.lattice import Where
from synclint.devices.model import DeviceModel
from synclint.devices.program import required_accelerator
from synclint.fixlayout import FileLines, fit_edit
from synclint import policy
from synclint.model import Edit, Finding, Fix, Location
from synclint.noqa import parse_noqa
from synclint.patterns import one_line_message
from synclint.project.facts import ModuleSummary, ProjectFile
from synclint.project.index import ProjectIndex
from synclint.project.callgraph import private_names_only
from synclint.project.summaries import CallRecorder, add_late_syncs, summarize
from synclint.rule import Replacement, Report, Rule, Site
from synclint.source import DecodeProblem, SourceText, decode, too_complex
from synclint.frequency import (
    EXCEPT_BLOCK,
    Loops,
    MAIN_BLOCK,
    first_time_only,
    in_epoch_function,
    interval_phrase,
    is_main_guard,
    named_to_run_once,
    periodic_guard,
)
from synclint.syntax import Scope, dotted_name, is_dataclass, memoizes, statements
from synclint.traversal import TRIVIA_NAMES, walk

PARSE_ERROR = ("SYNC000", "parse-error")
INTERNAL_ERROR = ("SYNC001", "internal-error")

@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    internal_error: str | None = None  # a rule crashed: the run ends with exit 2
    source: SourceText | None = None
    # The file's ModuleSummary for the project index (None: not parsed, or analysis off), or, as
    # the cache keeps it, its pickle, unpickled when first asked for: a warm run that finds its
    # project index kept asks for none (nine tenths of the time it took to read the results).
    summary_data: ModuleSummary | bytes | None = None
    # Every finding of the file's analysis, before the view (synclint.view) chose `findings`:
    # what the cache keeps (None: not analysed here, as a fix's result after changes).
    analysis: list[Finding] | None = None
    hidden_tests: int = 0  # findings in test code that the view left out (`include-tests` off)
    hidden_contexts: int = 0  # findings that only `ignore-contexts` left out

    @property
    def summary(self) -> ModuleSummary | None:
        if isinstance(self.summary_data, bytes):
            self.summary_data = cast(ModuleSummary, pickle.loads(self.summary_data))
        return self.summary_data

    @summary.setter
    def summary(self, value: ModuleSummary | None) -> None:
        self.summary_data = value


class FileContext:
    """What the rules of one file share: the tree, the device model, the traversal state
    (`synclint.rule.RuleContext` is what rules see of it)."""

    def __init__(self, module: cst.Module, settings: Settings, relpath: str, project: ProjectFile | None = None) -> None:
        self.module = module
        self.settings = settings
        self.relpath = relpath
        self.project = project or ProjectFile()
        self.index: ProjectIndex | None = None  # set after the walk, before `Rule.finish`
        conventions = NameConventions(host_fields=self.project.host_fields)
        if settings.host_name_patterns is not None or settings.device_name_patterns is not None:
            conventions = replace(
                conventions,
                host=settings.host_name_patterns if settings.host_name_patterns is not None else conventions.host,
                device=settings.device_name_patterns if settings.device_name_patterns is not None else conventions.device,
            )
        self.devices = DeviceModel(module, conventions, host_code=is_host_code_path(relpath), project=self.project)
        self.reports: list[tuple[Rule, Report]] = []
        self.in_test_file = is_test_path(relpath)
        self.other_accelerator = other_accelerator(relpath) or required_accelerator(module)
        self._private_callers: dict[int, list] | None = None  # id(private function) -> its call sites
        self._accelerators: dict[int, str | None] = {}  # id(function) -> see `accelerator`
        self._steps: dict[int, bool] = {}  # id(function) -> whether its name is a per-step method's
        self._set_up: dict[int, bool] = {}  # id(innermost scope) -> whether it is set-up code by a name
        # Traversal state, kept by the batched visitor.
        self.scopes: list[Scope] = [module]
        self.scope_blocks: list[int] = [0]  # per scope: how many blocks enclose it
        # Per scope: the statement of its own body being visited, with how many blocks enclose it.
        self.scope_statements: list[tuple[cst.CSTNode, int] | None] = [None]
        self.statements: list[cst.CSTNode] = []
        self.loops = Loops(lambda func, loop: self.devices.where(func, self.scopes[-1], loop, self.comprehensions[-1]))
        # Per scope: the `if step % interval == 0:` blocks around the node, outermost first.
        self.intervals: list[tuple[cst.If, ...]] = [()]
        # Per scope: the blocks around the node that run once (a `__main__` block, an `except` block),
        # outermost first, each with why and the loop depth where it opens (None: once even inside a loop).
        self.once: list[tuple[tuple[str, int | None], ...]] = [()]
        # Per scope: the comprehensions around the node being visited, outermost first.
        self.comprehensions: list[tuple[cst.BaseComp, ...]] = [()]
        self.allowed_depth = 0
        self.blocks: list[cst.IndentedBlock] = []

    def indentation(self) -> str:
        """The leading whitespace of the statement being visited (for fixes that span lines)."""
        default = self.module.default_indent
        return "".join(default if block.indent is None else block.indent for block in self.blocks)

    def assignments(self, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression | None]]:
        """`syntax.local_assignments(scope)`, found once per file for the device model and every
        rule that asks (each walks the whole scope). Shared: read it, do not change it."""
        return self.devices.local_values(scope)

    def attribute_assignments(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        """`syntax.self_attribute_assignments(cls)`, found once per file. Shared: do not change it."""
        return self.devices.symbols.attribute_values(cls)

    def where(self, expr: cst.BaseExpression) -> Where:
        stmt = self.statements[-1] if self.statements else None
        return self.devices.where(expr, self.scopes[-1], stmt, self.comprehensions[-1])

    def where_read(self, expr: cst.BaseExpression) -> Where:
        stmt = self.statements[-1] if self.statements else None
        return self.devices.where_read(expr, self.scopes[-1], stmt, self.comprehensions[-1])

    def current_function(self) -> cst.FunctionDef | None:
        scope = self.scopes[-1]
        return scope if isinstance(scope, cst.FunctionDef) else None

    def _named_once(self) -> bool:
        """Whether a function around the code is set-up code by its name (kept per innermost scope)."""
        key = id(self.scopes[-1])
        known = self._set_up.get(key)
        if known is None:
            known = self._set_up[key] = named_to_run_once(
                [s.name.value for s in self.scopes if isinstance(s, cst.FunctionDef)])
        return known

    def context(self) -> str:
        names = [s.name.value for s in self.scopes if isinstance(s, cst.FunctionDef)]
        if self.in_test_file or any(n.startswith("test") for n in names):
            return "test"
        if self._named_once() or self.once_reason() is not None:
            return "init"  # set-up code, weight loading included, a `__main__` block, an error path: it runs once
        if self.intervals[-1] or in_epoch_function(self.scopes[-1]):
            return "interval"
        if self.loops.depth() > 0:
            return "loop"
        if self._in_step_function():
            return "step"
        return "code"

    def once_reason(self) -> str | None:
        """Why the code here runs once although its function may run often: it sits in a `__main__`
        block outside any loop of it, in an `except` block, or in a memoizing `if` (None when none)."""
        for reason, loops in self.once[-1]:
            if loops is None or loops == self.loops.depth():
                return reason
        return None

    def per_object(self) -> bool:
        """Whether what the current method keeps in `self` is kept per object, which may be made per
        request or per step (a scheduler reset for each generation, a metadata record): a method of a
        class that is no nn.Module (a module lives as long as the model)."""
        scope = self.scopes[-1]
        if not isinstance(scope, cst.FunctionDef):
            return False
        cls = self.devices.symbols.class_of(scope)
        return cls is not None and (is_dataclass(cls) or not self.devices.symbols.is_module_class(cls))

    def set_up_here(self) -> bool:
        """Whether the code here runs once per process: in set-up code by its function's name, or in a
        `__main__` block outside its loops (an `except` or a memoizing block runs once per call only)."""
        return self._named_once() or self.once_reason() == MAIN_BLOCK

    def may_repeat(self) -> bool:
        """Whether code here may run many times: in a loop or in a per-step method (a cheap
        superset of the `loop` and `step` contexts, asked of every call)."""
        return self.loops.depth() > 0 or self._in_step_function()

    def _in_step_function(self) -> bool:
        """Whether the innermost function is named as a per-step method (STEP_FUNCTIONS)."""
        scope = self.scopes[-1]
        if not isinstance(scope, cst.FunctionDef):
            return False
        key = id(scope)
        known = self._steps.get(key)
        if known is None:
            known = self._steps[key] = names_a_step(scope.name.value)
        return known

    def site(self) -> Site:
        """Where the walk is now (for a report made now or after the walk)."""
        stmt = self.statements[-1] if self.statements else None
        return Site(self.context(), self.allowed_depth > 0, self.indentation(), self.anchors(), self.scopes[-1],
                    self.devices.platform_at(self.scopes[-1], stmt),
                    interval_phrase(self.intervals[-1], self.scopes[-1]), self.once_reason(), self.loops.kind())

    def accelerator(self, scope: Scope) -> str | None:
        """The platform other than a CUDA GPU that code in `scope` runs on, by the file's path or
        the packages it must import, by the names of its class and functions, or, for a private
        helper, by its callers: every call of it in the file is code for that platform (None:
        CUDA, as far as these tell)."""
        if self.other_accelerator is not None or not isinstance(scope, cst.FunctionDef):
            return self.other_accelerator
        key = id(scope)
        if key not in self._accelerators:
            self._accelerators[key] = None  # (a helper calling itself, meanwhile)
            names: list[str] = []
            func: cst.FunctionDef | None = scope
            while func is not None:
                names.insert(0, func.name.value)
                func = self.devices.symbols.enclosing.get(id(func))
            cls = self.devices.symbols.self_class(scope)
            self._accelerators[key] = (other_accelerator_scope(names, cls.name.value if cls is not None else None)
                                       or self._callers_accelerator(scope))
        return self._accelerators[key]

    def _callers_accelerator(self, func: cst.FunctionDef) -> str | None:
        """The platform of every call of the private module-level function `func` in the file, if
        they share one (composer's `_object_to_tensor`, called only by `all_gather_object_list_hpu`)."""
        if not func.name.value.startswith("_") or func.name.value.startswith("__"):
            return None
        if self._private_callers is None:
            names = {node.name.value for node in self.module.body
                     if isinstance(node, cst.FunctionDef) and node.name.value.startswith("_")}
            self._private_callers = {id(f): sites for f, sites in self.devices.symbols.private_call_sites(names)} if names else {}
        platforms = set()
        for call, scope, statement in self._private_callers.get(id(func), []):
            platform = self.devices.platform_at(scope, statement) or self.accelerator(scope)
            if platform is None:
                return None
            platforms.add(platform)
        return platforms.pop() if len(platforms) == 1 else None

    def host_side_class(self, scope: Scope) -> str | None:
        """The name of the class holding `scope` when it names one that prepares a model's
        inputs on the host (a multimodal processor: `conventions.HOST_SIDE_CLASS`)."""
        if not isinstance(scope, cst.FunctionDef):
            return None
        cls = self.devices.symbols.self_class(scope)
        return cls.name.value if cls is not None and HOST_SIDE_CLASS.search(cls.name.value) else None

    def anchors(self) -> tuple[tuple[cst.CSTNode, tuple[str, ...]], ...]:
        """Statements whose text holds what is being visited, smallest first, each with the
        indentation of the blocks around it: the statement of the scope's own body being
        visited, then the function itself (where `_positions` looks for positions)."""
        default = self.module.default_indent
        indents = [default if block.indent is None else block.indent for block in self.blocks]
        found = []
        statement = self.scope_statements[-1]
        if statement is not None:
            found.append((statement[0], tuple(indents[: statement[1]])))
        scope = self.scopes[-1]
        if isinstance(scope, cst.FunctionDef):
            found.append((scope, tuple(indents[: self.scope_blocks[-1]])))
        return tuple(found)


LOOP_BODIES: dict[type, tuple[str, ...]] = {
    cst.For: ("body",),
    cst.While: ("body",),
    cst.ListComp: ("elt",),
    cst.SetComp: ("elt",),
    cst.GeneratorExp: ("elt",),
    cst.DictComp: ("key", "value"),
    cst.CompFor: ("ifs",),
}
# Code that runs only on the way to an error: an assert's message, what a `raise` raises. A sync
# there costs nothing in a run that works (`assert x.shape == y.shape, f"{x}"`).
ERROR_PATHS: dict[type, tuple[str, ...]] = {
    cst.Assert: ("msg",),
    cst.Raise: ("exc", "cause"),
}
# The fields the batched visitor is told of when it enters and leaves them (an `if`'s body:
# whether it runs once every so many steps, `interval_of`).
ATTRIBUTE_HOOKS: dict[type, tuple[str, ...]] = {**LOOP_BODIES, **ERROR_PATHS, cst.If: ("body",),
                                               cst.ExceptHandler: ("body",), cst.ExceptStarHandler: ("body",)}



@functools.lru_cache(maxsize=None)
def _callback_names(rule: type[Rule | CallRecorder]) -> tuple[str, ...]:
    """A rule class's `visit_<Node>` and `leave_<Node>` methods, in `dir` order."""
    return tuple(
        attr for attr in dir(rule) if attr.startswith(("visit_", "leave_")) and attr.count("_") == 1
    )


# What the batched visitor tracks about a node, by its class (see `BatchedVisitor._kind`).
_STATEMENT, _BLOCK, _FUNCTION, _WITH, _COMPREHENSION = 1, 2, 4, 8, 16
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class RuleCrash(Exception):
    """A rule raised while visiting a node: the run names the rule and goes on with the next file."""

    def __init__(self, callback, node: cst.CSTNode, exc: Exception) -> None:
        rule = getattr(callback, "__self__", None)
        self.rule = f"{rule.code} ({rule.name})" if isinstance(rule, Rule) else getattr(callback, "__qualname__", "?")
        self.node_type = type(node).__name__
        self.exc = exc
        super().__init__(f"{self.rule} failed on a {self.node_type}: {type(exc).__name__}: {exc}")


class BatchedVisitor(cst.CSTVisitor):
    """Calls every enabled rule's visit_/leave_ methods in a single walk of the tree.

    Run it with `walk(module, visitor, attribute_hooks=ATTRIBUTE_HOOKS)` (synclint.traversal): a
    read-only walk that skips the punctuation and whitespace nodes no rule asks about. What it
    tracks of each node and the callbacks it calls are looked up once per node class, not
    tested per node (`isinstance` against libcst's abstract classes is slow).
    """

    def __init__(self, ctx: FileContext, rules: list[Rule | CallRecorder]) -> None:
        super().__init__()
        self.ctx = ctx
        self.visitors: dict[str, list] = defaultdict(list)
        self.leavers: dict[str, list] = defaultdict(list)
        for rule in rules:
            for attr in _callback_names(type(rule)):  # type: ignore[arg-type]  # a class is Hashable: python/mypy#11470
                if attr.startswith("visit_"):
                    self.visitors[attr[6:]].append(getattr(rule, attr))
                else:
                    self.leavers[attr[6:]].append(getattr(rule, attr))
        # Whitespace and punctuation are walked only for a rule that visits some of them.
        self.walks_trivia = bool((self.visitors.keys() | self.leavers.keys()) & TRIVIA_NAMES)
        self._kinds: dict[type, tuple[int, tuple, tuple]] = {}
        self._depth = 0  # of the node being visited: the module is at 1
        self._statement_depths = [2]  # per scope: the depth of the statements of its own body

    def _kind(self, cls: type) -> tuple[int, tuple, tuple]:
        kind = 0
        if issubclass(cls, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            kind |= _STATEMENT
        if issubclass(cls, cst.IndentedBlock):
            kind |= _BLOCK
        elif issubclass(cls, cst.FunctionDef):
            kind |= _FUNCTION
        elif issubclass(cls, cst.With):
            kind |= _WITH
        elif issubclass(cls, _COMPREHENSIONS):
            kind |= _COMPREHENSION
        found = (kind, tuple(self.visitors.get(cls.__name__, ())), tuple(self.leavers.get(cls.__name__, ())))
        self._kinds[cls] = found
        return found

    def on_visit(self, node: cst.CSTNode) -> bool:
        cls = type(node)
        kind, visitors, _ = self._kinds.get(cls) or self._kind(cls)
        self._depth += 1
        if self._depth == self._statement_depths[-1] and hasattr(node, "leading_lines"):
            self.ctx.scope_statements[-1] = (node, len(self.ctx.blocks))
        if kind:
            ctx = self.ctx
            if kind & _STATEMENT:
                ctx.statements.append(node)
            if kind & _BLOCK:
                ctx.blocks.append(cast(cst.IndentedBlock, node))  # the kinds: what `_kind` found of its class
            elif kind & _FUNCTION:
                ctx.scopes.append(cast(cst.FunctionDef, node))
                ctx.scope_blocks.append(len(ctx.blocks))
                ctx.scope_statements.append(None)
                self._statement_depths.append(self._depth + 2)  # FunctionDef > IndentedBlock > statement
                ctx.loops.enter_scope()
                ctx.intervals.append(())
                ctx.once.append(())
                ctx.comprehensions.append(())
            elif kind & _COMPREHENSION:
                ctx.comprehensions[-1] = (*ctx.comprehensions[-1], cast(cst.BaseComp, node))
            elif kind & _WITH and self._allows_sync(cast(cst.With, node)):
                ctx.allowed_depth += 1
        try:
            for callback in visitors:
                callback(node)
        except (RecursionError, RuleCrash):
            raise
        except Exception as exc:
            raise RuleCrash(callback, node, exc) from exc
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        cls = type(original_node)
        kind, _, leavers = self._kinds.get(cls) or self._kind(cls)
        try:
            for callback in leavers:
                callback(original_node)
        except (RecursionError, RuleCrash):
            raise
        except Exception as exc:
            raise RuleCrash(callback, original_node, exc) from exc
        self._depth -= 1
        if kind:
            ctx = self.ctx
            if kind & _BLOCK:
                ctx.blocks.pop()
            elif kind & _FUNCTION:
                ctx.scopes.pop()
                ctx.scope_blocks.pop()
                ctx.scope_statements.pop()
                self._statement_depths.pop()
                ctx.loops.leave_scope()
                ctx.intervals.pop()
                ctx.once.pop()
                ctx.comprehensions.pop()
            elif kind & _COMPREHENSION:
                ctx.comprehensions[-1] = ctx.comprehensions[-1][:-1]
            elif kind & _WITH and self._allows_sync(cast(cst.With, original_node)):
                ctx.allowed_depth -= 1
            if kind & _STATEMENT:
                ctx.statements.pop()

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute in LOOP_BODIES.get(type(node), ()):
            self.ctx.loops.enter(node)
        elif type(node) is cst.If and attribute == "body":
            if periodic_guard(node.test, self.ctx.scopes[-1]) is not None:
                self.ctx.intervals[-1] = (*self.ctx.intervals[-1], node)
            if _ends_in_raise(node.body):
                self.ctx.allowed_depth += 1  # `if bad: <describe it>; raise ...`: on the way to an error
            if is_main_guard(node.test):
                self.ctx.once[-1] = (*self.ctx.once[-1], (MAIN_BLOCK, self.ctx.loops.depth()))
            elif memoizes(self.ctx.module, node, self.ctx.per_object()):
                self.ctx.once[-1] = (*self.ctx.once[-1], (first_time_only(node), None))
        elif type(node) in (cst.ExceptHandler, cst.ExceptStarHandler) and attribute == "body":
            self.ctx.once[-1] = (*self.ctx.once[-1], (EXCEPT_BLOCK, None))
        elif attribute in ERROR_PATHS.get(type(node), ()):
            self.ctx.allowed_depth += 1  # reported nowhere, counted in no chain: as `with gpu_sync_allowed():`

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if attribute in LOOP_BODIES.get(type(original_node), ()):
            self.ctx.loops.leave()
        elif type(original_node) is cst.If and attribute == "body":
            if self.ctx.intervals[-1] and self.ctx.intervals[-1][-1] is original_node:
                self.ctx.intervals[-1] = self.ctx.intervals[-1][:-1]
            if _ends_in_raise(original_node.body):
                self.ctx.allowed_depth -= 1
            if is_main_guard(original_node.test) or memoizes(self.ctx.module, original_node, self.ctx.per_object()):
                self.ctx.once[-1] = self.ctx.once[-1][:-1]
        elif type(original_node) in (cst.ExceptHandler, cst.ExceptStarHandler) and attribute == "body":
            self.ctx.once[-1] = self.ctx.once[-1][:-1]
        elif attribute in ERROR_PATHS.get(type(original_node), ()):
            self.ctx.allowed_depth -= 1

    def _allows_sync(self, node: cst.With) -> bool:
        allowed = self.ctx.settings.allow_sync_contexts
        for item in node.items:
            expr = item.item.func if isinstance(item.item, cst.Call) else item.item
            name = dotted_name(expr)
            if name is not None and name.rsplit(".", 1)[-1] in allowed:
                return True
        return False


def _ends_in_raise(body: cst.BaseSuite) -> bool:
    """Whether a block's last statement raises: the block runs only on the way to an error (the
    test that chose it still runs every time, and is checked as usual)."""
    last = statements(body)[-1:]
    if not last:
        return False
    stmt = last[0]
    small = stmt.body[-1] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else stmt
    return isinstance(small, cst.Raise)


def rules_for_text(text: str, rules: list[type[Rule]]) -> list[type[Rule]]:
    """The rules whose prefilter words occur in the text (the cheap test before parsing)."""
    return [
        rule
        for rule in rules
        if not rule.prefilter
        or any(word in text if isinstance(word, str) else word.search(text) for word in rule.prefilter)
    ]


def parse_module(text: str) -> cst.Module:
    """The module's tree (`cst_internals.parse_module_unvalidated`: libcst's parse, a fifth faster)."""
    return parse_module_unvalidated(text)


def check_text(
    text: str, relpath: str, settings: Settings, rules: list[type[Rule]] | None = None, source: SourceText | None = None,
    project: ProjectFile | None = None,
) -> list[Finding]:
    """The findings `settings` shows for decoded source text (raises libcst's ParserSyntaxError on bad syntax)."""
    from synclint.view import visible

    return visible(analyse(text, relpath, settings, rules, project)[0], relpath, settings)[0]


def analyse(
    text: str, relpath: str, settings: Settings, rules: list[type[Rule]] | None = None,
    project: ProjectFile | None = None,
) -> tuple[list[Finding], ModuleSummary | None]:
    """Findings for decoded source text, and the file's summary for the project index.

    The findings are those of every rule (or of `rules`), selected or not, at every confidence,
    in every context and whatever `per-file-ignores` says: the cache keeps them, and the view
    (synclint.view) chooses what a run shows. The rules whose findings make the host wait
    (`Rule.syncs`) run even when `rules` leaves them out, since what a function syncs must not
    depend on which findings a user wants to see.
    """
    enabled = rules if rules is not None else list(settings.rules)
    walked = list(enabled)
    if settings.project_analysis:
        walked += [rule for rule in settings.rules if rule.syncs and rule not in enabled]
    candidates = rules_for_text(text, walked)
    if not candidates:  # not parsed; the names it uses still tell whether private functions run
        return [], private_names_only(project, relpath, text) if settings.project_analysis else None
    module = parse_module(text)
    ctx = FileContext(module, settings, relpath, project)
    instances = [rule(ctx) for rule in candidates]
    recorder = CallRecorder(ctx) if settings.project_analysis else None
    walk(module, BatchedVisitor(ctx, [*instances, *([recorder] if recorder else [])]), attribute_hooks=ATTRIBUTE_HOOKS)
    summary = None
    if recorder is not None:
        locate = functools.partial(_positions, module, text)
        summary = summarize(ctx, recorder, text, relpath, locate)
        ctx.index = ProjectIndex([summary], ctx.project.answers)
        before = len(ctx.reports)
        for instance in instances:
            instance.finish()
        add_late_syncs(ctx, summary, ctx.reports[before:], text, relpath, locate)
    codes = {rule.code for rule in enabled}
    ctx.reports = [(rule, report) for rule, report in ctx.reports if rule.code in codes]
    if not ctx.reports:
        return [], summary
    return _to_findings(ctx, text, relpath), summary


def _to_findings(ctx: FileContext, text: str, relpath: str) -> list[Finding]:
    """Every report as a finding, but those inside `with gpu_sync_allowed():` and those a
    `# noqa` silences; sorted, in the order reported where they share a place (the view keeps
    the first of a code and place that it shows)."""
    reports = [(rule, report) for rule, report in ctx.reports if not report.allowed]
    if not reports:
        return []
    positions = _positions(ctx.module, text, [report for _, report in reports])
    noqa = parse_noqa(text)
    lines = text.splitlines()
    layout = FileLines(text)
    findings: dict[tuple, Finding] = {}  # one per code, place, confidence and context
    for rule, report in reports:
        span = positions[report.node]
        row = span.start.line
        mark = noqa.get(row)
        if mark is not None and mark.silences(rule.code):
            continue
        finding = policy.decided(Finding(
            code=rule.code,
            name=rule.name,
            message=one_line_message(report.message),  # a report line holds it: the code it quotes may span lines
            filename=relpath,
            location=Location(row, span.start.column + 1),
            end_location=Location(span.end.line, span.end.column + 1),
            context=report.context,
            because=one_line_message(report.because),
            fix=_to_fix(ctx.module, positions, report.fix, report.indentation, layout, ctx.settings.fix_line_length)
            if report.fix is not None else None,
            noqa_row=row,
            source_line=lines[row - 1] if row - 1 < len(lines) else "",
            function=ctx.devices.symbols.owner_qualname(report.site.scope),
            evidence=report.evidence,
        ))
        key = (finding.code, row, finding.location.column, finding.end_location, finding.confidence, finding.context)
        findings.setdefault(key, finding)
    return sorted(findings.values(), key=lambda f: f.sort_key)


_NEWLINE = re.compile(r"\r\n?|\n")  # what libcst's position provider counts as a line break


def _positions(module: cst.Module, text: str, reports: list[Report]) -> Mapping[cst.CSTNode, CodeRange]:
    """The positions of the nodes that `reports` name (and their fixes edit).

    libcst's PositionProvider regenerates the whole module's code, recording every node's
    position, and first walks the whole tree for batchable providers it does not have: on
    vLLM's largest file that is more than the rest of the check. A node's position depends
    only on the text before it, so it is enough to regenerate, with positions, a statement
    around the report (`FileContext.anchors`: the statement of the function's body, else
    the function) at the indentation of the blocks around it, and to find where that text
    starts in the file. The text of a statement starts a line; where it starts more than
    one line of the file (the same statement written twice) or a node lies outside it, the
    next anchor is tried, and after the last the whole module is regenerated as before.
    """
    located: dict[int, tuple[Mapping[cst.CSTNode, CodeRange], int] | None] = {}
    positions: dict[cst.CSTNode, CodeRange] = {}
    for report in reports:
        nodes = [report.node]
        if report.fix is not None:
            nodes.extend([report.fix.node, *(node for node, _ in report.fix.more)])
        for anchor, indents in report.anchors:
            if id(anchor) not in located:
                located[id(anchor)] = _positions_in(module, text, anchor, indents)
            found = located[id(anchor)]
            if found is not None and all(node in found[0] for node in nodes):
                computed, shift = found
                for node in nodes:
                    span = computed[node]
                    positions[node] = CodeRange(
                        CodePosition(span.start.line + shift, span.start.column),
                        CodePosition(span.end.line + shift, span.end.column),
                    )
                break
        else:
            return _all_positions(module)
    return positions


def _positions_in(
    module: cst.Module, text: str, anchor: cst.CSTNode, indents: tuple[str, ...]
) -> tuple[Mapping[cst.CSTNode, CodeRange], int] | None:
    """Positions of the nodes in `anchor`, counted from its first line, and the lines before
    that line in `text`; None when its text does not start exactly one line of `text`."""
    computed, code = positions_in(module, anchor, indents)
    start = _only_line_start(text, code)
    if start is None:
        return None
    return computed, len(_NEWLINE.findall(text, 0, start))


def _only_line_start(text: str, code: str) -> int | None:
    """The offset where `code` starts a line of `text`, if it starts exactly one."""
    found = None
    offset = text.find(code)
    while offset != -1:
        before = text[offset - 1] if offset else "\n"
        if before == "\n" or (before == "\r" and not code.startswith("\n")):
            if found is not None:
                return None
            found = offset
        offset = text.find(code, offset + 1)
    return found


def _all_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _to_fix(module: cst.Module, positions, replacement: Replacement, indentation: str, layout: FileLines,
            line_length: int) -> Fix:
    """The fix's edits; where one would make a line longer than `line_length`, it is widened to
    its whole lines and breaks them as a formatter would (`linebreak.fit_edit`)."""
    pairs = [(replacement.node, replacement.new), *replacement.more]
    spans = [(positions[node].start, positions[node].end) for node, _ in pairs]
    edits = []
    for (node, new), (start, end) in zip(pairs, spans):
        if not isinstance(new, str):
            new = _without_carried_parens(node, new)
        content = new if isinstance(new, str) else code_at_indent(module, new, indentation)
        begin, finish = (start.line, start.column), (end.line, end.column)
        others = [span for span in spans if span != (start, end)]
        if not any(s.line <= end.line and e.line >= start.line for s, e in others):  # widened, it must not meet them
            fitted = fit_edit(layout, begin, finish, content, line_length, module.default_indent)
            if fitted is not None:
                begin, finish, content = fitted
        edits.append(Edit(content, Location(begin[0], begin[1] + 1), Location(finish[0], finish[1] + 1)))
    edits.sort(key=lambda e: (e.location.row, e.location.column))
    return Fix(replacement.applicability, replacement.message, tuple(edits), tuple(replacement.imports))


def _without_carried_parens(node: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    """`new` without the parentheses it took over from `node` (`node.with_changes(...)` keeps
    them): a node's position leaves its own parentheses out, so the edit keeps the old ones,
    and the new node's would be written a second time inside them."""
    lpar, rpar = getattr(node, "lpar", ()), getattr(node, "rpar", ())
    if lpar and getattr(new, "lpar", None) == lpar and getattr(new, "rpar", None) == rpar:
        return new.with_changes(lpar=[], rpar=[])
    return new


def problem_finding(code_name: tuple[str, str], relpath: str, message: str, row: int = 1, column: int = 1,
                    line: str = "") -> Finding:
    code, name = code_name
    return policy.decided(Finding(code, name, message, relpath, Location(row, column), Location(row, column + 1),
                                  context="code", noqa_row=row, source_line=line))


def _syntax_error(text: str, relpath: str, exc: cst.ParserSyntaxError) -> Finding:
    """SYNC000 at the place Python itself reports (clearer than the parser's look-ahead position)."""
    import ast

    row, column = max(exc.raw_line, 1), exc.raw_column + 1
    message = exc.message.splitlines()[0].rstrip(".")
    try:
        # Not under its own name: CPython would take the error's line from that file on disk, which
        # for a buffer being edited (the server, --stdin-filename) is not this text.
        ast.parse(text, "<synclint>")
    except SyntaxError as err:
        row, column, message = err.lineno or row, err.offset or column, err.msg
    except (ValueError, RecursionError, MemoryError):
        pass
    lines = text.splitlines()
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    return problem_finding(PARSE_ERROR, relpath, f"syntax error: {message}", row, column, line)


def check_file(path: Path, relpath: str, settings: Settings, debug: bool = False,
               project: ProjectFile | None = None) -> FileResult:
    """Check one file; problems with the file become SYNC000/SYNC001 findings, never exceptions."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(relpath, internal_error=f"{relpath}: cannot read: {exc.strerror or exc}")
    return check_bytes(data, relpath, settings, debug, project)


def check_bytes(data: bytes, relpath: str, settings: Settings, debug: bool = False,
                project: ProjectFile | None = None) -> FileResult:
    """Check a file's bytes (read from disk or from standard input)."""
    result = FileResult(relpath)
    try:
        source = decode(data)
    except DecodeProblem as exc:
        result.findings.append(problem_finding(PARSE_ERROR, relpath, str(exc), exc.row, exc.column))
        return _viewed(result, settings)
    result.source = source
    return check_source(source, relpath, settings, result, debug, project)


def _viewed(result: FileResult, settings: Settings) -> FileResult:
    """The result with its findings as the view shows them, every finding kept in `analysis`."""
    from synclint.view import visible

    result.analysis = result.findings
    result.findings, result.hidden_tests, result.hidden_contexts = visible(result.analysis, result.path, settings)
    return result


def check_source(source: SourceText, relpath: str, settings: Settings, result: FileResult | None = None,
                 debug: bool = False, project: ProjectFile | None = None) -> FileResult:
    """The file's findings as `settings` shows them (`findings`), and all of them (`analysis`)."""
    return _viewed(_analyse_source(source, relpath, settings, result, debug, project), settings)


def _analyse_source(source: SourceText, relpath: str, settings: Settings, result: FileResult | None,
                    debug: bool, project: ProjectFile | None) -> FileResult:
    result = result or FileResult(relpath, source=source)
    problem = too_complex(source.text)
    if problem is not None:  # valid Python too long to analyse: a `# noqa: SYNC000` on its line accepts that
        mark = parse_noqa(source.text).get(problem.row) if problem.message.startswith("expression too long") else None
        if mark is not None and mark.silences(PARSE_ERROR[0]):
            return result
        lines = source.text.splitlines()
        line = lines[problem.row - 1] if 0 < problem.row <= len(lines) else ""
        result.findings.append(problem_finding(PARSE_ERROR, relpath, problem.message, problem.row, problem.column,
                                               line[:200]))
        return result
    try:
        findings, result.summary = analyse(source.text, relpath, settings, project=project)
        result.findings.extend(findings)
    except cst.ParserSyntaxError as exc:
        result.findings.append(_syntax_error(source.text, relpath, exc))
    except RecursionError:
        result.findings.append(
            problem_finding(PARSE_ERROR, relpath, "expression nested too deeply to analyse (recursion limit)")
        )
    except Exception as exc:  # a bug in a rule or in libcst must not end the run
        what = str(exc) if isinstance(exc, RuleCrash) else f"{type(exc).__name__}: {exc}"
        detail = traceback.format_exc() if debug else what
        result.internal_error = f"{relpath}: internal error: {detail}"
        result.findings.append(
            problem_finding(INTERNAL_ERROR, relpath, f"internal error while checking this file: {what}")
        )
    return result
