"""Which files a run checks: walk the paths, skip excluded and git-ignored ones."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from synclint.config import SettingsResolver, glob_spec

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

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
            if settings.is_excluded(rel, is_dir=True) or (sub / "pyvenv.cfg").exists():
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
# What git ignores: core.excludesFile, .git/info/exclude and each .gitignore, as git reads them
# --------------------------------------------------------------------------------------


def _spec_of(path: Path) -> "GitIgnoreSpec | None":
    """The patterns of an ignore file (None when it is missing, unreadable or empty)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    spec = glob_spec(tuple(lines))
    return spec if len(spec) else None


@lru_cache(maxsize=4096)
def _gitignore_spec(folder: Path) -> "GitIgnoreSpec | None":
    return _spec_of(folder / ".gitignore")


@lru_cache(maxsize=4096)
def _git_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _git_dir(root: Path) -> Path:
    """The repository's common git folder: `.git`, or where a worktree's `.git` file points."""
    dot_git = root / ".git"
    if not dot_git.is_file():
        return dot_git
    try:
        line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return dot_git
    git_dir = (root / line.partition("gitdir:")[2].strip()).resolve() if line.startswith("gitdir:") else dot_git
    try:  # a linked worktree keeps `info/exclude` in the main repository's folder
        return (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return git_dir


def _config_value(path: Path, section: str, key: str) -> str | None:
    """The last `key` of `[section]` in a git config file (enough of git's format for one key)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found, current = None, None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            current = line[1:line.find("]")].strip().split()[0].lower() if "]" in line else None
            line = line[line.find("]") + 1:].strip() if "]" in line else ""
        if current != section or "=" not in line or line.startswith(("#", ";")):
            continue
        name, _, value = line.partition("=")
        if name.strip().lower() == key:
            value = value.strip()
            if value.startswith('"') and value.endswith('"') and len(value) > 1:
                value = value[1:-1]
            found = value
    return found


@lru_cache(maxsize=64)
def _repository_specs(root: Path) -> "tuple[GitIgnoreSpec, ...]":
    """What ignores files in the whole repository at `root`, lowest precedence first: the user's
    `core.excludesFile` (git's default `~/.config/git/ignore`), then `.git/info/exclude`."""
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    git_dir = _git_dir(root)
    excludes = None
    for config in (xdg / "git" / "config", home / ".gitconfig", git_dir / "config"):  # later ones win
        excludes = _config_value(config, "core", "excludesfile") or excludes
    excludes_file = Path(os.path.expanduser(excludes)) if excludes else xdg / "git" / "ignore"
    if not excludes_file.is_absolute():
        excludes_file = root / excludes_file
    return tuple(spec for spec in (_spec_of(excludes_file), _spec_of(git_dir / "info" / "exclude")) if spec)


@lru_cache(maxsize=4096)
def _ignore_layers(folder: str) -> "tuple[tuple[str, GitIgnoreSpec], ...]":
    """For the entries of `folder` (absolute): every ignore file that applies to them, lowest
    precedence first (the repository's, then each .gitignore from the root down to `folder`),
    with the prefix of the entries' paths relative to the file's base; () outside a repository.
    Asked once per folder, not per file."""
    here = Path(folder)
    root = _git_root(here)
    if root is None:
        return ()
    to_root = here.relative_to(root).as_posix()
    layers = [("" if to_root == "." else to_root + "/", spec) for spec in _repository_specs(root)]
    chain = [root, *[p for p in reversed(here.parents) if root in p.parents]]
    if here != root:
        chain.append(here)
    for each in chain:
        spec = _gitignore_spec(each)
        if spec is not None:
            prefix = here.relative_to(each).as_posix()
            layers.append(("" if prefix == "." else prefix + "/", spec))
    return tuple(layers)


def _git_ignored(path: Path, settings, is_dir: bool = False) -> bool:
    """Whether git ignores `path`: the last pattern that matches it, in the most specific file, decides."""
    folder, name = os.path.split(os.path.abspath(path))
    ignored = False
    for prefix, spec in _ignore_layers(folder):
        decided = spec.check_file(prefix + name + ("/" if is_dir else "")).include
        if decided is not None:
            ignored = decided
    return ignored
