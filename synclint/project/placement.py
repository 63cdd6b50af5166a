"""Where a file sits in the project: its dotted module name, its package, the package root,
and the modules its `from X import ...` lines name."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path


def module_name(path: Path) -> tuple[str, str]:
    """The dotted module name of a file and the package its relative imports start from.

    Folders holding an `__init__.py` are packages: `vllm/v1/attention/backend.py` is
    `vllm.v1.attention.backend`, and `vllm/v1/__init__.py` is the package `vllm.v1`.
    """
    parent, name = os.path.split(os.path.abspath(path))
    folder = _package_of(parent)
    if name == "__init__.py":
        return folder, folder
    stem = name.rpartition(".")[0] or name
    return (f"{folder}.{stem}" if folder else stem), folder


@functools.lru_cache(maxsize=4096)
def _package_of(folder: str) -> str:
    """The dotted package a folder is ("" when it holds no `__init__.py`), one lookup per folder."""
    path = Path(folder)
    if not (path / "__init__.py").is_file() or not path.name.isidentifier() or path.parent == path:
        return ""
    parent = _package_of(str(path.parent))
    return f"{parent}.{path.name}" if parent else path.name


def package_root(path: Path) -> Path | None:
    """The outermost package folder holding `path` (the tree its imports resolve in), if any."""
    absolute = os.path.abspath(path)
    is_file = absolute.endswith((".py", ".pyi")) or not os.path.isdir(absolute)  # a source file takes no stat
    root = _package_root_of_folder(os.path.dirname(absolute) if is_file else absolute)
    return _as_path(root) if root is not None else None


@functools.lru_cache(maxsize=4096)
def _as_path(folder: str) -> Path:  # a Path per package root, not one per file
    return Path(folder)


@functools.lru_cache(maxsize=4096)
def _package_root_of_folder(folder: str) -> str | None:  # asked once per file of a package: once per folder
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    parent = os.path.dirname(folder)
    if parent == folder:
        return None
    return _package_root_of_folder(parent) or folder


_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)


def imported_modules(data: bytes, package: str) -> set[str]:
    """The modules a file's `from X import a, b` lines may name (`X`, `X.a`, `X.b`), relative
    imports resolved from `package` (a cheap look at the text: for declarations, not for calls)."""
    found: set[str] = set()
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode()
        level = len(module) - len(module.lstrip("."))
        if level:
            parts = package.split(".") if package else []
            if level - 1 >= len(parts):
                continue
            rest = module[level:]
            module = ".".join([*parts[: len(parts) - (level - 1)], *([rest] if rest else [])])
        found.add(module)
        for name in re.findall(rb"\w+", match.group(2)):
            found.add(f"{module}.{name.decode()}")
    return found
