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
from pathlib import Path

from synclint import __version__

DEFAULT_DIR = ".synclint_cache"
FORMAT = 12  # bump when the pickled content changes shape (12: the call graph's facts, Evidence.loop)
# What a stored pickle that another version of synclint wrote can raise when read: a miss.
UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError)


def code_fingerprint(extra_folders: tuple[Path, ...] = ()) -> str:
    """Changes whenever synclint's code, its rules or a user's rule folder change (sizes and mtimes)."""
    import synclint

    folders = [Path(synclint.__file__).parent]
    rules = __import__("synclint.rules", fromlist=["__path__"])
    folders += [Path(p) for p in rules.__path__]
    folders += list(extra_folders)
    from synclint.policy import UNCALIBRATED

    # The confidence a finding is kept with depends on the policy's table being in force or not.
    digest = hashlib.sha256(f"{__version__}:{FORMAT}:{bool(os.environ.get(UNCALIBRATED))}".encode())
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


def write_atomically(path: Path, value: object) -> None:
    """Pickle `value` into `path` by an atomic rename: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_pickle(path: Path) -> object | None:
    """The value pickled in `path`; None when it is missing or not readable by this version."""
    try:
        with open(path, "rb") as handle:
            return load_pickle(handle)
    except UNREADABLE:
        return None


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

    def get(self, key: str, kind: type):
        """The entry stored under `key` if it is a `kind` (an `Entry`, a `PackageState`, ...)."""
        entry = read_pickle(self._path(key))
        return entry if isinstance(entry, kind) else None

    def put(self, key: str, entry) -> None:
        if not self.writable:
            return
        try:
            if not self.directory.exists():
                self._create()
            write_atomically(self._path(key), entry)
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
