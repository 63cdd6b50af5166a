"""The device model, tested directly from data (as mypy's `test-data/unit/check-*.test`).

Every `.py` file in `tests/where/` is a module of one package, `app`, indexed together as project
analysis indexes a package (so a module learns from the others, as `from app.helpers import make`
does). A line ending in `# where: PLACE [CONFIDENCE] [(BECAUSE)]` states where the value of that
line's expression lives: an expression statement's value, an assignment's value, a `return`'s
value. PLACE is `device`, `host-tensor`, `host`, `module` (an nn.Module) or `unknown`; CONFIDENCE, when given, is `low`,
`medium` or `high`; BECAUSE, when given, must be part of the model's explanation.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from synclint.config import build_settings
from synclint.devices.lattice import Place, Where
from synclint.engine import FileContext, analyse
from synclint.evidence import Certainty
from synclint.project.facts import ModuleSummary, ProjectFile
from synclint.project.index import ProjectIndex

CASES = Path(__file__).resolve().parent / "where"
EXPECTATION = re.compile(
    r"#\s*where:\s*(?P<place>device|host-tensor|host|module|unknown)(?:\s+(?P<confidence>low|medium|high))?"
    r"(?:\s+\((?P<because>.*)\))?\s*$"
)
SETTINGS = build_settings({}, CASES, None)


def _relpath(path: Path) -> str:
    return f"app/{path.name}"


def _project_file(path: Path, answers=None) -> ProjectFile:
    return ProjectFile(f"app.{path.stem}", "app", answers)


@functools.cache
def _index() -> tuple[ProjectIndex, dict[str, ModuleSummary]]:
    summaries = {}
    for path in sorted(CASES.glob("*.py")):
        _, summary = analyse(path.read_text(), _relpath(path), SETTINGS, project=_project_file(path))
        if summary is not None:
            summaries[path.name] = summary
    return ProjectIndex(summaries.values()), summaries


def _expectations():
    for path in sorted(CASES.glob("*.py")):
        for row, line in enumerate(path.read_text().splitlines(), start=1):
            match = EXPECTATION.search(line)
            if match:
                yield pytest.param(path, row, match, id=f"{path.stem}:{row}")
            elif "# where" in line:
                raise ValueError(f"{path.name}:{row}: not an expectation: {line.strip()}")


class _Statements(cst.CSTVisitor):
    """Each simple statement's first small statement, by its row, with the function holding it."""

    def __init__(self, positions) -> None:
        self.positions = positions
        self.scopes: list[cst.Module | cst.FunctionDef] = []
        self.found: dict[int, tuple[cst.BaseSmallStatement, cst.Module | cst.FunctionDef]] = {}

    def visit_Module(self, node: cst.Module) -> None:
        self.scopes.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.found[self.positions[node].start.line] = (node.body[0], self.scopes[-1])


def _value(statement: cst.BaseSmallStatement) -> cst.BaseExpression:
    if isinstance(statement, (cst.Expr, cst.Assign, cst.AnnAssign, cst.Return)) and statement.value is not None:
        return statement.value
    raise ValueError(f"no value to ask about in a {type(statement).__name__}")


@functools.cache
def _file(path: Path) -> tuple[FileContext, dict]:
    index, summaries = _index()
    module = cst.parse_module(path.read_text())
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    statements = _Statements(wrapper.resolve(PositionProvider))
    module.visit(statements)
    answers = index.answers_for(summaries[path.name]) if path.name in summaries else None
    return FileContext(module, SETTINGS, _relpath(path), _project_file(path, answers)), statements.found


def _describe(where: Where) -> str:
    return f"{where.place.value} {where.certainty} ({where.because})"


@pytest.mark.parametrize("path, row, expected", list(_expectations()))
def test_where(path: Path, row: int, expected: re.Match):
    ctx, statements = _file(path)
    statement, scope = statements[row]
    where = ctx.devices.where(_value(statement), scope, statement)
    assert where.place is Place(expected["place"]), _describe(where)
    if expected["confidence"]:
        assert where.certainty is Certainty.parse(expected["confidence"]), _describe(where)
    if expected["because"]:
        assert expected["because"] in (where.because or ""), _describe(where)


def test_there_are_expectations_of_every_place():
    found = {match["place"] for _, _, match in (p.values for p in _expectations())}
    assert found == {"device", "host-tensor", "host", "module", "unknown"}
