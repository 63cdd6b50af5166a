"""The result cache: a file whose bytes, path, settings and synclint are unchanged is not checked again.

Entries are content-addressed: the name of an entry is the hash of everything that decides a
file's findings (its bytes, the path it is shown as, the settings that change results, and a
fingerprint of synclint's own code and of any `extend-rules` folder). An entry is never
modified once written, only created by an atomic rename, so two runs that share the cache
cannot corrupt it or read half an entry; the worst they do is both write the same entry.
Switching branches back and forth hits the cache both ways. `synclint clean` removes it.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import os
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path

from synclint import __version__

DEFAULT_DIR = ".synclint_cache"
FORMAT = 4  # bump when the pickled content changes shape


@dataclass(frozen=True)
class Entry:
    findings: list  # list[Finding]
    warnings: list  # list[str]: unknown noqa codes and the like, shown again on a hit
    summary: bytes | None = None  # the file's ModuleSummary for the project index, pickled, if it was parsed

    @classmethod
    def of(cls, findings: list, warnings: list, summary) -> "Entry":
        return cls(findings, warnings, None if summary is None else pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL))


def code_fingerprint(extra_folders: tuple[Path, ...] = ()) -> str:
    """Changes whenever synclint's code, its rules or a user's rule folder change (sizes and mtimes)."""
    import synclint

    folders = [Path(synclint.__file__).parent]
    rules = __import__("synclint.rules", fromlist=["__path__"])
    folders += [Path(p) for p in rules.__path__]
    folders += list(extra_folders)
    digest = hashlib.sha256(f"{__version__}:{FORMAT}".encode())
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(root, name))
                    digest.update(f"{root}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def load_pickle(handle):
    """`pickle.load`, with the cycle collector paused: unpickling a package state makes tens of
    thousands of objects, each allocation counting towards a collection that finds nothing
    (a third of the load time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.load(handle)
    finally:
        if was_enabled:
            gc.enable()


class Packed:
    """A mapping whose values are kept pickled, each unpickled when asked for: a run over one
    file of a package (pre-commit) reads that file's summary, not the thousands beside it."""

    def __init__(self, values: dict) -> None:
        self._pickled = {key: pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL) for key, value in values.items()}

    def get(self, key, default=None):
        data = self._pickled.get(key)
        return default if data is None else pickle.loads(data)


@dataclass(frozen=True)
class ProjectSnapshot:
    """The project index a run ended with, keyed by every indexed file's entry key: a run over
    the same files (one of them, as pre-commit gives) starts from it instead of from each
    file's entry."""

    index: object  # synclint.project.ProjectIndex
    summaries: Packed  # shown path -> ModuleSummary


def listing(folder: str) -> tuple[str, ...]:
    """The names in `folder`, sorted: what `PackageState.folders` keeps of each (OSError: unreadable)."""
    return tuple(sorted(os.listdir(folder)))


@dataclass(frozen=True)
class PackageState:
    """What the last run over a package (all of it, or some files with the rest indexed) knew of
    it, for a run over some of its files (pre-commit after an edit): the solved index, each
    file's summary, and the multimodal fields each module declares. The files not checked are
    taken as that run saw them while they and the folders are unchanged (`is_current`): a
    `stat` per file instead of reading and indexing them."""

    package_files: frozenset  # absolute paths of the package's Python files
    files: dict  # absolute path -> replay.Signature: the package's files, and the marker files above them
    folders: dict  # walked folder -> its entry names: a file added, removed or renamed makes the state stale
    index: object  # synclint.project.ProjectIndex, solved over every file of the run (ProjectIndex.snapshot)
    declarations: dict  # module -> project.field_declarations, of the modules that declare any
    summaries: Packed  # shown path -> ModuleSummary (ProjectIndex.snapshot's)

    def is_current(self, checked: set[str]) -> bool:
        """Whether every file but the `checked` ones, and every folder, is as the run saw it."""
        from synclint.replay import signature

        try:
            return (all(listing(folder) == names for folder, names in self.folders.items())
                    and all(signature(path) == known for path, known in self.files.items() if path not in checked))
        except OSError:
            return False


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.entries = directory / f"v{FORMAT}"
        self._fingerprints: dict[tuple, str] = {}
        self._settings_keys: dict[int, tuple[object, str]] = {}  # id -> (settings, its cache_key())
        self._digests: dict[str, bytes] = {}  # path -> sha256 of its bytes as this run read them
        self.writable = True

    def for_run(self) -> "Cache":
        """This cache, for one run: the files it reads are read once (`read`, `digest`)."""
        run = copy.copy(self)
        run._digests = {}
        return run

    def read(self, path: Path) -> bytes:
        """The file's bytes; the digest of what was read is kept for `digest`."""
        data = Path(path).read_bytes()
        self._digests[os.fspath(path)] = hashlib.sha256(data).digest()
        return data

    def digest(self, path: Path) -> bytes:
        """The digest of the file's bytes, read once in this run (OSError: it cannot be read)."""
        known = self._digests.get(os.fspath(path))
        if known is None:
            self.read(path)
            known = self._digests[os.fspath(path)]
        return known

    def key(self, data: bytes, shown: str, settings, mode_key: str) -> str:
        """The name of the entry of a file whose bytes (or their `digest`) are `data`."""
        extra = tuple(settings.extend_rules)
        fingerprint = self._fingerprints.get(extra)
        if fingerprint is None:
            fingerprint = self._fingerprints[extra] = code_fingerprint(extra)
        digest = hashlib.sha256()
        known = self._settings_keys.get(id(settings))
        if known is None or known[0] is not settings:
            known = self._settings_keys[id(settings)] = (settings, settings.cache_key())  # one per folder's settings
        for part in (fingerprint, known[1], mode_key, shown):
            digest.update(part.encode("utf-8", "surrogateescape"))
            digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.entries / key[:2] / key[2:]

    def get(self, key: str, kind: type = Entry):
        """The entry stored under `key` if it is a `kind` (an `Entry`, or a `ProjectSnapshot`)."""
        try:
            with open(self._path(key), "rb") as handle:
                entry = load_pickle(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None  # missing, or written by another version: a miss
        return entry if isinstance(entry, kind) else None

    def put(self, key: str, entry) -> None:
        if not self.writable:
            return
        path = self._path(key)
        try:
            if not self.directory.exists():
                self._create()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(entry, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            self.writable = False  # a read-only checkout: run without storing, say nothing

    def _create(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / ".gitignore").write_text("# Created by synclint\n*\n")
        (self.directory / "CACHEDIR.TAG").write_text(
            "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by synclint.\n"
        )


def clean(directory: Path) -> bool:
    """Remove the cache folder; False when there was none."""
    import shutil

    if not directory.exists():
        return False
    if not (directory / "CACHEDIR.TAG").exists() and not (directory / f"v{FORMAT}").exists():
        raise OSError(f"{directory} does not look like a synclint cache; not removing it")
    shutil.rmtree(directory)
    return True
