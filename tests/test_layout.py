"""The shape of the house: no import cycles, short modules, libcst's internals in one place.

Read from the source with `ast`, so these hold for every module, imported by a test or not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    """Every module of synclint and of the rules (`synclint.rules.*`, as the wheel lays them out)."""
    found = {}
    for path in sorted((ROOT / "synclint").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in sorted((ROOT / "rules").glob("*.py")):
        found["synclint.rules" if path.stem == "__init__" else f"synclint.rules.{path.stem}"] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(module: str, path: Path) -> set[str]:
    """The synclint modules `module` imports when it runs (at its top or inside a function),
    leaving out imports for type checkers only. `from pkg import name` counts `pkg.name` when
    that is a module, else `pkg`; importing a submodule runs its package's `__init__` too."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            names = []
        for name in names:
            while name:
                if name in MODULES and name != module:
                    found.add(name)
                name = name.rpartition(".")[0]
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_runtime_import_cycle():
    graph = {module: _runtime_imports(module, path) for module, path in MODULES.items()}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def search(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                cycles.append(" -> ".join([*stack[stack.index(imported):], imported]))
            elif imported not in state:
                search(imported)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            search(module)
    assert cycles == []


def test_the_rule_api_does_not_depend_on_the_engine():
    assert "synclint.engine" not in _runtime_imports("synclint.rule", MODULES["synclint.rule"])
    text = MODULES["synclint.rule"].read_text(encoding="utf-8")
    assert "synclint.engine" not in text


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_800_lines(module):
    assert len(MODULES[module].read_text(encoding="utf-8").splitlines()) <= MAX_LINES


PRIVATE_ATTRIBUTES = {"_codegen", "_visit_and_replace_children", "_computed", "__post_init__"}


def _reads_libcst_internals(path: Path) -> bool:
    """Whether a module imports libcst's private modules or reads its private attributes."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("libcst._", "libcst.metadata.")):
            if node.module.startswith("libcst._") or any("CodegenState" in a.name for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(a.name.startswith("libcst._") for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            return True
    return False


def test_only_cst_internals_reads_libcsts_internals():
    assert [module for module, path in MODULES.items() if _reads_libcst_internals(path)] == ["synclint.cst_internals"]
