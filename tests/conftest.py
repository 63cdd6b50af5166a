"""Shared helpers: run the real CLI in a subprocess, check code in memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m synclint ARGS` as a user would, and return the finished process."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
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
