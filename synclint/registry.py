"""Finds rules: the built-in ones in `rules/` (shipped as `synclint.rules`) and a user's own.

Rules are found without registration: every module of the folder is imported and every
`Rule` subclass defined in it with a `code` is a rule.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import types
from functools import lru_cache
from pathlib import Path

from synclint.rule import Rule, validate_rule_class


class RuleLoadError(Exception):
    """A rule module could not be imported or declares a malformed rule."""


def _rules_in(module: types.ModuleType) -> list[type[Rule]]:
    found = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__ and "code" in vars(obj):
            found.append(obj)
    return found


@lru_cache(maxsize=None)
def builtin_rules() -> tuple[type[Rule], ...]:
    package = importlib.import_module("synclint.rules")
    rules: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"synclint.rules.{info.name}")
        rules.extend(_rules_in(module))
    return tuple(_checked(rules, "synclint.rules"))


def load_rule_folder(folder: Path) -> list[type[Rule]]:
    """Import every `*.py` file of a user's rule folder (`extend-rules`)."""
    if not folder.is_dir():
        raise RuleLoadError(f"extend-rules folder {folder} does not exist")
    rules: list[type[Rule]] = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        name = f"synclint_user_rules_{abs(hash(str(folder)))}.{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise RuleLoadError(f"cannot import rule file {path}")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # a user's module may raise anything on import
            raise RuleLoadError(f"rule file {path} raised on import: {type(exc).__name__}: {exc}") from exc
        rules.extend(_rules_in(module))
    return _checked(rules, str(folder))


def _checked(rules: list[type[Rule]], where: str) -> list[type[Rule]]:
    for rule in rules:
        problems = validate_rule_class(rule)
        if problems:
            raise RuleLoadError(f"rule {rule.__name__} in {where}: " + "; ".join(problems))
    return rules


def all_rules(extra: tuple[type[Rule], ...] = ()) -> dict[str, type[Rule]]:
    rules: dict[str, type[Rule]] = {}
    for rule in (*builtin_rules(), *extra):
        if rule.code in rules and rules[rule.code] is not rule:
            raise RuleLoadError(f"two rules share the code {rule.code}: {rules[rule.code].__name__} and {rule.__name__}")
        rules[rule.code] = rule
    return dict(sorted(rules.items()))
