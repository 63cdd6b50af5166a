"""One file's `ModuleSummary` (see synclint.project.facts), taken from the walk that finds its findings.

`CallRecorder` rides along in the batched traversal and notes, per function, the project
functions it calls, the attributes it reads that may be properties, and the calls whose
results it returns. `summarize` adds what the rules reported (the first place each function
makes the host wait) and what the device model knows (returns, class attributes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from synclint.devices.lattice import Place, Where, is_sure_host
from synclint.devices.model import DeviceModel
from synclint.evidence import Basis, Certainty
from synclint.noqa import parse_noqa
from synclint.patterns import one_line
from synclint.project.facts import ClassSummary, FunctionSummary, ModuleSummary, Needs, SyncSite, short_name
from synclint.project.callgraph import GraphRecorder
from synclint.project.index import resolve_in
from synclint.syntax import child_blocks, dotted_name, is_dataclass, is_property, memoizes, statements
from synclint.traversal import children

_ATTRIBUTE_NAMES = re.compile(r"\.\s*([A-Za-z_]\w*)")
MAX_DEPENDS = 8  # terms kept per value (SyncSite.depends): enough to name its sources, bounded
MAX_SYNCS_IF = 4  # of a function's syncs below its surest, those kept in its summary
_DEPRECATED_TEXT = 160  # characters of a deprecation message kept for reports


class CallRecorder:
    """Visits calls and attribute reads for the summary (not a rule: it reports nothing)."""

    code = "summary"  # how a crash in it is named

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.devices: DeviceModel = ctx.devices
        self.calls: dict[str, list[str]] = {}  # function qualname -> callees, in order
        self.reads: dict[str, list[str]] = {}
        self.returns: dict[str, list[str | None]] = {}  # per `return`: the callee, None if not a call
        self.classes_named: set[str] = set()  # receiver classes from annotations
        self.generators: set[int] = set()  # id() of functions holding a `yield`
        self.device_args: dict[str, dict[str, dict[int | str, Where]]] = {}  # caller -> callee -> GPU arguments
        self.passes: dict[str, dict[str, dict[int | str, tuple[str, ...]]]] = {}  # caller -> callee -> FunctionSummary.passes
        self.repeated: set[str] = set()  # callees and reads in a loop or a per-step method
        self.once: dict[str, dict[str, bool]] = {}  # caller -> callee -> whether each of its calls is in once-code
        self.keyword_args: dict[tuple[str, str], tuple[str | None, bool]] = {}  # see ModuleSummary.keyword_args
        self.valued: set[str] = set()  # callees whose result is used
        self.depends = Dependencies(self.devices)
        self.graph = GraphRecorder(ctx)

    def owner(self) -> str | None:
        """The summarised function holding the node: nested functions count as their enclosing one."""
        for scope in reversed(self.ctx.scopes):
            if isinstance(scope, cst.FunctionDef):
                qual = self.devices.symbols.function_qualname(scope)
                if qual is not None:
                    return qual
        return None

    def visit_Call(self, node: cst.Call) -> None:
        owner = self.owner()
        self.graph.visit_call(node, owner)
        if owner is None:
            return
        wheres: dict[int, Where] = {}  # each argument evaluated once, for both notes

        def where_of(arg: cst.Arg) -> Where:
            if id(arg) not in wheres:
                wheres[id(arg)] = self.ctx.where(arg.value)
            return wheres[id(arg)]

        self._note_keyword_args(node, where_of)
        callee = self.devices.symbols.callee_qualname(node.func, self.ctx.scopes[-1])
        if callee is not None:
            self.calls.setdefault(owner, []).append(callee)
            once = self.once.setdefault(owner, {})
            once[callee] = once.get(callee, True) and self.ctx.set_up_here()
            self._note_device_args(owner, callee, node, where_of)
            if self.ctx.may_repeat():
                self.repeated.add(callee)
            statement = self.ctx.statements[-1] if self.ctx.statements else None
            if not (isinstance(statement, cst.Expr) and statement.value is node):
                self.valued.add(callee)

    def _note_device_args(self, owner: str, callee: str, node: cst.Call, where_of) -> None:
        """The GPU tensors this call passes: the callee's parameters learn where they live from them."""
        for position, arg in enumerate(node.args):
            if arg.star:
                return  # positions after `*args` are unknown
            where = where_of(arg)
            key: int | str = arg.keyword.value if arg.keyword is not None else position
            if not where.on_device or where.certainty < Certainty.MEDIUM:
                if not where.on_host and not where.is_module:
                    # Not known here: what it comes from may be (a caller's GPU tensor, a helper's result).
                    depends = self.depends.of(self.ctx.scopes[-1], arg.value)
                    if depends:
                        self.passes.setdefault(owner, {}).setdefault(callee, {})[key] = depends
                continue
            passed = self.device_args.setdefault(owner, {}).setdefault(callee, {})
            known = passed.get(key)
            if known is None or where.certainty > known.certainty:
                text = one_line(self.ctx.module.code_for_node(arg.value), 40)
                because = f"{short_name(owner)}() passes `{text}` here" + (f" ({where.because})" if where.because else "")
                passed[key] = Where(Place.DEVICE, where.certainty, because, basis=Basis.CALLER)

    def _note_keyword_args(self, node: cst.Call, where_of) -> None:
        """What this call passes by keyword to a function of the project, or to a method of an
        object of unknown class (`self.model.embed_input_ids(..., is_multimodal=mask)`): a host
        tensor the code proves, or a GPU tensor it proves (a library's functions are left out)."""
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name is None or all(arg.keyword is None for arg in node.args):
            return
        qual = self.devices.symbols.qualname(func)
        top = self.ctx.project.module.partition(".")[0]
        if qual is not None and not (top and qual.startswith(top + ".")):
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            where = where_of(arg)
            key = (name, arg.keyword.value)
            example, device_seen = self.keyword_args.get(key, (None, False))
            if where.on_device and where.certainty is Certainty.HIGH:
                self.keyword_args[key] = (example, True)
            elif example is None and is_sure_host(where):
                text = one_line(self.ctx.module.code_for_node(arg.value), 40)
                self.keyword_args[key] = (f"`{text}` in {short_name(self.owner() or self.ctx.project.module)}()", device_seen)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not isinstance(node.value, cst.Name):
            return
        owner = self.owner()
        if owner is None:
            return
        cls = self.devices.symbols.receiver_class(node.value, self.ctx.scopes[-1])
        if cls is not None:
            read = f"{cls}.{node.attr.value}"
            self.reads.setdefault(owner, []).append(read)
            self.valued.add(read)
            if self.ctx.may_repeat():
                self.repeated.add(read)
            if node.value.value not in ("self", "cls"):
                self.classes_named.add(cls)

    def visit_Yield(self, node: cst.Yield) -> None:
        func = self.ctx.current_function()
        if func is not None:
            self.generators.add(id(func))

    def visit_Return(self, node: cst.Return) -> None:
        owner = self.owner()
        if owner is None or node.value is None or self.ctx.current_function() is None:
            return
        if self.devices.symbols.function_qualname(self.ctx.current_function()) != owner:
            return  # a nested function's return is not its enclosing function's
        callee = None
        if isinstance(node.value, cst.Call):
            callee = self.devices.symbols.callee_qualname(node.value.func, self.ctx.scopes[-1])
        self.returns.setdefault(owner, []).append(callee)


def summarize(ctx, recorder: CallRecorder, text: str, relpath: str, positions) -> ModuleSummary:
    """The summary of the file `ctx` walked. `positions(reports)` locates reports (engine._positions)."""
    devices = ctx.devices
    summary = ModuleSummary(ctx.project.module, relpath)
    for func, cls in _functions(devices):
        qual = devices.symbols.function_qualname(func)
        if qual is None:
            continue
        getter = is_property(func)
        params, positional = _call_parameters(func, cls)
        summary.functions[qual] = FunctionSummary(
            qualname=qual,
            path=relpath,
            row=0,  # filled below for the functions a report may name
            is_property=getter,
            deprecated=_deprecation(func) if getter else None,
            calls=tuple(dict.fromkeys(recorder.calls.get(qual, ()))),
            calls_once=tuple(sorted(callee for callee, once in recorder.once.get(qual, {}).items() if once)),
            **recorder.graph.facts(qual, func),
            reads=tuple(dict.fromkeys(recorder.reads.get(qual, ()))),
            params=params,
            positional=positional,
            device_args=recorder.device_args.get(qual, {}),
            passes=recorder.passes.get(qual, {}),
        )
    _add_syncs(ctx, summary, text, relpath, positions, recorder.depends)
    _add_weak_params(ctx, summary)
    _add_returns(devices, recorder, summary)
    for cls in devices.symbols.classes.values():
        qual = devices.symbols.qualify_local(cls.name.value)
        bases = tuple(b for b in (devices.symbols.class_qualname(base.value) for base in cls.bases) if b)
        # Tensors it keeps in `self`, and devices (a subclass elsewhere makes tensors on `self._device`).
        attrs = {name: where for name, where in devices.class_attrs(cls).items() if where.is_tensor or where.spec}
        summary.classes[qual] = ClassSummary(qual, relpath, 0, bases, attrs, _fields(ctx, cls))
    _fill_rows(ctx, summary, text)
    own = summary.functions.keys() | summary.classes.keys()
    calls = {c for f in summary.functions.values() for c in (*f.calls, *f.reads, *f.returns_calls)} - own
    classes = {b for c in summary.classes.values() for b in c.bases} | recorder.classes_named
    summary.keyword_args = recorder.keyword_args
    recorder.graph.add_module_facts(summary, text)
    summary.needs = Needs(frozenset(calls), frozenset(classes - own), frozenset(_ATTRIBUTE_NAMES.findall(text)),
                          frozenset(_chain_calls(summary, recorder.repeated) & calls),
                          frozenset((recorder.valued | {c for f in summary.functions.values() for c in f.returns_calls})
                                    & calls))
    return summary


def _chain_calls(summary: ModuleSummary, repeated: set[str]) -> set[str]:
    """The callees whose chain to a sync can reach a finding of this file (SYNC112): those
    called in a loop or a per-step method, and every callee of the file's own functions that
    such a call reaches, through the file's own calls."""
    resolved: dict[str, str | None] = {}
    needed = set(repeated)
    pending = [target for name in repeated if (target := resolve_in(summary.functions, summary.classes, name, resolved))]
    seen = set(pending)
    while pending:
        func = summary.functions[pending.pop()]
        for name in (*func.calls, *func.reads):
            needed.add(name)
            target = resolve_in(summary.functions, summary.classes, name, resolved)
            if target is not None and target not in seen:
                seen.add(target)
                pending.append(target)
    return needed


def add_late_syncs(ctx, summary: ModuleSummary, reports, text: str, relpath: str, positions) -> None:
    """Syncs reported after the walk (a read of another file's syncing property on a value of
    unknown class) count too, for functions the index has no chain for yet: a chain through
    the property, where the index can follow it, says more than the read."""
    index = ctx.index
    late = [(rule, report) for rule, report in reports
            if (owner := ctx.devices.symbols.owner_qualname(report.site.scope)) is None or owner not in index.chains]
    _add_syncs(ctx, summary, text, relpath, positions, Dependencies(ctx.devices), late)


def _functions(devices: DeviceModel) -> Iterator[tuple[cst.FunctionDef, cst.ClassDef | None]]:
    for func in devices.symbols.functions.values():
        yield func, None
    for cls in devices.symbols.classes.values():
        for stmt in statements(cls.body):
            if isinstance(stmt, cst.FunctionDef):
                yield stmt, cls


def _call_parameters(func: cst.FunctionDef, cls: cst.ClassDef | None) -> tuple[tuple[str, ...], int]:
    """The parameter names a call fills by position (a method's `self` or `cls` left out), then
    the keyword-only ones; and how many are positional."""
    params = func.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    static = any((dotted_name(d.decorator) or "").endswith("staticmethod") for d in func.decorators)
    if cls is not None and positional and not static:
        positional = positional[1:]
    return (*positional, *(p.name.value for p in params.kwonly_params)), len(positional)


def _add_syncs(ctx, summary: ModuleSummary, text: str, relpath: str, positions, depends: "Dependencies",
               reports=None) -> None:
    """The surest sync each function's own body holds (the first, among equals), skipping
    silenced ones; and the syncs below high that other files' facts may make surer than it."""
    candidates = []
    for rule, report in ctx.reports if reports is None else reports:
        if not rule.syncs or report.allowed:
            continue
        owner = ctx.devices.symbols.owner_qualname(report.site.scope)
        if owner is not None and owner in summary.functions:
            candidates.append((owner, rule, report))
    if not candidates:
        return
    located = positions([report for _, _, report in candidates])
    noqa = parse_noqa(text)
    found: dict[str, list[SyncSite]] = {}
    # The surest sync of each function, the first of those: a caller's finding is as sure as it.
    for owner, rule, report in sorted(candidates, key=lambda c: (-c[2].certainty, located[c[2].node].start.line)):
        row = located[report.node].start.line
        mark = noqa.get(row)
        if mark is not None and mark.silences(rule.code):
            continue
        code = ctx.module.code_for_node(report.node)
        if isinstance(report.node, cst.Name) and (quoted := _quoted_expression(report.message)) is not None:
            code = quoted  # reported at a method's name (`.to`, where a chain copies): the call its message quotes
        scope = report.site.scope
        once = None
        cls = ctx.devices.symbols.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
        # A property that caches in `self` still syncs once per object: per step for metadata
        # objects; an nn.Module lives as long as the model, so its cached property syncs once.
        if isinstance(scope, cst.FunctionDef) and (not is_property(scope) or ctx.devices.symbols.is_module_class(cls)):
            once = _memoizing_guard(ctx.module, scope, report.node, is_dataclass(cls))
        # A sync that fills a cache runs the first time only: no per-step cost to callers.
        confidence = Certainty.LOW if once is not None else report.certainty
        came_from = depends.of(scope, report.node) if once is None and confidence < Certainty.HIGH else ()
        flag = _flag_guard(scope, report.node) if isinstance(scope, cst.FunctionDef) else None
        found.setdefault(owner, []).append(
            SyncSite(rule.code, one_line(code, 60), relpath, row, confidence, once, came_from, *(flag or (None, None, False))))
    for owner, sites in found.items():
        func = summary.functions[owner]
        known = [site for site in (func.sync, *func.syncs_if) if site is not None]
        ranked = sorted(dict.fromkeys([*known, *sites]), key=SyncSite.rank)
        func.sync = ranked[0]
        func.syncs_if = tuple(sorted((site for site in ranked[1:] if site.depends), key=lambda site: site.row)
                              )[:MAX_SYNCS_IF]


def _quoted_expression(message: str) -> str | None:
    """The expression a finding's message opens with (`` `host.to("cuda")` copies ...``), if it does."""
    if message.startswith("`"):
        end = message.find("`", 1)
        if end > 1:
            return message[1:end]
    return None


def _memoizing_guard(module: cst.Module, func: cst.FunctionDef, node: cst.CSTNode, per_object: bool) -> str | None:
    """The test of an `if` around `node` in `func` that computes a value once and keeps it:
    `if self._t is None: self._t = ...`, `if key not in cache: cache[key] = ...`,
    `if not hasattr(obj, "x"): obj.x = ...` (`node` in its body). With `per_object` (a
    dataclass: a record made per step), a value kept in `self` is not kept across steps."""
    found: list[cst.If] = []  # the `if`s whose body holds `node`, innermost first

    def search(parent: cst.CSTNode) -> bool:
        for child in children(parent):
            if child is node or search(child):
                if isinstance(parent, cst.If) and child is parent.body:
                    found.append(parent)
                return True
        return False

    search(func.body)
    for guard in found:
        if memoizes(module, guard, per_object):
            return module.code_for_node(guard.test)
    return None


def _flag_guard(func: cst.FunctionDef, node: cst.CSTNode) -> tuple[str, int | None, bool] | None:
    """The parameter of `func` that the innermost `if` holding `node` in its body tests for truth
    (`if strict:`, `if validate and x.numel():`), with its position among the parameters a call
    fills by position (None: keyword-only) and whether its default is false (`strict=False`)."""
    innermost: list[cst.If] = []

    def search(parent: cst.CSTNode) -> bool:
        for child in children(parent):
            if child is node or search(child):
                if isinstance(parent, cst.If) and child is parent.body and not innermost:
                    innermost.append(parent)
                return True
        return False

    search(func.body)
    if not innermost:
        return None
    names = [part.value for part in _conjuncts(innermost[0].test) if isinstance(part, cst.Name)]
    positional = [p for p in (*func.params.posonly_params, *func.params.params) if p.name.value not in ("self", "cls")]
    for index, param in enumerate((*positional, *func.params.kwonly_params)):
        if param.name.value in names:
            default = param.default
            off = isinstance(default, cst.Name) and default.value in ("False", "None") or (
                isinstance(default, cst.Integer) and default.evaluated_value == 0)
            return param.name.value, index if index < len(positional) else None, off
    return None


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _add_weak_params(ctx, summary: ModuleSummary) -> None:
    """Parameters a caller's GPU tensor would make surer, of functions that report a sync not
    proven on the device (the only ones a caller's fact can change), and those a function passes
    on to project functions (a caller's fact reaches the functions it calls). Taken from the
    function's own evidence, so that what callers pass does not change them."""
    unsure = {owner for rule, report in ctx.reports
              if rule.syncs and report.certainty < Certainty.HIGH
              and (owner := ctx.devices.symbols.owner_qualname(report.site.scope)) is not None}
    for func, _ in _functions(ctx.devices):
        qual = ctx.devices.symbols.function_qualname(func)
        item = summary.functions.get(qual or "")
        if item is None:
            continue
        passed_on = {term[len("param:"):] for args in item.passes.values() for terms in args.values()
                     for term in terms if term.startswith("param:")}
        if qual not in unsure and not passed_on:
            continue
        weak = frozenset(ctx.devices.facts(func).weak_params)
        if qual in unsure:
            item.weak_params = weak
        item.relayed = weak & passed_on


class Dependencies:
    """What a value of a function may come from beyond its file's own evidence: the project
    functions whose results flow into it (`call:pkg.mod.f`) and the parameters of the function
    it reads (`param:x`), followed through the function's own assignments (SyncSite.depends).
    A syntactic fact of the file alone: the index answers it once it has solved the project."""

    def __init__(self, devices: DeviceModel) -> None:
        self.devices = devices
        self._node_parts: dict[tuple[int, int], tuple[cst.CSTNode, list[tuple[str | None, str]]]] = {}

    def of(self, scope, node: cst.CSTNode) -> tuple[str, ...]:
        if not isinstance(scope, cst.FunctionDef) or self.devices.symbols.function_qualname(scope) is None:
            return ()
        assigned = self.devices.local_values(scope)
        params = scope.params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)} - {"self", "cls"}
        found: set[str] = set()
        seen: set[str] = set()
        pending: list[cst.CSTNode] = [node]
        while pending and len(found) < 4 * MAX_DEPENDS:
            for callee, name in self._parts(scope, pending.pop()):
                if callee is not None:
                    found.add(f"call:{callee}")
                elif name not in seen:
                    seen.add(name)
                    if name in names:
                        found.add(f"param:{name}")
                    pending.extend(value for value in assigned.get(name, ()) if value is not None)
        return tuple(sorted(found)[:MAX_DEPENDS])

    def _parts(self, scope: cst.FunctionDef, node: cst.CSTNode) -> list[tuple[str | None, str]]:
        """What `node`'s value may come from, in `_value_parts` order: (callee, "") for a call of a
        project function, (None, name) for a name read; kept per node (an assigned value is
        followed from every value of its function that reads the name)."""
        known = self._node_parts.get((id(scope), id(node)))
        if known is not None and known[0] is node:
            return known[1]
        parts: list[tuple[str | None, str]] = []
        for part in _value_parts(node):
            if isinstance(part, cst.Call):
                callee = self.devices.symbols.callee_qualname(part.func, scope)
                if callee is not None:
                    parts.append((callee, ""))
            elif isinstance(part, cst.Name):
                parts.append((None, part.value))
        self._node_parts[(id(scope), id(node))] = (node, parts)  # (the scope is kept by the device model)
        return parts


def _value_parts(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes of an expression that its value may come from: not attribute or keyword names,
    nor what nested functions and lambdas hold."""
    stack = [node]
    while stack:
        part = stack.pop()
        yield part
        if isinstance(part, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(part, cst.Attribute):
            stack.append(part.value)
        elif isinstance(part, cst.Arg):
            stack.append(part.value)
        else:
            stack.extend(children(part))


def _add_returns(devices: DeviceModel, recorder: CallRecorder, summary: ModuleSummary) -> None:
    """Tensor results known from the body itself; else the calls whose results are returned."""
    for func, _ in _functions(devices):
        qual = devices.symbols.function_qualname(func)
        if qual is None or qual not in summary.functions or id(func) in recorder.generators:
            continue
        returned = recorder.returns.get(qual)
        if not returned:
            continue
        where = devices.returns_of(func)
        # A tensor of unknown device (low) too: a caller that passes GPU tensors learns more of it.
        if where.is_tensor:
            summary.functions[qual].returns = where
        elif where.place is Place.UNKNOWN and all(callee is not None for callee in returned):
            summary.functions[qual].returns_calls = tuple(dict.fromkeys(c for c in returned if c))


def _fields(ctx, cls: cst.ClassDef) -> frozenset[str]:
    """Attributes stored as data: `self.x = ...` in a method, or a class-level annotation."""
    names = set(ctx.attribute_assignments(cls))
    for stmt in statements(cls.body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.AnnAssign, cst.Assign)):
                    targets = [small.target] if isinstance(small, cst.AnnAssign) else [t.target for t in small.targets]
                    names.update(t.value for t in targets if isinstance(t, cst.Name))
    return frozenset(names)


def _deprecation(func: cst.FunctionDef) -> str | None:
    """The message of an `@deprecated("...")` decorator (typing_extensions, warnings)."""
    for dec in func.decorators:
        call = dec.decorator
        if isinstance(call, cst.Call) and (dotted_name(call.func) or "").rsplit(".", 1)[-1] == "deprecated":
            if call.args and isinstance(call.args[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                value = call.args[0].value.evaluated_value
                if isinstance(value, str):
                    text = " ".join(value.split())
                    return text if len(text) <= _DEPRECATED_TEXT else text[: _DEPRECATED_TEXT - 3] + "..."
            return "deprecated"
    return None


_DEF_LINE = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)  # a `def` line and its name


def _fill_rows(ctx, summary: ModuleSummary, text: str) -> None:
    """Rows of the definitions a report may name (properties, functions that sync or return
    tensors). The k-th `def name` line of the text is the k-th definition called `name` in
    the tree (in source order); where the counts differ (a `def` line inside a string), the
    row stays 0 rather than regenerating the code to find it."""
    wanted: dict[str, list[tuple[cst.FunctionDef, FunctionSummary]]] = {}
    devices = ctx.devices
    for func, _ in _functions(devices):
        item = summary.functions.get(devices.symbols.function_qualname(func) or "")
        if item is not None and (item.is_property or item.sync or item.returns):
            wanted.setdefault(func.name.value, []).append((func, item))
    if not wanted:
        return
    in_order: dict[str, list[cst.FunctionDef]] = {}
    for func in _definitions(ctx.module.body):
        if func.name.value in wanted:
            in_order.setdefault(func.name.value, []).append(func)
    rows_of: dict[str, list[int]] = {}
    row, offset = 1, 0
    for match in _DEF_LINE.finditer(text):  # one scan of the text, counting its rows as it goes
        row += text.count("\n", offset, match.start())
        offset = match.start()
        if match.group(1) in wanted:
            rows_of.setdefault(match.group(1), []).append(row)
    for name, items in wanted.items():
        rows = rows_of.get(name, [])
        defs = in_order.get(name, [])
        if len(rows) != len(defs):
            continue
        row_of = {id(func): row for func, row in zip(defs, rows)}
        for func, item in items:
            item.row = row_of.get(id(func), 0)


def _definitions(body) -> Iterator[cst.FunctionDef]:
    """Every function definition, nested ones included, in source order."""
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt
            yield from _definitions(statements(stmt.body))
        elif isinstance(stmt, cst.ClassDef):
            yield from _definitions(statements(stmt.body))
        elif isinstance(stmt, cst.BaseCompoundStatement):
            for block in child_blocks(stmt):
                yield from _definitions(block)
