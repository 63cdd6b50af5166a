"""The rule API: what a rule declares, what it may ask, and how it reports.

A rule is one class in one file of `rules/`: a code, a kebab-case name, a one-line
summary, Markdown documentation with fixed headings, VALID and INVALID examples, and
`visit_<Node>` / `leave_<Node>` methods that the engine calls in one shared traversal.
Rules ask `self.where(expr)` where a value lives instead of guessing from names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import libcst as cst

from synclint.evidence import Basis, Certainty, Evidence, Reach
from synclint.model import Applicability, Confidence
from synclint.syntax import Scope, statements

if TYPE_CHECKING:
    from synclint.config import Settings
    from synclint.devices.lattice import Where
    from synclint.devices.model import DeviceModel
    from synclint.project.facts import ProjectFile, Answers
    from synclint.project.index import ProjectIndex

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")
CODE_PATTERN = re.compile(r"^SYNC\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must report nothing."""

    code: str
    config: dict[str, Any] = field(default_factory=dict)
    filename: str = "example.py"


@dataclass(frozen=True)
class Invalid:
    """Code on which the rule must report; `expected_fix` is the source after fixing."""

    code: str
    expected_fix: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    filename: str = "example.py"
    count: int | None = None  # how many findings, when it matters
    confidence: Confidence | None = None  # the confidence of the first finding, when it matters
    min_confidence: Confidence | None = None  # checked at this confidence (a finding hidden by default)


@dataclass(frozen=True)
class Option:
    """A per-rule configuration key, set in `[tool.synclint]`."""

    type: type
    default: Any
    help: str


@dataclass
class Replacement:
    """A fix: replace `node` by `new` (a node or source text), as one edit."""

    node: cst.CSTNode
    new: cst.CSTNode | str
    applicability: Applicability
    message: str
    # Further (node, new) pairs applied together with the first, all or none.
    more: list[tuple[cst.CSTNode, cst.CSTNode | str]] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # "import torch", "from x import y"


@dataclass(frozen=True)
class Site:
    """Where in the traversal a node was met: what a report needs besides the node itself.

    `FileContext.site()` takes one; a rule that decides only after the walk (`Rule.finish`)
    keeps the sites of the nodes it may report and reports them with `report_at`."""

    context: str  # one of config.CONTEXTS
    allowed: bool  # inside a region where syncs are meant (`with gpu_sync_allowed():`)
    indentation: str  # of the statement being visited: replacement nodes that span lines keep it
    # Statements around the node, smallest first, each with the indentation of the blocks
    # around it: where the engine finds the node's position (engine._positions).
    anchors: tuple[tuple[cst.CSTNode, tuple[str, ...]], ...]
    scope: cst.Module | cst.FunctionDef  # the function (or module body) holding the node
    platform: str | None = None  # the accelerator other than CUDA that the branch holding it runs on
    # How often it runs, when not every time its function runs: once every so many steps
    # ("once every `log_interval` steps", "once per epoch"), or once ("in a `__main__` block, which runs once").
    interval: str | None = None
    once: str | None = None
    loop: str = ""  # the loops around it: "model" (one runs a model), "plain" (none does), "" (none)


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    evidence: Evidence
    fix: Replacement | None
    site: Site

    @property
    def certainty(self) -> Certainty:
        return self.evidence.value

    @property
    def because(self) -> str | None:
        return self.evidence.because

    @property
    def context(self) -> str:
        return self.site.context

    @property
    def allowed(self) -> bool:
        return self.site.allowed

    @property
    def indentation(self) -> str:
        return self.site.indentation

    @property
    def anchors(self) -> tuple[tuple[cst.CSTNode, tuple[str, ...]], ...]:
        return self.site.anchors


class RuleContext(Protocol):
    """What a rule may see of the file being checked; the engine's `FileContext` implements it.

    Rules read it through `Rule`'s methods below rather than directly."""

    module: cst.Module
    relpath: str
    settings: "Settings"
    project: "ProjectFile"
    devices: "DeviceModel"
    index: "ProjectIndex | None"  # set after the walk, before `Rule.finish`
    scopes: list[Scope]  # the functions around the node being visited, the module first
    statements: list[cst.CSTNode]  # the statements around it, innermost last
    reports: list[tuple["Rule", "Report"]]

    def where(self, expr: cst.BaseExpression) -> "Where": ...
    def where_read(self, expr: cst.BaseExpression) -> "Where": ...
    def site(self) -> Site: ...
    def context(self) -> str: ...
    def may_repeat(self) -> bool: ...
    def indentation(self) -> str: ...
    def accelerator(self, scope: Scope) -> str | None: ...
    def host_side_class(self, scope: Scope) -> str | None: ...
    def assignments(self, scope: cst.CSTNode) -> dict[str, list[cst.BaseExpression | None]]: ...
    def attribute_assignments(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]: ...


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    docs: ClassVar[str]
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []
    # Substrings (or compiled regular expressions) at least one of which a file must contain
    # for the rule to matter; files without any of them are never parsed for this rule. Empty:
    # always run. They must be necessary: a word that every finding's file contains (a rule
    # that knows `torch.isin` by its qualified name needs the file's `torch` import, not "isin").
    prefilter: ClassVar[tuple[str | re.Pattern[str], ...]] = ("torch",)
    options: ClassVar[dict[str, Option]] = {}
    # Whether a finding of this rule is a point where the host waits. The project index
    # (synclint.project) counts such points, even of rules not selected, as syncs of the
    # function holding them, and follows them to callers.
    syncs: ClassVar[bool] = True

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx

    # ---- what a rule may ask: where values live ----------------------------------------

    def where(self, expr: cst.BaseExpression) -> "Where":
        """Where `expr` lives, just before the statement being visited."""
        return self.ctx.where(expr)

    def where_read(self, expr: cst.BaseExpression) -> "Where":
        """Where `expr` lives, given that the code reads its values with `.item()` or `.tolist()`,
        which only a tensor or a numpy value has: a value of unknown type is a tensor then."""
        return self.ctx.where_read(expr)

    def placement(self, device_arg: cst.BaseExpression) -> "Where":
        """What a `device=` argument means here (a host tensor for "cpu")."""
        return self.ctx.devices.placement(device_arg, self.scope, self.statement)

    def to_target(self, call: cst.Call) -> "Where | None":
        """Where `<tensor>.to(...)` puts its result; None when it keeps the device (a dtype)."""
        return self.ctx.devices.to_target(call, self.scope, self.statement)

    def where_on_entry(self, func: cst.FunctionDef, name: str) -> "Where | None":
        """What `func`'s own code knows of its parameter `name` when it starts."""
        body = statements(func.body)
        return self.ctx.devices.facts(func).env_before.get(id(body[0]), {}).get(name) if body else None

    def returns_of(self, func: cst.FunctionDef) -> "Where":
        """Where the result of a local function lives (its returns joined, or its annotation)."""
        return self.ctx.devices.returns_of(func)

    def returned_values(self, func: cst.FunctionDef) -> "list[Where]":
        """Where each `return` of a local function, in its body, puts its result."""
        return self.ctx.devices.facts(func).returns

    def device_params(self, func: cst.FunctionDef) -> "dict[str, Where]":
        """The parameters of `func` that a caller in another file fills with a GPU tensor."""
        return self.ctx.devices.answers.device_params.get(self.function_qualname(func) or "", {})

    def classify_name(self, name: str) -> "Where | None":
        """What the naming conventions say of a name (`ids_cpu` is a host value)."""
        return self.ctx.devices.conventions.classify(name)

    # ---- what a rule may ask: names and code --------------------------------------------

    @property
    def module(self) -> cst.Module:
        return self.ctx.module

    @property
    def scope(self) -> Scope:
        """The function (or the module) holding the node being visited."""
        return self.ctx.scopes[-1]

    @property
    def function(self) -> cst.FunctionDef | None:
        """The function holding the node being visited; None at the top level."""
        scope = self.ctx.scopes[-1]
        return scope if isinstance(scope, cst.FunctionDef) else None

    @property
    def statement(self) -> cst.CSTNode | None:
        """The innermost statement being visited."""
        return self.ctx.statements[-1] if self.ctx.statements else None

    def functions_around(self) -> list[cst.FunctionDef]:
        """The functions holding the node being visited, outermost first."""
        return [scope for scope in self.ctx.scopes if isinstance(scope, cst.FunctionDef)]

    def context(self) -> str:
        """Where the node runs: `loop`, `step` (a per-step method), `init`, `test` or `code`."""
        return self.ctx.context()

    def site(self) -> Site:
        """Where the walk is now, kept to report a node after the walk (`report_at`)."""
        return self.ctx.site()

    def indentation(self) -> str:
        """The leading whitespace of the statement being visited (for fixes that span lines)."""
        return self.ctx.indentation()

    @property
    def index(self) -> "ProjectIndex | None":
        """The project index, known in `finish` (None before, and without project analysis)."""
        return self.ctx.index

    def assignments(self, scope: cst.CSTNode | None = None) -> dict[str, list[cst.BaseExpression | None]]:
        """The values bound to each name in a scope's own body (`syntax.local_assignments`),
        by default the current one. Shared by every rule: read it, do not change it."""
        return self.ctx.assignments(scope if scope is not None else self.scope)

    def attribute_assignments(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        """The values assigned to each `self.<attr>` in the methods of `cls`. Do not change it."""
        return self.ctx.attribute_assignments(cls)

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name `expr` spells through the imports (`T.zeros` -> `torch.zeros`)."""
        return self.ctx.devices.symbols.qualname(expr)

    def import_aliases(self) -> dict[str, str]:
        """Each imported local name and the qualified name it stands for."""
        return self.ctx.devices.symbols.imports.aliases

    def resolve(self, func_expr: cst.BaseExpression) -> cst.FunctionDef | None:
        """The function of this file that a call's callee names (`helper`, `self.method`)."""
        return self.ctx.devices.symbols.resolve_function(func_expr, self.scope)

    def callee(self, func_expr: cst.BaseExpression) -> str | None:
        """The qualified name of the project function a call's callee names, if any."""
        return self.ctx.devices.symbols.callee_qualname(func_expr, self.scope)

    def receiver_class(self, value: cst.BaseExpression) -> str | None:
        """The qualified class of `self`, `cls`, `super()` or a parameter annotated with a class."""
        return self.ctx.devices.symbols.receiver_class(value, self.scope)

    def function_qualname(self, func: cst.FunctionDef) -> str | None:
        return self.ctx.devices.symbols.function_qualname(func)

    def class_of(self, func: cst.FunctionDef | None) -> cst.ClassDef | None:
        """The class that `func` is a method of."""
        return self.ctx.devices.symbols.class_of(func)

    def self_class(self) -> cst.ClassDef | None:
        """The class whose `self` the current function sees (its own, or its enclosing method's)."""
        return self.ctx.devices.symbols.self_class(self.function)

    def is_module_class(self, cls: cst.ClassDef | None) -> bool:
        """Whether a class of this file is a torch.nn.Module."""
        return self.ctx.devices.symbols.is_module_class(cls)

    def local_classes(self) -> "Iterable[cst.ClassDef]":
        """The classes this file defines at its top level."""
        return self.ctx.devices.symbols.classes.values()

    @property
    def answers(self) -> "Answers":
        """The facts of the rest of the project about the names this file uses."""
        return self.ctx.devices.answers

    @property
    def host_code(self) -> bool:
        """Whether the file's code runs on the host, by its path (CPU kernels, processors)."""
        return self.ctx.devices.host_code

    def local_function(self, name: str) -> cst.FunctionDef | None:
        return self.ctx.devices.symbols.functions.get(name)

    def local_class(self, name: str) -> cst.ClassDef | None:
        return self.ctx.devices.symbols.classes.get(name)

    def option(self, key: str) -> Any:
        return self.ctx.settings.rule_option(key)

    def code_of(self, node: cst.CSTNode) -> str:
        return self.ctx.module.code_for_node(node)

    # ---- how a rule reports ----------------------------------------------------------

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        certainty: Certainty = Certainty.HIGH,
        because: str | None = None,
        basis: Basis = Basis.OTHER,
        fix: Replacement | None = None,
    ) -> None:
        self.report_at(self.ctx.site(), node, message, certainty=certainty, because=because, basis=basis, fix=fix)

    def report_where(self, node: cst.CSTNode, message: str, where: "Where", fix: Replacement | None = None) -> None:
        """Report a value on the device, with the certainty, basis and reason the device model gave."""
        self.report(node, message, certainty=where.certainty, because=where.because, basis=where.basis, fix=fix)

    def report_at(
        self,
        site: Site,
        node: cst.CSTNode,
        message: str,
        *,
        certainty: Certainty = Certainty.HIGH,
        because: str | None = None,
        basis: Basis = Basis.OTHER,
        fix: Replacement | None = None,
    ) -> None:
        """Report a node met earlier in the walk, at the site taken then (from `finish`), with the
        evidence the rule has and what the site adds: how often the line runs and whether ordinary
        use reaches a CUDA GPU there. The confidence is the policy's (`synclint.policy`), not the rule's."""
        facts: tuple[str, ...] = (because,) if because else ()
        reach = Reach.CUDA
        if accelerator := (site.platform or self.ctx.accelerator(site.scope)):
            # The host waits there too, but not for a CUDA GPU.
            facts, reach = (f"{accelerator} code, not CUDA", *facts), Reach.ACCELERATOR
        elif self.syncs and (cls := self.ctx.host_side_class(site.scope)):
            # A multimodal processor prepares a model's inputs on the host, before the GPU sees them.
            facts, reach = (*facts, f"in {cls}, which prepares inputs on the host"), Reach.HOST_SIDE
        elif site.context == "init" and self.syncs:
            # Set-up code (`__init__`, `load_weights`, `setup`), a `__main__` block, an error path: once, not per step.
            facts = (*facts, site.once or "in set-up code, which runs once")
        elif site.interval is not None and self.syncs:
            # `if step % log_interval == 0:` pays once every so many steps, not every step.
            facts = (*facts, site.interval)
        evidence = Evidence(certainty, site.context, basis, reach, facts, self.syncs, site.loop)
        self.ctx.reports.append((self, Report(node, message, evidence, fix, site)))

    def finish(self) -> None:
        """Called once after the walk, when `self.ctx.index` (this file's functions joined with
        the facts of the rest of the project) is known: report what needed it."""

    # ---- documentation -------------------------------------------------------------

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        sections: dict[str, str] = {}
        current = None
        for line in _dedent(cls.docs).splitlines():
            match = re.match(r"^##\s+(.*?)\s*$", line)
            if match:
                current = match.group(1)
                sections[current] = ""
            elif current is not None:
                sections[current] += line + "\n"
        return {k: v.strip("\n") for k, v in sections.items()}

    @classmethod
    def fixable(cls) -> bool:
        return any(example.expected_fix is not None for example in cls.INVALID)

    @classmethod
    def markdown(cls) -> str:
        return f"# {cls.name} ({cls.code})\n\n{cls.summary}\n\n{_dedent(cls.docs).strip()}\n"


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


def validate_rule_class(rule: type[Rule]) -> list[str]:
    """Problems with a rule class's declarations (empty when it is well formed)."""
    problems = []
    for attr in ("code", "name", "summary", "docs"):
        if not isinstance(getattr(rule, attr, None), str):
            problems.append(f"missing `{attr}`")
    if problems:
        return problems
    if not CODE_PATTERN.match(rule.code):
        problems.append(f"code {rule.code!r} is not SYNC followed by three digits")
    if not NAME_PATTERN.match(rule.name):
        problems.append(f"name {rule.name!r} is not kebab-case")
    missing = [h for h in DOC_HEADINGS if h not in rule.doc_sections()]
    if missing:
        problems.append("docs lack the headings " + ", ".join(repr(h) for h in missing))
    if not rule.INVALID:
        problems.append("no INVALID examples")
    return problems
