"""Checking one file: decode, prefilter, parse, one batched traversal of all rules, filter.

Positions are resolved only for files that have findings: libcst's PositionProvider
regenerates the whole file's code, which costs as much as a second parse.
"""

from __future__ import annotations

import fnmatch
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.config import Settings
from synclint.devices import DeviceModel, NameConventions, Where, dotted_name, is_host_code_path
from synclint.model import Confidence, Edit, Finding, Fix, Location
from synclint.noqa import parse_noqa
from synclint.rule import Replacement, Report, Rule
from synclint.source import DecodeProblem, SourceText, decode, too_complex

PARSE_ERROR = ("SYNC000", "parse-error")
INTERNAL_ERROR = ("SYNC001", "internal-error")

INIT_FUNCTIONS = ("__init__", "__post_init__", "load_weights", "load_model", "_init_*", "init_*", "initialize*",
                  "setup*", "_setup*", "warmup*", "_warmup*", "profile_run", "capture_model", "_dummy_*", "dummy_*",
                  "build_model", "create_weights", "process_weights_after_loading")
STEP_FUNCTIONS = ("forward", "__call__", "step", "*_step", "execute_model", "sample", "sample_tokens", "*prepare_inputs",
                  "_preprocess", "postprocess", "*update_states", "propose", "compute_logits", "build", "apply")


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    internal_error: str | None = None  # a rule crashed: the run ends with exit 2
    source: SourceText | None = None


def is_test_path(relpath: str) -> bool:
    name = relpath.rsplit("/", 1)[-1]
    parts = relpath.split("/")
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
    )


class FileContext:
    """What the rules of one file share: the tree, the device model, the traversal state."""

    def __init__(self, module: cst.Module, settings: Settings, relpath: str) -> None:
        self.module = module
        self.settings = settings
        self.relpath = relpath
        conventions = NameConventions()
        if settings.host_name_patterns is not None or settings.device_name_patterns is not None:
            conventions = NameConventions(
                host=settings.host_name_patterns if settings.host_name_patterns is not None else conventions.host,
                device=settings.device_name_patterns if settings.device_name_patterns is not None else conventions.device,
            )
        self.devices = DeviceModel(module, conventions, host_code=is_host_code_path(relpath))
        self.reports: list[tuple[Rule, Report]] = []
        self.in_test_file = is_test_path(relpath)
        # Traversal state, kept by the batched visitor.
        self.scopes: list[cst.Module | cst.FunctionDef] = [module]
        self.statements: list[cst.CSTNode] = []
        self.loop_depth: list[int] = [0]
        self.allowed_depth = 0
        self.blocks: list[cst.IndentedBlock] = []

    def indentation(self) -> str:
        """The leading whitespace of the statement being visited (for fixes that span lines)."""
        default = self.module.default_indent
        return "".join(default if block.indent is None else block.indent for block in self.blocks)

    def where(self, expr: cst.BaseExpression) -> Where:
        stmt = self.statements[-1] if self.statements else None
        return self.devices.where(expr, self.scopes[-1], stmt)

    def current_function(self) -> cst.FunctionDef | None:
        scope = self.scopes[-1]
        return scope if isinstance(scope, cst.FunctionDef) else None

    def context(self) -> str:
        names = [s.name.value for s in self.scopes if isinstance(s, cst.FunctionDef)]
        if self.in_test_file or any(n.startswith("test") for n in names):
            return "test"
        if any(fnmatch.fnmatchcase(n, pat) for n in names for pat in INIT_FUNCTIONS):
            return "init"
        if self.loop_depth[-1] > 0:
            return "loop"
        if names and any(fnmatch.fnmatchcase(names[-1], pat) for pat in STEP_FUNCTIONS):
            return "step"
        return "code"

    def add_report(self, rule: Rule, node, message, confidence, because, fix) -> None:
        report = Report(node, message, confidence, because, fix, self.context(), self.allowed_depth > 0,
                        self.indentation())
        self.reports.append((rule, report))


LOOP_BODIES = {
    cst.For: ("body",),
    cst.While: ("body",),
    cst.ListComp: ("elt",),
    cst.SetComp: ("elt",),
    cst.GeneratorExp: ("elt",),
    cst.DictComp: ("key", "value"),
    cst.CompFor: ("ifs",),
}


class BatchedVisitor(cst.CSTVisitor):
    """Calls every enabled rule's visit_/leave_ methods in a single walk of the tree."""

    def __init__(self, ctx: FileContext, rules: list[Rule]) -> None:
        super().__init__()
        self.ctx = ctx
        self.visitors: dict[str, list] = defaultdict(list)
        self.leavers: dict[str, list] = defaultdict(list)
        for rule in rules:
            for attr in dir(type(rule)):
                if attr.startswith("visit_") and attr.count("_") == 1:
                    self.visitors[attr[6:]].append(getattr(rule, attr))
                elif attr.startswith("leave_") and attr.count("_") == 1:
                    self.leavers[attr[6:]].append(getattr(rule, attr))

    def on_visit(self, node: cst.CSTNode) -> bool:
        ctx = self.ctx
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            ctx.statements.append(node)
        if isinstance(node, cst.IndentedBlock):
            ctx.blocks.append(node)
        elif isinstance(node, cst.FunctionDef):
            ctx.scopes.append(node)
            ctx.loop_depth.append(0)
        elif isinstance(node, cst.With) and self._allows_sync(node):
            ctx.allowed_depth += 1
        for callback in self.visitors.get(type(node).__name__, ()):
            callback(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        ctx = self.ctx
        for callback in self.leavers.get(type(original_node).__name__, ()):
            callback(original_node)
        if isinstance(original_node, cst.IndentedBlock):
            ctx.blocks.pop()
        elif isinstance(original_node, cst.FunctionDef):
            ctx.scopes.pop()
            ctx.loop_depth.pop()
        elif isinstance(original_node, cst.With) and self._allows_sync(original_node):
            ctx.allowed_depth -= 1
        if isinstance(original_node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            ctx.statements.pop()

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if attribute in LOOP_BODIES.get(type(node), ()):
            self.ctx.loop_depth[-1] += 1

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        if attribute in LOOP_BODIES.get(type(original_node), ()):
            self.ctx.loop_depth[-1] -= 1

    def _allows_sync(self, node: cst.With) -> bool:
        allowed = self.ctx.settings.allow_sync_contexts
        for item in node.items:
            expr = item.item.func if isinstance(item.item, cst.Call) else item.item
            name = dotted_name(expr)
            if name is not None and name.rsplit(".", 1)[-1] in allowed:
                return True
        return False


def rules_for_text(text: str, rules: list[type[Rule]]) -> list[type[Rule]]:
    """The rules whose prefilter words occur in the text (the cheap test before parsing)."""
    return [rule for rule in rules if not rule.prefilter or any(word in text for word in rule.prefilter)]


def check_text(
    text: str, relpath: str, settings: Settings, rules: list[type[Rule]] | None = None, source: SourceText | None = None
) -> list[Finding]:
    """Findings for decoded source text (raises libcst's ParserSyntaxError on bad syntax)."""
    candidates = rules_for_text(text, rules if rules is not None else settings.enabled_rules())
    if not candidates:
        return []
    module = cst.parse_module(text)
    ctx = FileContext(module, settings, relpath)
    instances = [rule(ctx) for rule in candidates]
    module.visit(BatchedVisitor(ctx, instances))
    if not ctx.reports:
        return []
    return _to_findings(ctx, text, relpath, settings)


def _to_findings(ctx: FileContext, text: str, relpath: str, settings: Settings) -> list[Finding]:
    positions = MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve(PositionProvider)
    noqa = parse_noqa(text)
    ignored_here = settings.ignored_in_file(relpath)
    lines = text.splitlines()
    findings: dict[tuple, Finding] = {}
    for rule, report in ctx.reports:
        if report.allowed or report.confidence < settings.min_confidence:
            continue
        if report.context in settings.ignore_contexts:
            continue
        if any(rule.code.startswith(prefix) for prefix in ignored_here):
            continue
        span = positions[report.node]
        row = span.start.line
        mark = noqa.get(row)
        if mark is not None and mark.silences(rule.code):
            continue
        finding = Finding(
            code=rule.code,
            name=rule.name,
            message=report.message,
            filename=relpath,
            location=Location(row, span.start.column + 1),
            end_location=Location(span.end.line, span.end.column + 1),
            confidence=report.confidence,
            context=report.context,
            because=report.because,
            fix=_to_fix(ctx.module, positions, report.fix, report.indentation) if report.fix is not None else None,
            noqa_row=row,
            source_line=lines[row - 1] if row - 1 < len(lines) else "",
        )
        key = (finding.code, row, finding.location.column, finding.end_location)
        findings.setdefault(key, finding)
    return sorted(findings.values(), key=lambda f: f.sort_key)


def render_node(module: cst.Module, node: cst.CSTNode, indentation: str) -> str:
    """Source of `node` inside a statement at `indentation`.

    `Module.code_for_node` renders a node as if at the top level, so a call continued on further
    lines inside brackets would lose the enclosing blocks' indentation; this keeps it.
    """
    from libcst._nodes.internal import CodegenState  # the state code_for_node itself uses

    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.append(indentation)
    node._codegen(state)
    return "".join(state.tokens)


def _to_fix(module: cst.Module, positions, replacement: Replacement, indentation: str) -> Fix:
    edits = []
    for node, new in [(replacement.node, replacement.new), *replacement.more]:
        span = positions[node]
        content = new if isinstance(new, str) else render_node(module, new, indentation)
        edits.append(
            Edit(content, Location(span.start.line, span.start.column + 1), Location(span.end.line, span.end.column + 1))
        )
    edits.sort(key=lambda e: (e.location.row, e.location.column))
    return Fix(replacement.applicability, replacement.message, tuple(edits), tuple(replacement.imports))


def problem_finding(code_name: tuple[str, str], relpath: str, message: str, row: int = 1, column: int = 1,
                    line: str = "") -> Finding:
    code, name = code_name
    return Finding(code, name, message, relpath, Location(row, column), Location(row, column + 1),
                   Confidence.HIGH, "code", None, None, row, line)


def _syntax_error(text: str, relpath: str, exc: cst.ParserSyntaxError) -> Finding:
    """SYNC000 at the place Python itself reports (clearer than the parser's look-ahead position)."""
    import ast

    row, column = max(exc.raw_line, 1), exc.raw_column + 1
    message = exc.message.splitlines()[0].rstrip(".")
    try:
        ast.parse(text, relpath)
    except SyntaxError as err:
        row, column, message = err.lineno or row, err.offset or column, err.msg
    except (ValueError, RecursionError, MemoryError):
        pass
    lines = text.splitlines()
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    return problem_finding(PARSE_ERROR, relpath, f"syntax error: {message}", row, column, line)


def check_file(path: Path, relpath: str, settings: Settings, debug: bool = False) -> FileResult:
    """Check one file; problems with the file become SYNC000/SYNC001 findings, never exceptions."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(relpath, internal_error=f"{relpath}: cannot read: {exc.strerror or exc}")
    return check_bytes(data, relpath, settings, debug)


def check_bytes(data: bytes, relpath: str, settings: Settings, debug: bool = False) -> FileResult:
    """Check a file's bytes (read from disk or from standard input)."""
    result = FileResult(relpath)
    try:
        source = decode(data)
    except DecodeProblem as exc:
        result.findings.append(problem_finding(PARSE_ERROR, relpath, str(exc), exc.row, exc.column))
        return result
    result.source = source
    return check_source(source, relpath, settings, result, debug)


def check_source(source: SourceText, relpath: str, settings: Settings, result: FileResult | None = None,
                 debug: bool = False) -> FileResult:
    result = result or FileResult(relpath, source=source)
    problem = too_complex(source.text)
    if problem is not None:
        lines = source.text.splitlines()
        line = lines[problem.row - 1] if 0 < problem.row <= len(lines) else ""
        result.findings.append(problem_finding(PARSE_ERROR, relpath, problem.message, problem.row, problem.column,
                                               line[:200]))
        return result
    try:
        result.findings.extend(check_text(source.text, relpath, settings, source=source))
    except cst.ParserSyntaxError as exc:
        result.findings.append(_syntax_error(source.text, relpath, exc))
    except RecursionError:
        result.findings.append(
            problem_finding(PARSE_ERROR, relpath, "expression nested too deeply to analyse (recursion limit)")
        )
    except Exception as exc:  # a bug in a rule or in libcst must not end the run
        detail = traceback.format_exc() if debug else f"{type(exc).__name__}: {exc}"
        result.internal_error = f"{relpath}: internal error: {detail}"
        result.findings.append(
            problem_finding(INTERNAL_ERROR, relpath, f"internal error while checking this file: {type(exc).__name__}: {exc}")
        )
    return result
