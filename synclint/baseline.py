"""A baseline: the findings a project already has, so that only new ones are reported.

`synclint check --write-baseline FILE` records the current findings; `--baseline FILE` (or
`baseline = "..."` in the configuration) reports only findings not in it, and counts the
entries no finding matches any more as stale, so the file can shrink with `--write-baseline`.

A finding's identity is its rule code, its file and the normalised text of the line it starts
on (whitespace collapsed), never its line number: lines moved by edits above it, and renames of
the function or class around it, keep it matched. Identical lines in one file are counted, not
told apart: with three baselined `x.item()` lines, a fourth is new. A file that was moved keeps
its entries when the old path no longer exists and the code and text match.

Paths are stored relative to the baseline file's folder, so the file works from any working
directory and on any checkout of the project.

A run sees only the files it checked (pre-commit passes the staged ones): only the entries of
those files, and of files gone from the folders it walked, can be stale (`Scope`), and writing
the baseline of some files keeps the entries of the others.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from synclint.model import Finding

FORMAT = "synclint-baseline"
VERSION = 1
PROBLEM_CODES = ("SYNC000", "SYNC001")  # parse and internal errors are never baselined


class BaselineError(Exception):
    """The baseline file cannot be read or written; the message names it."""


Key = tuple[str, str, str]  # code, path relative to the baseline's folder, normalised line


def normalise(line: str) -> str:
    return " ".join(line.split())


def _relative(filename: str, cwd: Path, folder: Path) -> str:
    path = Path(filename)
    if not path.is_absolute():
        path = cwd / path
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:  # another drive on Windows
        return path.as_posix()


def _key(finding: Finding, cwd: Path, folder: Path) -> Key:
    return finding.code, _relative(finding.filename, cwd, folder), normalise(finding.source_line)


@dataclass(frozen=True)
class Scope:
    """What a run looked at: the files it checked, and the folders it was given to walk. A
    baseline entry is the run's to judge when its file was checked, or no longer exists under
    one of those folders (deleted, or moved: see `Baseline.filter`)."""

    files: frozenset[str]  # real paths (the baseline's folder is resolved: a symlinked cwd must match it)
    folders: tuple[str, ...] = ()

    @classmethod
    def of(cls, checked: list[str], paths: list[Path], cwd: Path) -> "Scope":
        """The scope of a run from `cwd` that checked the files `checked` (as shown) of `paths`."""
        folders = tuple(os.path.realpath(cwd / p) for p in paths if (cwd / p).is_dir())
        return cls(frozenset(os.path.realpath(cwd / name) for name in checked), folders)

    def covers(self, path: Path) -> bool:
        name = os.path.realpath(path)
        if name in self.files:
            return True
        return not path.exists() and any(name.startswith(folder.rstrip(os.sep) + os.sep) for folder in self.folders)


def write_baseline(path: Path, findings: list[Finding], cwd: Path, scope: Scope | None = None) -> tuple[int, int]:
    """Record `findings` in `path` (atomically): how many were recorded, and how many entries of
    the baseline already there were kept, those of files outside `scope` (None: none kept)."""
    folder = path.resolve().parent
    counts = Counter(_key(f, cwd, folder) for f in findings if f.code not in PROBLEM_CODES)
    kept = 0
    if scope is not None and path.exists():
        try:
            before = Baseline.load(path)
        except BaselineError:
            before = None  # not a baseline: written over, as without one
        for key, n in (before.counts.items() if before is not None else ()):
            if not scope.covers(folder / key[1]):
                counts[key] += n
                kept += n
    entries = [
        {"code": code, "path": rel, "line": text, "count": n} for (code, rel, text), n in sorted(counts.items())
    ]
    data = json.dumps({"format": FORMAT, "version": VERSION, "findings": entries}, indent=1) + "\n"
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot write the baseline: {exc.strerror or exc}") from None
    return sum(counts.values()) - kept, kept


@dataclass
class Baseline:
    path: Path
    counts: Counter = field(default_factory=Counter)  # Key -> how many findings it allows

    @classmethod
    def load(cls, path: Path) -> "Baseline":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BaselineError(f"{path}: no such baseline file (write one with --write-baseline)") from None
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{path}: not a synclint baseline (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("findings"), list):
            raise BaselineError(f"{path}: not a synclint baseline (write one with --write-baseline)")
        if data.get("version") != VERSION:
            raise BaselineError(f"{path}: baseline version {data.get('version')!r} is not {VERSION}; write it again")
        counts: Counter = Counter()
        for entry in data["findings"]:
            try:
                key = (str(entry["code"]), str(entry["path"]), str(entry["line"]))
                counts[key] += int(entry.get("count", 1))
            except (KeyError, TypeError, ValueError):
                raise BaselineError(f"{path}: malformed entry {entry!r}") from None
        return cls(path, counts)

    def filter(self, findings: list[Finding], cwd: Path, scope: Scope | None = None) -> tuple[list[Finding], int]:
        """The findings the baseline does not cover, and how many of its entries matched nothing
        (stale): of those, only the entries `scope` covers count (None: all of them)."""
        folder = self.path.resolve().parent
        left = Counter(self.counts)
        new: list[Finding] = []
        unmatched: list[tuple[Finding, Key]] = []
        for finding in findings:  # sorted by file and line: the first occurrences match first
            if finding.code in PROBLEM_CODES:
                new.append(finding)
                continue
            key = _key(finding, cwd, folder)
            if left[key] > 0:
                left[key] -= 1
            else:
                unmatched.append((finding, key))
        # A moved file: entries of paths that no longer exist match the same code and text elsewhere.
        gone: dict[tuple[str, str], list[Key]] = {}
        for key, n in left.items():
            if n > 0 and not (folder / key[1]).exists():
                gone.setdefault((key[0], key[2]), []).append(key)
        for finding, key in unmatched:
            candidates = [k for k in gone.get((key[0], key[2]), ()) if left[k] > 0]
            if candidates:
                left[candidates[0]] -= 1
            else:
                new.append(finding)
        new.sort(key=lambda f: f.sort_key)
        return new, sum(n for key, n in left.items() if n > 0 and (scope is None or scope.covers(folder / key[1])))
