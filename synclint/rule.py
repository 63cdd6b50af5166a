"""The rule API: what a rule declares, what it may ask, and how it reports.

A rule is one class in one file of `rules/`: a code, a kebab-case name, a one-line
summary, Markdown documentation with fixed headings, VALID and INVALID examples, and
`visit_<Node>` / `leave_<Node>` methods that the engine calls in one shared traversal.
Rules ask `self.where(expr)` where a value lives instead of guessing from names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import libcst as cst

from synclint.model import Applicability, Confidence

if TYPE_CHECKING:
    from synclint.devices import Where
    from synclint.engine import FileContext

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

    context: str  # loop, step, init, test, code
    allowed: bool  # inside a region where syncs are meant (`with gpu_sync_allowed():`)
    indentation: str  # of the statement being visited: replacement nodes that span lines keep it
    # Statements around the node, smallest first, each with the indentation of the blocks
    # around it: where the engine finds the node's position (engine._positions).
    anchors: tuple[tuple[cst.CSTNode, tuple[str, ...]], ...]
    scope: cst.Module | cst.FunctionDef  # the function (or module body) holding the node


@dataclass
class Report:
    node: cst.CSTNode
    message: str
    confidence: Confidence
    because: str | None
    fix: Replacement | None
    site: Site

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

    def __init__(self, ctx: "FileContext") -> None:
        self.ctx = ctx

    # ---- what a rule may ask ---------------------------------------------------------

    def where(self, expr: cst.BaseExpression) -> "Where":
        return self.ctx.where(expr)

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        return self.ctx.devices.qualname(expr)

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
        confidence: Confidence = Confidence.HIGH,
        because: str | None = None,
        fix: Replacement | None = None,
    ) -> None:
        self.report_at(self.ctx.site(), node, message, confidence=confidence, because=because, fix=fix)

    def report_where(self, node: cst.CSTNode, message: str, where: "Where", fix: Replacement | None = None) -> None:
        """Report a value on the device, with the confidence and reason the device model gave."""
        self.report(node, message, confidence=where.confidence, because=where.because, fix=fix)

    def report_at(
        self,
        site: Site,
        node: cst.CSTNode,
        message: str,
        *,
        confidence: Confidence = Confidence.HIGH,
        because: str | None = None,
        fix: Replacement | None = None,
    ) -> None:
        """Report a node met earlier in the walk, at the site taken then (from `finish`)."""
        accelerator = self.ctx.accelerator(site.scope) if confidence > Confidence.LOW else None
        if accelerator is not None:
            # The host waits there too, but not for a CUDA GPU: not what a default run is for.
            confidence = Confidence.LOW
            because = f"{accelerator} code, not CUDA" + (f"; {because}" if because else "")
        self.ctx.reports.append((self, Report(node, message, confidence, because, fix, site)))

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
