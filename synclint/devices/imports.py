"""Import aliases: the qualified names that local names stand for (`T.zeros` -> `torch.zeros`).

Read from the import statements themselves, without libcst's scope analysis, which costs
several parses per file. Imports anywhere in a module count (vLLM imports torch inside functions).
"""

from __future__ import annotations

import libcst as cst

from synclint.syntax import dotted_name


class ImportTable:
    """Maps local names to the qualified names they were imported as."""

    def __init__(self, package: str = "") -> None:
        self.aliases: dict[str, str] = {}
        self.package = package  # where relative imports start ("" outside a package)

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
            return
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module is not None else ""
        if module is None:
            return
        if node.relative:
            module = self._absolute(len(node.relative), module)
            if module is None:
                return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def _absolute(self, level: int, module: str) -> str | None:
        """`from ..x import y` in package `a.b.c` -> `a.b.x` (None when it climbs out)."""
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts) or not parts:
            return None
        base = parts[: len(parts) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        name = dotted_name(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full
