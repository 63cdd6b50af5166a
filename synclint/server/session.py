"""The workspace as the server sees it: settings, each package's facts, the last check of a file.

Nothing here knows LSP. It is `synclint check --stdin-filename` kept warm: the settings of the
nearest `[tool.synclint]` (`SettingsResolver`), the cache a CLI run from the same folder uses,
and for each package the state that the last run over it left there (`project.run.package_state`),
against which a buffer is checked as pre-commit checks an edited file (`project.run.check_unsaved`).
A configured baseline hides the findings it records, as `synclint check` does (a baseline that
cannot be read is a configuration error). Every method runs on the server's one checking thread: libcst parses are not thread-safe
(`engine.parse_module`), and the GIL would give nothing to a second thread.
"""

from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass, replace
from pathlib import Path

from synclint.baseline import Baseline, BaselineError
from synclint.cache.entries import PackageState
from synclint.cache.store import DEFAULT_DIR, Cache
from synclint.config import ConfigError, Settings, SettingsResolver
from synclint.engine import FileResult
from synclint.files import relative_to_root
from synclint.project.facts import ProjectFile
from synclint.project.index import ProjectIndex
from synclint.project.placement import package_root
from synclint.jobs import display_path
from synclint.project.run import check_unsaved, package_state


@dataclass
class Package:
    """A package (its outermost folder holding an `__init__.py`) under one set of settings."""

    root: Path
    settings: Settings
    state: PackageState | None = None  # the facts of its files, as the last run over it left them
    looked: bool = False  # whether the cache has been asked for a state yet
    index_asked: bool = False  # whether the server has started a run over it for want of one


@dataclass
class Checked:
    """The last check of an open file: what its diagnostics, code actions and hovers come from."""

    path: Path
    shown: str  # the path as the CLI shows it (relative to the workspace folder)
    version: int | None
    text: str
    settings: Settings
    result: FileResult
    project: ProjectFile  # its place in the project, with the solved facts it was checked with
    state: PackageState | None  # the package's facts it was checked against (None: alone)


class Session:
    def __init__(self, cwd: Path, cache_dir: Path | None = None) -> None:
        self.cwd = cwd
        self.cache_dir = cache_dir  # `synclint server --cache-dir`; else as `synclint check` picks it
        self.packages: dict[tuple[str, str], Package] = {}
        self.reload()

    def reload(self) -> None:
        """Forget every setting and package state: a configuration file changed."""
        self.resolver = SettingsResolver(None, {}, self.cwd)
        self.packages = {}
        self._cache: Cache | None = None
        self._read: dict[str, tuple[int, int] | None] = {}  # files the settings came from, as they were
        self._baselines: dict[Path, Baseline] = {}  # read once each, until the next reload

    def settings(self, path: Path) -> Settings:
        """The settings of the file (ConfigError: its configuration is broken), read again when
        a file they came from changed (an editor that does not report changes to files it does
        not show: a broken configuration is read again each time anyway, as it is not kept)."""
        if any(_stat(name) != known for name, known in self._read.items()):
            self.reload()
        settings = self.resolver.for_path(path)
        for name in self.resolver.files_read()[1]:
            self._read.setdefault(name, _stat(name))
        return settings

    def cache(self) -> Cache:
        """The cache `synclint check` run from the workspace folder uses (ConfigError as `settings`)."""
        if self._cache is None:
            directory = self.cache_dir or os.environ.get("SYNCLINT_CACHE_DIR") or self.resolver.default().root / DEFAULT_DIR
            self._cache = Cache(Path(directory).absolute())
        return self._cache

    def package(self, path: Path, settings: Settings) -> Package | None:
        """The package of `path`, its state asked of the cache the first time (None: the file is
        in no package, or project analysis is off)."""
        if not settings.project_analysis:
            return None
        root = package_root(path)
        if root is None:
            return None
        key = (os.fspath(root), settings.cache_key())
        package = self.packages.get(key)
        if package is None:
            package = self.packages[key] = Package(root, settings)
        if not package.looked:
            package.looked = True
            package.state = package_state(path, settings, self.cache(), self.cwd)
        return package

    def check(self, path: Path, text: str, version: int | None) -> tuple[Checked, Package | None]:
        """Check the buffer `text` of the file at `path` (ConfigError: its configuration is
        broken); with the package it belongs to, whose state may still be missing."""
        settings = self.settings(path)
        if settings.is_excluded(relative_to_root(path, settings.root)):
            # As `synclint check --force-exclude`: a vendored file, or a library's opened from a
            # traceback (`site-packages` is excluded), is not the project's to fix.
            return Checked(path, display_path(path, self.cwd), version, text, settings, FileResult(str(path)),
                           ProjectFile(), None), None
        package = self.package(path, settings)
        state = package.state if package is not None else None
        result, project = check_unsaved(buffer_bytes(text), path, settings, state, self.cwd, self.cache())
        if settings.baseline is not None:
            findings, _ = self.baseline(settings.baseline).filter(result.findings, self.cwd)
            result = replace(result, findings=findings)
        shown = display_path(path, self.cwd)
        return Checked(path, shown, version, text, settings, result, project, state), package

    def baseline(self, path: Path) -> Baseline:
        """The baseline file at `path` (ConfigError: it cannot be read; a file the settings came
        from, so a change to it reloads them)."""
        baseline = self._baselines.get(path)
        if baseline is None:
            try:
                baseline = self._baselines[path] = Baseline.load(path)
            except BaselineError as exc:
                raise ConfigError(str(exc)) from None
        return baseline

    def refresh(self, package: Package) -> bool:
        """Take the package's state again from the cache, after a run over it: whether one was
        there (else the package keeps the state it had)."""
        state = package_state(package.root / "__init__.py", package.settings, self.cache(), self.cwd)
        if state is not None:
            package.state = state
        return state is not None

    @staticmethod
    def sees_new_facts(checked: Checked, package: Package) -> bool:
        """Whether the file checked as `checked` would now be checked with other facts of the
        rest of its package (its answers from the package's new state differ)."""
        if package.state is None or checked.state is package.state:
            return False
        if checked.state is None:
            return True
        summary = checked.result.summary
        if summary is None:
            return False
        index: ProjectIndex = package.state.index  # type: ignore[assignment]  # (cache.py keeps it untyped)
        now = index.answers_for(summary)
        before = checked.project.answers
        return (now.digest() if now else "") != (before.digest() if before else "")


def _stat(name: str) -> tuple[int, int] | None:
    try:
        st = os.stat(name)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def buffer_bytes(text: str) -> bytes:
    """A buffer's text as the bytes its file would hold: in the encoding its first two lines
    declare (PEP 263), else UTF-8, so that the engine decodes the same text back (a text the
    declared encoding cannot hold, which no save could write either, goes as UTF-8)."""
    head = "".join(text.splitlines(keepends=True)[:2]).encode("utf-8", "surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
        return text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    except (SyntaxError, LookupError, UnicodeEncodeError):
        return text.encode("utf-8", "surrogatepass")
