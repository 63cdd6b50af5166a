"""What a user meets in the first hour, as ruff's CLI has it: a misspelt subcommand or option gets
a tip, `--diff` is a patch `git apply` takes as it is, and source on standard input that imports
the files around it says what it misses without `--stdin-filename`."""

from __future__ import annotations

import subprocess

from conftest import run_cli

HELPERS = "import torch\n\n\ndef positions(n, device):\n    return torch.tensor([n], device=device, dtype=torch.long)\n"
TRAIN = """import torch

from pkg.helpers import positions


def run(model, loader):
    device = torch.device("cuda")
    for batch in loader:
        pos = positions(len(batch), device)
        model(batch.to(device), pos)
"""
GUARDED = """import torch


def cast_overflow_tensors(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x
"""


def _package(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)


def test_a_misspelt_subcommand_gets_a_tip_and_checks_nothing(tmp_path):
    _package(tmp_path)
    proc = run_cli("chek", "pkg", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("synclint: error: unrecognized subcommand 'chek' (and no file or folder of that name); "
                           "did you mean `synclint check`?\n")
    # A folder of that name is what the user meant: it is checked (`synclint PATHS` is `synclint check PATHS`).
    (tmp_path / "chek").mkdir()
    (tmp_path / "chek" / "model.py").write_text(GUARDED)
    checked = run_cli("chek", "--output-format", "concise", "--min-confidence", "low", cwd=tmp_path)
    assert checked.returncode == 1 and checked.stdout.startswith("chek/model.py:5:8: SYNC101 ")
    # A word close to no subcommand is a path, as before: a missing one is an error that says so.
    missing = run_cli("models", cwd=tmp_path)
    assert missing.returncode == 2 and "models: no such file or directory" in missing.stderr


def test_a_misspelt_option_gets_a_tip(tmp_path):
    proc = run_cli("check", "--fxi", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "synclint: error: unrecognized arguments: --fxi; did you mean --fix?\n")
    proc = run_cli("check", "--output-fromat=json", ".", cwd=tmp_path)
    assert proc.stderr.endswith("; did you mean --output-format?\n")
    proc = run_cli("check", "--zzz", ".", cwd=tmp_path)  # nothing close: no tip
    assert proc.stderr == "synclint: error: unrecognized arguments: --zzz\n"


def test_diff_has_git_headers_and_git_apply_takes_it_as_it_is(tmp_path):
    (tmp_path / "models").mkdir()
    path = tmp_path / "models" / "kernel.py"
    path.write_text(GUARDED)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = run_cli("check", "--diff", "--unsafe-fixes", "models", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.startswith("--- a/models/kernel.py\n+++ b/models/kernel.py\n@@ -2,7 +2,6 @@\n")
    (tmp_path / "fix.patch").write_text(proc.stdout)
    applied = subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert "    clamp_value = torch.finfo(x.dtype).max - offset\n" in path.read_text()
    assert "isinf" not in path.read_text()


def test_stdin_without_a_file_name_warns_when_it_imports_the_files_around_it(tmp_path):
    _package(tmp_path)
    named = run_cli("check", "--output-format", "concise", "--stdin-filename", "pkg/train.py", "-",
                    cwd=tmp_path, stdin=TRAIN)
    # As the file it stands for: the helper's sync, a fact of another file, is reported at the call.
    assert named.stdout.startswith("pkg/train.py:9:15: SYNC112 `positions(...)` in a loop calls a function")
    assert named.stderr == ""
    alone = run_cli("check", "--output-format", "concise", "-", cwd=tmp_path, stdin=TRAIN)
    assert "SYNC112" not in alone.stdout
    assert alone.stderr == (
        "synclint: warning: the source on standard input imports `pkg.helpers` (pkg/ here), but without "
        "--stdin-filename it is checked as a script of its own: findings that rest on other files' facts (a helper "
        "that syncs, a property that copies, what callers pass) are left out; name the file it stands for with "
        "--stdin-filename PATH\n")
    relative = run_cli("check", "-", cwd=tmp_path, stdin="from .helpers import positions\n")
    assert "imports `from .helpers import ...` (a relative import)" in relative.stderr
    # Source that imports only installed packages is all there is: nothing to warn of.
    assert run_cli("check", "-", cwd=tmp_path, stdin=GUARDED).stderr == ""
    assert run_cli("check", "--no-project-analysis", "-", cwd=tmp_path, stdin=TRAIN).stderr == ""
