"""Replaying a check whose inputs have not changed: the warm run, without parsing or unpickling.

What `synclint check` prints depends on its command line, the working directory, synclint's own
code and the files and folders it looked at: the checked files, the package files that project
analysis indexed, the folders it walked (adding or removing a file changes its folder's
modification time), and, in those folders and their parents, the files whose presence or text
changes settings or discovery (`pyproject.toml`, `ruff.toml`, `.gitignore`, `.git`, `__init__.py`).

After a check, a record keeps the `os.stat` signature of each of those paths and what the run
printed. The next run of the same command, in the same folder, whose inputs all have the same
signature prints the same output and exits with the same code, without importing libcst,
reading a source file or opening a cache entry. A file is taken as unchanged when its
modification time, size, inode and mode are: the trade ruff and git make. As git does with
"racily clean" files, a record is not kept when an input was modified less than two seconds
before the run started: within the file system's time granularity an edit could leave the
signature as it was. The per-file cache (synclint.cache) then answers the next run.

Records are written by atomic rename under the cache folder, like every entry there.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from synclint.cache.signatures import Signature, signature
from synclint.cache.store import FORMAT, code_fingerprint, read_pickle, write_atomically

RACY_NS = 2_000_000_000
# What decides how output looks (color, width) or where the cache is, besides the command line.
ENVIRONMENT = ("SYNCLINT_CACHE_DIR", "CI", "NO_COLOR", "FORCE_COLOR", "TERM", "COLUMNS", "TTY_COMPATIBLE",
               "TTY_INTERACTIVE", "GITHUB_ACTIONS")
# Files whose presence or text in a folder (or a parent) changes settings, discovery or packages
# (a ruff configuration gives the line length of fixes: config.formatter_line_length).
MARKERS = ("pyproject.toml", "ruff.toml", ".ruff.toml", ".gitignore", ".git", "__init__.py")

@dataclass(frozen=True)
class Record:
    inputs: dict[str, Signature]
    stdout: str
    stderr: str
    output_file: tuple[str, str] | None  # (path, text) of --output-file
    exit_code: int

    def is_current(self) -> bool:
        return all(signature(path) == known for path, known in self.inputs.items())

    def play(self) -> int:
        if self.output_file is not None:
            path, text = self.output_file
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
        sys.stdout.write(self.stdout)
        sys.stdout.flush()
        sys.stderr.write(self.stderr)
        return self.exit_code


def command_key(argv: list[str], cwd: Path) -> str:
    """What must be equal for two runs to print the same thing, when their inputs are equal."""
    digest = hashlib.sha256(f"replay:{FORMAT}:{code_fingerprint()}".encode())
    parts = [os.fspath(cwd), *argv, "\0env", *(f"{name}={os.environ.get(name, '')}" for name in ENVIRONMENT),
             f"tty={_isatty(sys.stdout)}{_isatty(sys.stderr)}"]
    if _isatty(sys.stdout):
        import shutil

        parts.append(f"width={shutil.get_terminal_size().columns}")
    for part in parts:
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Replays:
    """The records of one cache folder."""

    def __init__(self, cache_dir: Path, key: str) -> None:
        self.path = cache_dir / f"v{FORMAT}" / "replay" / key

    def load(self) -> Record | None:
        record = read_pickle(self.path)
        return record if isinstance(record, Record) and record.is_current() else None

    def save(self, record: Record, started_ns: int) -> bool:
        """Keep `record` unless an input changed too recently to trust its signature."""
        if any(sig is not None and sig[0] > started_ns - RACY_NS for sig in record.inputs.values()):
            return False
        try:
            write_atomically(self.path, record)
        except OSError:
            return False  # a read-only cache: the next run checks again
        return True


def inputs_of(folders: Iterable[str], files: Iterable[str], known: dict[str, Signature] | None = None
              ) -> dict[str, Signature]:
    """The signatures that decide a run: the walked `folders`, the read `files`, and the marker
    files of their folders and every parent folder. `known`: signatures the run took (absolute
    paths), not taken again."""
    known = known or {}
    inputs: dict[str, Signature] = {}
    walked = {os.path.abspath(folder) for folder in folders}
    # The files the run read itself come first: when a record is out of date, it is most often
    # because one of them changed, and `Record.is_current` stops at the first change.
    read = sorted({os.path.abspath(f) for f in files}, key=lambda path: path in known)
    for path in [*read, *walked]:
        inputs[path] = known[path] if path in known else signature(path)
    parents: set[str] = set()
    for path in [*walked, *read]:
        folder = path if path in walked else os.path.dirname(path)
        while folder not in parents:
            parents.add(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    for folder in parents:
        for name in MARKERS:
            marker = os.path.join(folder, name)
            if marker not in inputs:
                inputs[marker] = signature(marker)
    return inputs


class _Tee(io.TextIOBase):
    """A text stream that writes through to `stream` and keeps a copy."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return _isatty(self.stream)

    @property
    def uncaptured(self):
        """The stream written through to, for what must not be recorded (synclint.progress)."""
        return self.stream

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self):  # type: ignore[override]  # TextIOBase's is read-only too at runtime; typeshed says writable
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self):  # type: ignore[override]  # (as encoding)
        return getattr(self.stream, "errors", "strict")


@contextmanager
def captured() -> Iterator[Callable[[], tuple[str, str]]]:
    """sys.stdout and sys.stderr, written through and copied: yields a function giving the copies."""
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield lambda: (out.copy.getvalue(), err.copy.getvalue())
    finally:
        sys.stdout, sys.stderr = out.stream, err.stream
