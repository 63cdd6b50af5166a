"""--fix and --diff: the file is rewritten exactly as documented, and never damaged."""

from __future__ import annotations

import os
import stat

import pytest

from conftest import run_cli

GUARDED = """import torch


def cast(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""
FIXED = """import torch


def cast(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    clamp_value = torch.finfo(x.dtype).max - offset
    x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""


def test_unsafe_fix_needs_the_flag(write, tmp_path):
    path = write("kernel.py", GUARDED)
    proc = run_cli("check", "--fix", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 1  # findings remain: the only fix is unsafe
    assert path.read_text() == GUARDED
    assert "Fixed 0 findings. 2 more fixable with --unsafe-fixes." in proc.stderr


def test_fix_rewrites_and_second_run_changes_nothing(write, tmp_path):
    path = write("kernel.py", GUARDED)
    proc = run_cli("check", "--fix", "--unsafe-fixes", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.read_text() == FIXED
    assert "Fixed 2 findings (SYNC101: 2)." in proc.stderr
    before = path.stat().st_mtime_ns
    proc = run_cli("check", "--fix", "--unsafe-fixes", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert path.read_text() == FIXED
    assert path.stat().st_mtime_ns == before  # unchanged content is not rewritten


def test_unsafe_fixes_from_config(write, tmp_path):
    path = write("kernel.py", GUARDED)
    write("pyproject.toml", "[tool.synclint]\nunsafe-fixes = true\n")
    assert run_cli("check", "--fix", "kernel.py", cwd=tmp_path).returncode == 0
    assert path.read_text() == FIXED


def test_exit_non_zero_on_fix(write, tmp_path):
    write("kernel.py", GUARDED)
    proc = run_cli("check", "--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 1


def test_diff_prints_and_writes_nothing(write, tmp_path):
    path = write("kernel.py", GUARDED)
    proc = run_cli("check", "--diff", "--unsafe-fixes", "kernel.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert path.read_text() == GUARDED
    assert proc.stdout.startswith("--- a/kernel.py\n+++ b/kernel.py\n@@ ")
    assert "-    if x.isinf().any() or x.isnan().any():\n" in proc.stdout
    assert "+    clamp_value = torch.finfo(x.dtype).max - offset\n" in proc.stdout
    proc = run_cli("check", "--diff", "kernel.py", cwd=tmp_path)  # safe fixes only: nothing to do
    assert proc.returncode == 0 and proc.stdout == ""


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda text: text.replace("\n", "\r\n").encode(), id="crlf"),
        pytest.param(lambda text: b"\xef\xbb\xbf" + text.encode(), id="bom"),
        pytest.param(lambda text: ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + text).encode("latin-1"), id="latin-1"),
        pytest.param(lambda text: text.rstrip("\n").encode(), id="no-trailing-newline"),
        pytest.param(lambda text: text.replace("    ", "\t").encode(), id="tabs"),
    ],
)
def test_fix_keeps_encoding_bom_and_line_endings(write, tmp_path, encode):
    path = write("kernel.py", encode(GUARDED))
    assert run_cli("check", "--fix", "--unsafe-fixes", "kernel.py", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == encode(FIXED)


def test_fix_keeps_the_file_mode(write, tmp_path):
    path = write("kernel.py", GUARDED)
    os.chmod(path, 0o750)
    run_cli("check", "--fix", "--unsafe-fixes", "kernel.py", cwd=tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert path.read_text() == FIXED
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".kernel")] == []  # no temporary left


def test_read_only_file_is_reported_not_written(write, tmp_path):
    path = write("kernel.py", GUARDED)
    os.chmod(path, 0o444)
    proc = run_cli("check", "--fix", "--unsafe-fixes", "kernel.py", cwd=tmp_path)
    assert "kernel.py: read-only; left as it is" in proc.stderr
    assert path.read_text() == GUARDED


def test_file_changed_between_read_and_write_is_not_clobbered(tmp_path):
    """write_atomically compares the bytes on disk with the bytes it fixed, just before the rename."""
    from synclint.fixes import write_atomically

    path = tmp_path / "kernel.py"
    path.write_text(GUARDED)
    path.write_text(GUARDED + "# edited by someone else meanwhile\n")
    assert write_atomically(path, GUARDED.encode(), FIXED.encode()) == "changed on disk while being fixed; left as it is"
    assert path.read_text().endswith("# edited by someone else meanwhile\n")


def test_killed_fix_leaves_every_file_as_it_was_or_fully_fixed(tmp_path):
    """SIGKILL mid-run (no clean-up possible): each file holds either its old or its new bytes."""
    import signal
    import subprocess
    import sys
    import time

    folder = tmp_path / "tree"
    folder.mkdir()
    count = 600
    for i in range(count):
        (folder / f"kernel_{i:03}.py").write_text(GUARDED)
    expected = FIXED.encode()
    proc = subprocess.Popen([sys.executable, "-m", "synclint", "check", "--fix", "--unsafe-fixes", "--exit-zero",
                             "tree"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if any(p.read_bytes() == expected for p in folder.glob("kernel_*.py")):
                break
            time.sleep(0.005)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: the worker processes too
        proc.wait()
    contents = [p.read_bytes() for p in sorted(folder.glob("kernel_*.py"))]
    assert len(contents) == count
    damaged = [c for c in contents if c not in (GUARDED.encode(), expected)]
    assert damaged == []
    fixed = contents.count(expected)
    assert 0 < fixed < count, fixed  # it really was killed mid-way
    # What a kill leaves behind is a hidden temporary, never a .py file a later run would check.
    assert all(not p.name.endswith(".py") for p in folder.iterdir() if p.name.startswith("."))
    again = run_cli("check", "--fix", "--unsafe-fixes", "tree", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert all(p.read_bytes() == expected for p in folder.glob("kernel_*.py"))
