"""Shared helpers: run the CLI in this process (or, where the process itself is what is tested,
in a subprocess), check code in memory."""

from __future__ import annotations

import os

# Rules and the engine are tested under the uncalibrated policy (the device model's certainty is the
# confidence): what they check must not change when bench/calibrate.py is given more labelled data.
# tests/test_policy.py checks the calibrated table and the policy's use of it.
os.environ["SYNCLINT_UNCALIBRATED"] = "1"

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from synclint import cli

REPO = Path(__file__).resolve().parent.parent
CLI_ENVIRONMENT = {"NO_COLOR": "1", "COLUMNS": "200"}


@dataclass
class CliResult:
    """What a run of the CLI gave: as `subprocess.CompletedProcess` has it."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _text_stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream over bytes, with a `.buffer`, as the standard streams have."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", newline=None)


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None) -> CliResult:
    """Run `synclint ARGS` as `cli.main` in this process, from `cwd`, with its own standard
    streams: what a user would see, without starting a Python process per call."""
    out, err = _text_stream(), _text_stream()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdin = _text_stream((stdin or "").encode("utf-8", "surrogateescape"))
    sys.stdout, sys.stderr = out, err
    try:
        with _environment({**CLI_ENVIRONMENT, **(env or {})}), contextlib.chdir(cwd or os.getcwd()):
            code = cli.main(list(args))
    except SystemExit as exc:  # argparse's --help and --version leave this way
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
    results = []
    for stream in (out, err):
        stream.flush()
        results.append(stream.buffer.getvalue().decode("utf-8", "surrogateescape"))
    return CliResult(code, *results)


def run_process(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None
                ) -> subprocess.CompletedProcess:
    """Run `python -m synclint ARGS` in a new process: for what only a process shows (the entry
    point, its exit, pipes, what it imports)."""
    full_env = {**os.environ, **CLI_ENVIRONMENT, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "synclint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )


def run_json(*args: str, cwd: Path | None = None) -> tuple[int, list[dict]]:
    proc = run_cli(*args, "--output-format", "json", cwd=cwd)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else []


@pytest.fixture
def write(tmp_path: Path):
    """Write files under tmp_path: write("a.py", "code") -> path."""

    def _write(name: str, text: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return _write
