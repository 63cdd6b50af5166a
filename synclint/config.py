"""Configuration: `[tool.synclint]` in the nearest pyproject.toml, or `--config FILE`.

Every key is validated: an unknown key or a value of the wrong type is an error that
names the key and the file. Command-line options override the file.
"""

from __future__ import annotations

import builtins
import difflib
import functools
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synclint.model import Confidence

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    from synclint.rule import Rule

OUTPUT_FORMATS = ("text", "concise", "json", "sarif", "github")
CONTEXTS = ("loop", "step", "interval", "init", "test", "code", "host", "never")


class ConfigError(Exception):
    """A configuration problem; the message names the file and the key."""


@dataclass(frozen=True)
class Key:
    type: type | tuple[type, ...]
    element: builtins.type | None = None  # for lists and dict values (`type` here: the field above)
    help: str = ""


CORE_KEYS: dict[str, Key] = {
    "select": Key(list, str, "rule codes or prefixes to enable (default: all)"),
    "extend-select": Key(list, str, "rule codes or prefixes to enable on top of `select`"),
    "ignore": Key(list, str, "rule codes or prefixes to disable"),
    "per-file-ignores": Key(dict, list, "glob -> codes to disable in matching files"),
    "exclude": Key(list, str, "globs of paths never checked (replaces the defaults)"),
    "extend-exclude": Key(list, str, "globs of paths never checked, on top of `exclude`"),
    "respect-gitignore": Key(bool, None, "skip files that .gitignore names"),
    "min-confidence": Key(str, None, "report only findings at least this sure: low, medium, high"),
    "unsafe-fixes": Key(bool, None, "apply fixes that may change behaviour"),
    "output-format": Key(str, None, "text, concise, json, sarif or github"),
    "allow-sync-contexts": Key(list, str, "context managers inside which syncs are meant"),
    "ignore-contexts": Key(list, str, f"finding contexts to drop: {', '.join(CONTEXTS)}"),
    "include-tests": Key(bool, None, "report findings in test code (tests/, test_*.py, *_test.py, conftest.py, "
                                     "functions named test_*), quiet by default"),
    "extend-rules": Key(list, str, "folders of your own rule modules"),
    "host-name-patterns": Key(list, str, "name globs of host values (default *_cpu, *_np, *_host, ...)"),
    "device-name-patterns": Key(list, str, "name globs of device tensors (default *_gpu, *_cuda, ...)"),
    "max-file-size": Key(int, None, "skip files larger than this many bytes, with a warning (0: no limit)"),
    "baseline": Key(str, None, "a baseline file (see --write-baseline): report only findings not in it"),
    "project-analysis": Key(bool, None, "follow syncs across files: properties, helpers, returns (see SYNC112)"),
    "runtime-report": Key(str, None, "a sync report (`synclint trace --report`, `pytest --sync-report`): "
                                     "findings it confirms ranked by measured wait, in `check` and the editor"),
    "line-length": Key(int, None, "the longest line a fix writes; a longer one is broken as black and ruff format "
                                  "break it (default: `line-length` of [tool.ruff] or [tool.black], else 88)"),
}

DEFAULT_LINE_LENGTH = 88  # black's and ruff's
MAX_LINE_LENGTH = 320  # ruff's

DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".synclint_cache", ".tox",
    ".venv", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist", "node_modules",
    "site-packages", "venv",
)


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one project root."""

    root: Path
    source: Path | None = None  # the file the settings came from
    select: tuple[str, ...] = ("SYNC",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    min_confidence: Confidence = Confidence.MEDIUM
    unsafe_fixes: bool = False
    output_format: str = "text"
    allow_sync_contexts: tuple[str, ...] = ("gpu_sync_allowed",)
    ignore_contexts: tuple[str, ...] = ()
    # A sync in a test slows no training step and no server: test code is quiet unless asked for.
    include_tests: bool = False
    extend_rules: tuple[Path, ...] = ()
    host_name_patterns: tuple[str, ...] | None = None
    device_name_patterns: tuple[str, ...] | None = None
    rule_options: tuple[tuple[str, Any], ...] = ()
    baseline: Path | None = None
    # Larger files are generated code (tables, protobufs): checking one takes minutes.
    max_file_size: int = 2_000_000
    # Index the packages of the checked files and follow syncs through calls and properties.
    project_analysis: bool = True
    runtime_report: Path | None = None
    # The longest line a fix writes: `line-length`, else the formatter's (`formatter_line_length`).
    line_length: int | None = None
    rules: tuple[type[Rule], ...] = field(default=(), compare=False)  # every known rule

    # ---- derived ---------------------------------------------------------------------

    def rule_option(self, key: str) -> Any:
        for name, value in self.rule_options:
            if name == key:
                return value
        for rule in self.rules:
            if key in rule.options:
                return rule.options[key].default
        raise KeyError(key)

    def enabled_rules(self) -> list[type[Rule]]:
        return [rule for rule in self.rules if self.is_enabled(rule.code)]

    def is_enabled(self, code: str) -> bool:
        chosen = _longest_prefix(code, (*self.select, *self.extend_select))
        dropped = _longest_prefix(code, self.ignore)
        return chosen > dropped if chosen >= 0 else False

    def ignored_in_file(self, relpath: str) -> set[str]:
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if _glob_match(relpath, pattern):
                ignored.update(codes)
        return ignored

    def is_excluded(self, relpath: str, is_dir: bool = False) -> bool:
        return glob_spec(self.exclude + self.extend_exclude).match_file(relpath + "/" if is_dir else relpath)

    def cache_key(self) -> str:
        """The part of the settings that changes a file's analysis. What only chooses which findings
        are shown (the selection, `min-confidence`, `per-file-ignores`, `ignore-contexts`,
        `include-tests`: synclint.view) is not part of it: the cache keeps every rule's findings at
        every confidence, and a run with another view filters them again without checking again."""
        return repr(
            (
                sorted(r.code for r in self.rules),
                self.allow_sync_contexts,
                self.host_name_patterns,
                self.device_name_patterns,
                self.rule_options,
                self.max_file_size,
                self.project_analysis,
                self.fix_line_length,
            )
        )


    @property
    def fix_line_length(self) -> int:
        return self.line_length or DEFAULT_LINE_LENGTH

    def view_key(self) -> str:
        """The part of the settings that chooses what is shown of the analysis (synclint.view)."""
        return repr((self.select, self.extend_select, self.ignore, self.per_file_ignores, int(self.min_confidence),
                     self.ignore_contexts, self.include_tests))


def _longest_prefix(code: str, selectors: tuple[str, ...]) -> int:
    best = -1
    for selector in selectors:
        if selector == "ALL":
            best = max(best, 0)
        elif code.startswith(selector):
            best = max(best, len(selector))
    return best


@functools.lru_cache(maxsize=4096)
def glob_spec(patterns: tuple[str, ...]) -> "GitIgnoreSpec":
    """Globs as git reads a .gitignore (pathspec): `*` stays within one folder, `**` crosses
    folders, a pattern without `/` matches a name at any depth, and a folder that matches
    takes everything under it along. One meaning for `exclude`, `extend-exclude` and
    `per-file-ignores` alike."""
    from pathspec import GitIgnoreSpec  # imported by runs that walk or match globs, not by replayed ones

    return GitIgnoreSpec.from_lines(patterns)


def _glob_match(relpath: str, pattern: str) -> bool:
    """Whether a path relative to the root, or a folder above it, matches the glob."""
    return glob_spec((pattern,)).match_file(relpath)


# --------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------


def read_toml_table(path: Path) -> dict[str, Any] | None:
    """The `[tool.synclint]` table of a pyproject.toml (None if absent), or of a synclint.toml."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("synclint")
    else:
        table = data.get("tool", {}).get("synclint", data)
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.synclint] must be a table")
    return table


def project_root(cwd: Path, config_file: Path | None = None) -> Path:
    """The root of the settings that apply in `cwd` (where the cache lives by default)."""
    if config_file is not None:
        return config_file.resolve().parent
    config = find_config(cwd.resolve())
    return config.parent if config is not None else unconfigured_root(cwd.resolve())


def unconfigured_root(directory: Path) -> Path:
    """The root of a project without a `[tool.synclint]` table, as ruff finds it: the nearest folder,
    from `directory` up, that holds `.git` or a `pyproject.toml`; else `directory` itself. A run from
    any subfolder then shares one cache, and excludes are read from the same place."""
    for folder in (directory, *directory.parents):
        if (folder / ".git").exists() or (folder / "pyproject.toml").is_file():
            return folder
    return directory


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.synclint] table, searching upward."""
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "synclint" in text and read_toml_table(candidate) is not None:
                return candidate
    return None


def _check_type(value: Any, key: str, spec: Key | Any, where: str) -> Any:
    expected = spec.type if isinstance(spec, Key) else spec
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool) and expected in (int, float)):
        raise ConfigError(f"{where}: `{key}` must be {_type_name(expected)}, not {_type_name(type(value))}")
    element = spec.element if isinstance(spec, Key) else None
    if element is not None and isinstance(value, list):
        for item in value:
            if not isinstance(item, element):
                raise ConfigError(f"{where}: every item of `{key}` must be {_type_name(element)}, found {item!r}")
    if element is not None and isinstance(value, dict):
        for sub_key, item in value.items():
            if not isinstance(item, element):
                raise ConfigError(f"{where}: `{key}.{sub_key}` must be {_type_name(element)}, found {item!r}")
    return value


def _type_name(t: type | tuple) -> str:
    names = {str: "a string", bool: "true or false", list: "a list", dict: "a table", int: "an integer", float: "a number"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)


def build_settings(table: dict[str, Any], root: Path, source: Path | None, base: Settings | None = None) -> Settings:
    """Validate a `[tool.synclint]` table and turn it into Settings."""
    from synclint.registry import RuleLoadError, all_rules, load_rule_folder  # libcst: not for a replayed run

    where = str(source) if source else "command line"
    settings = base or Settings(root=root)
    settings = replace(settings, root=root, source=source)
    # Rule folders come first: their rules may declare options that the table uses.
    builtin = set(all_rules().values())
    extra: tuple[type[Rule], ...] = tuple(rule for rule in settings.rules if rule not in builtin)
    if "extend-rules" in table:
        folders = _check_type(table["extend-rules"], "extend-rules", CORE_KEYS["extend-rules"], where)
        paths = tuple((root / f).resolve() for f in folders)
        try:
            extra += tuple(rule for folder in paths for rule in load_rule_folder(folder))
        except RuleLoadError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        settings = replace(settings, extend_rules=paths)
    try:
        rules = tuple(all_rules(extra).values())
    except RuleLoadError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    settings = replace(settings, rules=rules)
    rule_keys = {key: opt for rule in rules for key, opt in rule.options.items()}
    options = dict(settings.rule_options)
    for key, value in table.items():
        if key in CORE_KEYS:
            value = _check_type(value, key, CORE_KEYS[key], where)
            settings = _apply_core(settings, key, value, where)
        elif key in rule_keys:
            options[key] = _check_type(value, key, rule_keys[key].type, where)
        else:
            known = [*CORE_KEYS, *rule_keys]
            hint = difflib.get_close_matches(key, known, n=1)
            suffix = f" (did you mean `{hint[0]}`?)" if hint else ""
            raise ConfigError(f"{where}: unknown key `{key}` in [tool.synclint]{suffix}")
    settings = replace(settings, rule_options=tuple(sorted(options.items(), key=lambda kv: kv[0])))
    if settings.line_length is None:
        settings = replace(settings, line_length=formatter_line_length(root.resolve()))
    check_selectors(settings, where)
    return settings


def formatter_line_length(folder: Path) -> int | None:
    """The line length of the formatter configured for `folder`: the nearest `.ruff.toml`,
    `ruff.toml`, or `pyproject.toml` with a `[tool.ruff]` or `[tool.black]` table, searching
    upward as ruff does; 88 (their default) where that configuration names none. Another tool's
    file that cannot be read, or a value that is not a length, counts as no configuration."""
    for directory in (folder, *folder.parents):
        for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
            candidate = directory / name
            if not candidate.is_file():
                continue
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            tool = data.get("tool") if name == "pyproject.toml" else {"ruff": data}
            if not isinstance(tool, dict):
                continue
            for table in (tool.get("ruff"), tool.get("black")):
                if isinstance(table, dict):
                    value = table.get("line-length", table.get("line_length"))
                    usable = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_LINE_LENGTH
                    return value if usable else DEFAULT_LINE_LENGTH
    return None


def _apply_core(settings: Settings, key: str, value: Any, where: str) -> Settings:
    attr = key.replace("-", "_")
    if key == "min-confidence":
        try:
            return replace(settings, min_confidence=Confidence.parse(value))
        except ValueError as exc:
            raise ConfigError(f"{where}: `min-confidence`: {exc}") from None
    if key == "output-format":
        if value not in OUTPUT_FORMATS:
            raise ConfigError(f"{where}: `output-format` must be one of {', '.join(OUTPUT_FORMATS)}, not {value!r}")
        return replace(settings, output_format=value)
    if key == "per-file-ignores":
        items = tuple((pattern, tuple(codes)) for pattern, codes in value.items())
        for _, codes in items:
            for code in codes:
                if not isinstance(code, str):
                    raise ConfigError(f"{where}: `per-file-ignores` codes must be strings, found {code!r}")
        return replace(settings, per_file_ignores=items)
    if key == "ignore-contexts":
        unknown = [c for c in value if c not in CONTEXTS]
        if unknown:
            raise ConfigError(f"{where}: `ignore-contexts` knows {', '.join(CONTEXTS)}, not {unknown[0]!r}")
    if key == "extend-rules":
        return settings  # handled before the other keys
    if key == "max-file-size" and value < 0:
        raise ConfigError(f"{where}: `max-file-size` must be 0 (no limit) or a number of bytes, not {value}")
    if key == "line-length" and not 0 < value <= MAX_LINE_LENGTH:
        raise ConfigError(f"{where}: `line-length` must be a number of characters from 1 to {MAX_LINE_LENGTH}, not {value}")
    if key == "baseline":
        return replace(settings, baseline=(settings.root / value) if value else None)
    if key == "runtime-report":
        return replace(settings, runtime_report=(settings.root / value) if value else None)
    if isinstance(value, list):
        value = tuple(value)
    return replace(settings, **{attr: value})


def check_selectors(settings: Settings, where: str) -> None:
    codes = [rule.code for rule in settings.rules]
    groups = [("select", settings.select), ("extend-select", settings.extend_select), ("ignore", settings.ignore)]
    groups += [("per-file-ignores", codes_) for _, codes_ in settings.per_file_ignores]
    for key, selectors in groups:
        for selector in selectors:
            if selector == "ALL":
                continue
            if not any(code.startswith(selector) for code in codes):
                raise ConfigError(f"{where}: `{key}` names {selector!r}, which matches no rule (see `synclint rules`)")


# --------------------------------------------------------------------------------------
# Settings per directory, with command-line overrides
# --------------------------------------------------------------------------------------


class SettingsResolver:
    """Finds the settings for each file: its nearest configuration, plus overrides."""

    def __init__(self, config_file: Path | None, overrides: dict[str, Any], cwd: Path) -> None:
        self.overrides = overrides
        self.cwd = cwd
        self._by_config: dict[Path | None, Settings] = {}
        self._by_dir: dict[Path, Settings] = {}
        self.fixed: Settings | None = None
        if config_file is not None:
            if not config_file.is_file():
                raise ConfigError(f"{config_file}: no such configuration file")
            table = read_toml_table(config_file) or {}
            self.fixed = self._finish(build_settings(table, config_file.resolve().parent, config_file))

    def files_read(self) -> tuple[set[str], set[str]]:
        """The folders and files the settings so far came from: configuration files, baselines,
        and `extend-rules` folders with their modules."""
        folders: set[str] = set()
        files: set[str] = set()
        for settings in [*self._by_config.values(), *([self.fixed] if self.fixed else [])]:
            files.update(str(path) for path in (settings.source, settings.baseline, settings.runtime_report)
                         if path is not None)
            for folder in settings.extend_rules:
                for dirpath, dirnames, filenames in os.walk(folder):
                    folders.add(dirpath)
                    files.update(os.path.join(dirpath, name) for name in filenames if name.endswith(".py"))
        return folders, files

    def _finish(self, settings: Settings) -> Settings:
        if not self.overrides:
            return settings
        return build_settings(self.overrides, settings.root, None, base=settings) if self.overrides else settings

    def default(self) -> Settings:
        """The settings of the working directory (used for run-wide choices such as the output format)."""
        return self.for_path(self.cwd)

    def for_path(self, path: Path) -> Settings:
        if self.fixed is not None:
            return self.fixed
        directory = path if path.is_dir() else path.parent
        cached = self._by_dir.get(directory)  # as given first: resolving every file's folder is slow
        if cached is not None:
            return cached
        given, directory = directory, directory.resolve()
        cached = self._by_dir.get(directory)
        if cached is not None:
            self._by_dir[given] = cached
            return cached
        config = find_config(directory)
        settings = self._by_config.get(config)
        if settings is None:
            if config is None:
                settings = self._finish(build_settings({}, unconfigured_root(self.cwd.resolve()), None))
            else:
                table = read_toml_table(config) or {}
                settings = self._finish(build_settings(table, config.parent, config))
            self._by_config[config] = settings
        self._by_dir[directory] = self._by_dir[given] = settings
        return settings
