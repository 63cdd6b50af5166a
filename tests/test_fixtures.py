"""The fixture kernels: their diagnostics are snapshots, and the fixer turns before.py into after.py.

Set SYNCLINT_UPDATE_SNAPSHOTS=1 to rewrite the snapshots after an intended change, then review the diff.
"""

from __future__ import annotations

import os
import shutil

import pytest

from conftest import REPO, run_cli

FIXTURES = sorted(p for p in (REPO / "fixtures").iterdir() if (p / "before.py").is_file())
UPDATE = os.environ.get("SYNCLINT_UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("folder", FIXTURES, ids=lambda p: p.name)
def test_fixture_diagnostics_match_the_snapshot(folder):
    proc = run_cli("check", "before.py", "--output-format", "concise", "--min-confidence", "low", cwd=folder)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    snapshot = folder / "expected.txt"
    if UPDATE:
        snapshot.write_text(proc.stdout, encoding="utf-8")
    assert proc.stdout == snapshot.read_text(encoding="utf-8")
    # Every fixture shows its own rule.
    assert f": {folder.name} " in proc.stdout


@pytest.mark.parametrize("folder", [f for f in FIXTURES if (f / "after.py").is_file()], ids=lambda p: p.name)
def test_fixer_turns_before_into_after(folder, tmp_path):
    for item in folder.iterdir():
        if item.name in ("before.py", "pyproject.toml"):
            shutil.copy(item, tmp_path / item.name)
    proc = run_cli("check", "--fix", "--unsafe-fixes", "before.py", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "before.py").read_text(encoding="utf-8") == (folder / "after.py").read_text(encoding="utf-8")
    # A second run changes nothing.
    again = run_cli("check", "--fix", "--unsafe-fixes", "before.py", cwd=tmp_path)
    assert "Fixed 0 findings" in again.stderr


def test_what_the_fixed_kernels_still_report_says_why_on_its_line():
    """The quick start checks fixtures/: a finding in an after.py (a fixed kernel) is a sync no
    automatic fix removes, and its line says so (`# after the fix: ...`), as the report shows it."""
    proc = run_cli("check", "fixtures", "--output-format", "concise", cwd=REPO)
    assert "Traceback" not in proc.stderr
    left = [line for line in proc.stdout.splitlines() if "/after.py:" in line]
    assert left  # (the fixtures do keep some: a loop on a device condition, nonzero, ...)
    for line in left:
        path, row = line.split(":")[:2]
        source = (REPO / path).read_text(encoding="utf-8").splitlines()[int(row) - 1]
        assert "# after the fix: " in source, f"{line}\n  {source}"
