"""The fixtures: finding them, fixing `before.py` with the real fixer, importing both versions.

A fixture folder (`fixtures/SYNC102/`) holds `before.py` (the kernels as written), `after.py`
(what the fixer must turn them into; absent for rules without a fix), and optionally a
`pyproject.toml` with the fixer's configuration. `before.py` defines `KERNELS`,
`make_inputs(device)` and, where a kernel is an exception, `VERIFY_NOTES`:

    VERIFY_NOTES = {
        "kernel": "why the fixed kernel may still sync, or why the original shows none",
        "other": {"syncs": "...", "outputs": "why the outputs may differ",
                  "tolerance": {"rtol": 1e-3, "atol": 1e-5}, "cpu": "what the CPU simulation cannot see"},
    }

A plain string is the "syncs" reason. No torch here: importing a fixture module imports it.
"""

from __future__ import annotations

import difflib
import linecache
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

CODE = re.compile(r"^[A-Z]+[0-9]+$")
NOTE_KEYS = {"syncs", "outputs", "tolerance", "cpu"}


class FixtureError(Exception):
    """A target that names no fixture, or a fixture folder without before.py."""


def default_root(cwd: Path) -> Path:
    """`./fixtures` if it holds fixtures; else those installed with synclint (the wheel ships
    the checkout's fixtures/ as synclint/fixtures); else the checkout's, beside the synclint
    package (an editable install, or synclint run from its checkout)."""
    local = cwd / "fixtures"
    if _holds_fixtures(local):
        return local
    package = Path(__file__).resolve().parents[1]
    installed = package / "fixtures"
    if _holds_fixtures(installed):
        return installed
    return package.parent / "fixtures"


def _holds_fixtures(folder: Path) -> bool:
    try:
        return folder.is_dir() and any((p / "before.py").is_file() for p in folder.iterdir() if p.is_dir())
    except OSError:
        return False


def resolve(targets: list[str], root: Path) -> list[Path]:
    """Fixture folders for rule codes (`SYNC101`, looked up under `root`) or folder paths; all if none."""
    if not targets:
        if not root.is_dir():
            raise FixtureError(f"no fixtures folder at {root} (name fixture folders, or reinstall synclint: its "
                               "wheel holds them)")
        return sorted(p for p in root.iterdir() if (p / "before.py").is_file())
    folders: list[Path] = []
    for target in targets:
        path = Path(target)
        if path.is_dir():
            folder = path
        elif CODE.match(target.upper()) and (root / target.upper()).is_dir():
            folder = root / target.upper()
        else:
            raise FixtureError(f"{target!r} is neither a fixture folder nor a rule code with a folder in {root}")
        if not (folder / "before.py").is_file():
            raise FixtureError(f"{folder} has no before.py")
        if folder.resolve() not in [f.resolve() for f in folders]:
            folders.append(folder)
    return folders


@dataclass
class Fixture:
    folder: Path
    code: str
    before_text: str
    after_text: str | None  # after.py, None for a rule without a fix
    fixed_text: str | None  # what the fixer made of before.py (None if it failed)
    fixer_problem: str | None = None

    @property
    def has_fix(self) -> bool:
        return self.after_text is not None

    @property
    def fixer_matches(self) -> bool:
        expected = self.after_text if self.after_text is not None else self.before_text
        return self.fixed_text == expected

    def kernels_changed_by_fixer_mismatch(self, kernels: tuple[str, ...]) -> set[str]:
        """The kernels a fixer/after.py mismatch touches: those whose own `def` differs, or all of
        them if the difference lies outside the kernels (a helper, an import, make_inputs)."""
        if self.fixer_matches:
            return set()
        expected = self.after_text if self.after_text is not None else self.before_text
        try:
            ours, theirs = _top_level_sources(self.fixed_text or ""), _top_level_sources(expected)
        except SyntaxError:
            return set(kernels)
        differing = {name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name)}
        return differing if differing <= set(kernels) else set(kernels)

    def fixer_diff(self, limit: int = 60) -> str:
        expected = self.after_text if self.after_text is not None else self.before_text
        lines = list(difflib.unified_diff(
            expected.splitlines(keepends=True), (self.fixed_text or "").splitlines(keepends=True),
            fromfile=f"{self.code}/{'after.py' if self.after_text is not None else 'before.py'}",
            tofile=f"{self.code}/before.py fixed by synclint",
        ))
        if len(lines) > limit:
            lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)\n"]
        return "".join(lines)


def _top_level_sources(text: str) -> dict[str, str]:
    """Source of each top-level def/class by name; everything else under the key "<module>"."""
    import ast

    tree = ast.parse(text)
    sources: dict[str, str] = {}
    rest = []
    for node in tree.body:
        segment = ast.get_source_segment(text, node, padded=True) or ""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            sources[node.name] = segment
        else:
            rest.append(segment)
    sources["<module>"] = "\n".join(rest)
    return sources


def run_fixer(folder: Path, data: bytes) -> str:
    """The real fixer, unsafe fixes included, with the folder's own configuration."""
    from synclint.config import SettingsResolver
    from synclint.fixes import fix_text
    from synclint.source import decode

    settings = SettingsResolver(None, {}, folder).for_path(folder / "before.py")
    return fix_text(decode(data), "before.py", settings, unsafe=True).text


def load(folder: Path) -> Fixture:
    before_path, after_path = folder / "before.py", folder / "after.py"
    data = before_path.read_bytes()
    from synclint.source import decode

    before_text = decode(data).text
    after_text = decode(after_path.read_bytes()).text if after_path.is_file() else None
    fixture = Fixture(folder, folder.name, before_text, after_text, None)
    try:
        fixture.fixed_text = run_fixer(folder, data)
    except Exception as exc:  # the fixer failing is a finding of the verifier, not a crash
        fixture.fixer_problem = f"the fixer raised {type(exc).__name__}: {exc}"
    return fixture


def exec_module(text: str, filename: str, name: str) -> types.ModuleType:
    """Import source text as a module whose frames and tracebacks name `filename`."""
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module  # dataclasses look their module up here
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    try:
        exec(compile(text, filename, "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def forget_module(module: types.ModuleType) -> None:
    sys.modules.pop(module.__name__, None)


def notes_of(module: types.ModuleType) -> dict[str, dict]:
    """VERIFY_NOTES, each entry as a dict with keys among NOTE_KEYS."""
    raw = getattr(module, "VERIFY_NOTES", None) or {}
    if not isinstance(raw, dict):
        raise FixtureError(f"{module.__file__}: VERIFY_NOTES must be a dict of kernel name to reason")
    notes: dict[str, dict] = {}
    for kernel, note in raw.items():
        if isinstance(note, str):
            note = {"syncs": note}
        if not isinstance(note, dict) or not set(note) <= NOTE_KEYS:
            raise FixtureError(f"{module.__file__}: VERIFY_NOTES[{kernel!r}] must be a reason or a dict with keys "
                               f"among {sorted(NOTE_KEYS)}")
        notes[kernel] = note
    return notes
