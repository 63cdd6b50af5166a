"""Test code is quiet by default: a sync in a test slows no training step and no server.

The `test` context (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`, functions named
`test_*`) is left out unless `--include-tests` or `include-tests = true` brings it back, and
the summary line says how many findings were left out that way.
"""

from __future__ import annotations

import pytest
from conftest import run_cli

SYNC = "import torch\n\n\ndef {name}():\n    x = torch.ones(3, device='cuda')\n    return x.sum().item()\n"
MODEL = SYNC.format(name="step")


def codes_and_files(proc) -> list[str]:
    return sorted(line.split(":")[0] for line in proc.stdout.splitlines() if ": SYNC" in line)


@pytest.mark.parametrize("path", ["tests/helpers.py", "test/a.py", "pkg/testing/a.py", "test_model.py",
                                  "model_test.py", "conftest.py", "pkg/tests/deep/conftest.py"])
def test_test_files_are_quiet_by_default(write, tmp_path, path):
    write("model.py", MODEL)
    write(path, MODEL)
    proc = run_cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert proc.returncode == 1 and codes_and_files(proc) == ["model.py"]
    assert "Found 1 finding: 1 per step. (1 finding in test code left out: `--include-tests` shows them.)" in proc.stdout
    shown = run_cli("check", "--output-format", "concise", "--include-tests", ".", cwd=tmp_path)
    assert codes_and_files(shown) == sorted(["model.py", path])
    assert "Found 2 findings: 1 per step, 1 in tests." in shown.stdout and "left out" not in shown.stdout


def test_test_functions_are_quiet_in_any_file(write, tmp_path):
    write("model.py", MODEL + "\n\n" + SYNC.format(name="test_step"))
    proc = run_cli("check", "--output-format", "concise", "model.py", cwd=tmp_path)
    assert [line.split(":")[1] for line in proc.stdout.splitlines() if ": SYNC" in line] == ["6"]
    assert "(1 finding in test code left out" in proc.stdout


def test_only_test_code_all_checks_pass_and_the_line_says_what_was_left_out(write, tmp_path):
    write("tests/test_a.py", MODEL)
    proc = run_cli("check", ".", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == ("All checks passed! (1 finding in test code left out: `--include-tests` shows "
                                   "them.)")
    assert run_cli("check", "--include-tests", ".", cwd=tmp_path).returncode == 1


def test_the_setting_brings_tests_back_and_the_flag_overrides_it(write, tmp_path):
    write("tests/test_a.py", MODEL)
    write("pyproject.toml", "[tool.synclint]\ninclude-tests = true\n")
    assert run_cli("check", ".", cwd=tmp_path).returncode == 1
    assert run_cli("check", "--no-include-tests", ".", cwd=tmp_path).returncode == 0
    write("pyproject.toml", "[tool.synclint]\ninclude-tests = true\nignore-contexts = [\"test\"]\n")
    proc = run_cli("check", ".", cwd=tmp_path)  # ignore-contexts says more: left out, and counted as its doing
    assert proc.returncode == 0 and proc.stdout.strip() == "All checks passed! (1 finding left out by `ignore-contexts`.)"
    write("pyproject.toml", "[tool.synclint]\ninclude-tests = \"yes\"\n")
    proc = run_cli("check", ".", cwd=tmp_path)
    assert proc.returncode == 2 and "`include-tests` must be true or false" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_left_out_findings_follow_the_rest_of_the_view(write, tmp_path):
    """Only what the selection and confidence would show is counted as left out."""
    write("tests/test_a.py", MODEL)
    assert "left out" not in run_cli("check", "--select", "SYNC101", ".", cwd=tmp_path).stdout
    stats = run_cli("check", "--statistics", ".", cwd=tmp_path).stdout
    assert stats == "     0\ttotal\t    1 more in test code left out (`--include-tests` shows them)\n"


def test_machine_formats_hold_only_the_findings(write, tmp_path):
    write("tests/test_a.py", MODEL)
    proc = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]"
