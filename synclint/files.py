"""Which files a run checks: walk the paths, skip excluded and git-ignored ones."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from synclint.config import SettingsResolver

PYTHON_SUFFIXES = (".py", ".pyi")
BROKEN_LINK = "broken symbolic link (its target is missing, or it loops)"


@dataclass(frozen=True)
class Target:
    path: Path
    explicit: bool  # named on the command line (checked even if excluded)


@dataclass(frozen=True)
class PathProblem:
    path: Path
    message: str


def relative_to_root(path: Path, root: Path) -> str:
    try:
        inside, top = _resolved(path), _resolved(root)
        if inside == top:
            return "."
        if inside.startswith(top.rstrip(os.sep) + os.sep):  # as Path.relative_to, without its cost per file
            return inside[len(top.rstrip(os.sep)) + 1:].replace(os.sep, "/")
        raise ValueError(inside)
    except (ValueError, OSError, RuntimeError):  # outside the root, or a symlink loop
        try:
            return path.absolute().relative_to(root.absolute()).as_posix()
        except ValueError:
            return path.as_posix()


def _resolved(path: Path) -> str:
    """`str(path.resolve())`, with each folder resolved once per run (asked for every file shown)."""
    text = os.fspath(path)
    if ".." in text.split(os.sep) or os.path.islink(text):
        return os.path.realpath(text)
    folder, name = os.path.split(os.path.abspath(text))
    return os.path.join(_resolved_folder(folder), name) if name else os.path.realpath(text)


@lru_cache(maxsize=8192)
def _resolved_folder(folder: str) -> str:
    return str(Path(folder).resolve())


def discover(
    paths: list[Path], resolver: SettingsResolver, force_exclude: bool = False, walked: set[str] | None = None,
) -> Iterator[Target | PathProblem]:
    """Yield the files to check, in a stable order, and the paths that cannot be read. The
    folders walked are added to `walked` (a run whose folders have not changed found the same files)."""
    seen: set[str] = set()  # absolute paths
    for path in paths:
        if not os.path.lexists(path):
            yield PathProblem(path, "no such file or directory")
            continue
        if path.is_dir():
            yield from _walk(path, resolver, seen, walked if walked is not None else set())
            continue
        if not path.exists():
            yield PathProblem(path, BROKEN_LINK)
            continue
        settings = resolver.for_path(path)
        if force_exclude and (settings.is_excluded(relative_to_root(path, settings.root)) or _git_ignored(path, settings)):
            continue
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            yield Target(path, explicit=True)


def _walk(top: Path, resolver: SettingsResolver, seen: set[str], walked: set[str]) -> Iterator[Target | PathProblem]:
    visited_dirs: set[tuple[int, int]] = set()
    errors: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=errors.append, followlinks=True):
        for error in errors:
            yield PathProblem(Path(error.filename or dirpath), error.strerror or str(error))
        errors.clear()
        directory = Path(dirpath)
        try:
            stat = directory.stat()
        except OSError as exc:
            yield PathProblem(directory, exc.strerror or str(exc))
            dirnames[:] = []
            continue
        if (stat.st_dev, stat.st_ino) in visited_dirs:  # a symlink loop
            dirnames[:] = []
            continue
        visited_dirs.add((stat.st_dev, stat.st_ino))
        walked.add(dirpath)
        settings = resolver.for_path(directory)
        # One resolve per folder, not per file: its entries' paths are the folder's plus a name.
        base = relative_to_root(directory, settings.root)
        prefix = "" if base == "." else base + "/"
        kept = []
        for name in sorted(dirnames):
            sub = directory / name
            rel = prefix + name
            if settings.is_excluded(rel) or (sub / "pyvenv.cfg").exists():
                continue
            if settings.respect_gitignore and _git_ignored(sub, settings, is_dir=True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            path = directory / name
            rel = prefix + name
            if settings.is_excluded(rel):
                continue
            if settings.respect_gitignore and _git_ignored(path, settings):
                continue
            if path.is_dir():
                continue  # a folder named x.py is not a file
            if path.is_symlink() and not path.exists():
                yield PathProblem(path, BROKEN_LINK)
                continue
            key = os.path.realpath(path) if path.is_symlink() else os.path.abspath(path)
            if key in seen:
                continue
            seen.add(key)
            yield Target(path, explicit=False)


# --------------------------------------------------------------------------------------
# .gitignore
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """A gitignore glob as a regex over a path relative to the .gitignore's folder."""
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    prefix = "" if anchored else "(?:.*/)?"
    return f"^{prefix}{body}(?:/.*)?$"


@lru_cache(maxsize=4096)
def _gitignore_rules(folder: Path) -> tuple[IgnoreRule, ...]:
    path = folder / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        try:
            rules.append(IgnoreRule(re.compile(_translate(line)), negate, dir_only))
        except re.error:
            continue
    return tuple(rules)


@lru_cache(maxsize=4096)
def _git_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


@lru_cache(maxsize=4096)
def _ignore_folders(folder: str) -> tuple[tuple[str, tuple[IgnoreRule, ...]], ...]:
    """For the entries of `folder` (absolute): each folder from the repository root down to it
    whose .gitignore has rules, as the prefix of the entries' paths relative to it, with the
    rules; () outside a repository. Asked once per folder, not per file."""
    here = Path(folder)
    root = _git_root(here)
    if root is None:
        return ()
    chain = [root, *[p for p in reversed(here.parents) if root in p.parents]]
    if here != root:
        chain.append(here)
    found = []
    for each in chain:
        rules = _gitignore_rules(each)
        if rules:
            prefix = here.relative_to(each).as_posix()
            found.append(("" if prefix == "." else prefix + "/", rules))
    return tuple(found)


def _git_ignored(path: Path, settings, is_dir: bool = False) -> bool:
    """Whether a .gitignore between the repository root and `path` ignores it."""
    folder, name = os.path.split(os.path.abspath(path))
    ignored = False
    for prefix, rules in _ignore_folders(folder):
        rel = prefix + name
        for rule in rules:
            if rule.dir_only and not is_dir and "/" not in rel:
                continue
            if rule.regex.match(rel):
                ignored = not rule.negate
    return ignored
