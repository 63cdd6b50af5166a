"""Hostile input: each gets one clear line and a defined exit code, never a traceback or a crash."""

from __future__ import annotations

import os
import sys

import pytest

from conftest import run_cli

# Enough for every rule's prefilter, and one real finding so that "checked" is visible.
SYNC = "import torch\nx = torch.zeros(1, device='cuda')\nif x.any():\n    pass\n"


def check(tmp_path, *args: str, stdin: str | None = None):
    proc = run_cli("check", "--output-format", "concise", *args, cwd=tmp_path, stdin=stdin)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode in (0, 1, 2), proc.returncode  # never a signal (a negative code)
    return proc


@pytest.mark.parametrize(
    "name, data, expected",
    [
        ("py2.py", b"import torch\nprint 'hello'\n", "py2.py:2:1: SYNC000 syntax error: Missing parentheses in call to 'print'"),
        ("nul.py", b"import torch\nx = 1\x00\n", "nul.py:2:6: SYNC000 source contains a null byte"),
        ("utf8.py", b"import torch\nx = '\xff'\n", "utf8.py:2:6: SYNC000 cannot decode byte 0xff as utf-8"),
        ("first_line.py", b"x = '\xff'  # torch\n", "first_line.py:1:6: SYNC000 cannot decode byte 0xff as utf-8"),
        ("cookie.py", b"# -*- coding: klingon -*-\nimport torch\n", "cookie.py:1:1: SYNC000 invalid encoding declaration"),
        ("deep_parens.py", (SYNC + "y = " + "(" * 3000 + "1" + ")" * 3000 + "\n").encode(),
         "deep_parens.py:5:205: SYNC000 syntax error: too many nested parentheses"),
        ("deep_unary.py", (SYNC + "y = " + "-" * 100_000 + "1\n").encode(),
         "deep_unary.py:1:1: SYNC000 expression nested too deeply for Python to parse"),
        ("long_chain.py", (SYNC + "y = a" + "()" * 100_000 + "\n").encode(),
         "long_chain.py:1:1: SYNC000 expression nested too deeply for Python to parse"),
        ("wide_chain.py", (SYNC + "y = " + " < ".join(["a"] * 20_000) + "\n").encode(),
         "wide_chain.py:5:1: SYNC000 expression too long to analyse (19999 operators on one line)"),
    ],
)
def test_bad_source_is_sync000_at_its_place(tmp_path, name, data, expected):
    (tmp_path / name).write_bytes(data)
    proc = check(tmp_path, name)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith(expected), proc.stdout


@pytest.mark.parametrize(
    "name, data",
    [
        ("latin1.py", b"# -*- coding: latin-1 -*-\nname = '\xe9'\n" + SYNC.encode()),
        ("bom.py", b"\xef\xbb\xbf" + SYNC.encode()),
        ("crlf.py", SYNC.replace("\n", "\r\n").encode()),
        ("mixed.py", b"import torch\r\nx = torch.zeros(1, device='cuda')\nif x.any():\r\n    pass\n"),
        ("cr.py", SYNC.replace("\n", "\r").encode()),
    ],
)
def test_odd_but_valid_files_are_checked_at_the_right_line(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    proc = check(tmp_path, name)
    assert proc.returncode == 1
    row = 5 if name == "latin1.py" else 3
    assert proc.stdout.startswith(f"{name}:{row}:4: SYNC101 "), proc.stdout


def test_empty_file_and_whitespace_only_file_are_clean(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "blank.py").write_bytes(b"\n\n   \n")
    proc = check(tmp_path, "empty.py", "blank.py")
    assert proc.returncode == 0 and "All checks passed!" in proc.stdout


def test_ten_megabyte_file_is_skipped_with_a_warning(tmp_path):
    kernel = "def f{i}(x):\n    y = torch.zeros(4, device='cuda')\n    return y.sum().item()\n"
    text = "import torch\n" + "".join(kernel.format(i=i) for i in range(130_000))
    assert len(text) > 10_000_000
    (tmp_path / "big.py").write_text(text)
    (tmp_path / "small.py").write_text(SYNC)
    proc = check(tmp_path, ".")
    assert proc.returncode == 1 and proc.stdout.startswith("small.py:3:4: SYNC101"), proc.stdout
    assert proc.stderr.strip() == (
        "synclint: warning: big.py: skipped: 10.3 MB is over `max-file-size` (2.0 MB); raise it to check this file"
    )


def test_max_file_size_can_be_raised(tmp_path):
    kernel = "def f{i}(x):\n    y = torch.zeros(4, device='cuda')\n    return y.sum().item()\n"
    (tmp_path / "gen.py").write_text("import torch\n" + "".join(kernel.format(i=i) for i in range(100)))
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nmax-file-size = 1000\n")
    assert "skipped" in check(tmp_path, "gen.py").stderr
    (tmp_path / "pyproject.toml").write_text("[tool.synclint]\nmax-file-size = 0\n")
    proc = check(tmp_path, "--statistics", "gen.py")
    assert proc.returncode == 1 and "100" in proc.stdout and proc.stderr == ""


def test_symlink_loop_and_broken_link(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(SYNC)
    (tmp_path / "pkg" / "again").symlink_to(tmp_path / "pkg")  # a loop through a folder
    (tmp_path / "pkg" / "self.py").symlink_to(tmp_path / "pkg" / "self.py")  # a link to itself
    proc = check(tmp_path, "pkg")
    assert proc.stdout.count("pkg/a.py:3:4: SYNC101") == 1, proc.stdout  # walked once, not forever
    assert proc.returncode == 2
    assert "pkg/self.py" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_unreadable_file_is_exit_2_and_the_rest_is_checked(tmp_path):
    (tmp_path / "ok.py").write_text(SYNC)
    locked = tmp_path / "locked.py"
    locked.write_text(SYNC)
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: permissions do not stop reads")
        proc = check(tmp_path, ".")
    finally:
        locked.chmod(0o644)
    assert proc.returncode == 2
    assert "ok.py:3:4: SYNC101" in proc.stdout
    assert "synclint: error: locked.py: cannot read: Permission denied" in proc.stderr


def test_read_error_is_reported_not_raised(tmp_path, monkeypatch):
    """The same path as above, in process, for runs as root (where chmod does not stop reads)."""
    from pathlib import Path

    from synclint.config import build_settings
    from synclint.engine import check_file

    def refuse(self):
        raise PermissionError(13, "Permission denied")

    settings = build_settings({}, tmp_path, None)  # loads the rules before reads start failing
    monkeypatch.setattr(Path, "read_bytes", refuse)
    result = check_file(tmp_path / "a.py", "a.py", settings)
    assert result.internal_error == "a.py: cannot read: Permission denied"


def test_folder_named_like_a_python_file_is_walked(tmp_path):
    (tmp_path / "weird.py").mkdir()
    (tmp_path / "weird.py" / "inner.py").write_text(SYNC)
    proc = check(tmp_path, "weird.py")
    assert proc.returncode == 1 and proc.stdout.startswith("weird.py/inner.py:3:4: SYNC101")


def test_missing_path(tmp_path):
    proc = check(tmp_path, "nowhere.py")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "synclint: error: nowhere.py: no such file or directory"


def test_stdin_is_checked_under_its_filename(tmp_path):
    proc = check(tmp_path, "-", stdin=SYNC)
    assert proc.returncode == 1 and proc.stdout.startswith("-:3:4: SYNC101")
    proc = check(tmp_path, "--stdin-filename", "models/llama.py", "-", stdin=SYNC)
    assert proc.returncode == 1 and proc.stdout.startswith("models/llama.py:3:4: SYNC101")


def test_stdin_filename_picks_per_file_ignores(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint.per-file-ignores]\n"tests/*" = ["SYNC101"]\n')
    assert check(tmp_path, "--stdin-filename", "tests/test_x.py", "-", stdin=SYNC).returncode == 0
    assert check(tmp_path, "--stdin-filename", "src/x.py", "-", stdin=SYNC).returncode == 1


def test_stdin_fix_prints_the_fixed_source(tmp_path):
    source = "import torch\ny = torch.tensor([1, 2], device='cuda')\n"
    proc = check(tmp_path, "--fix", "--unsafe-fixes", "-", stdin=source)
    assert proc.returncode == 0
    assert proc.stdout == (
        "import torch\ny = torch.tensor([1, 2], pin_memory=torch.cuda.is_available()).to(\n"
        "    'cuda', non_blocking=True\n"
        ")\n"
    )  # broken at 88 characters, the formatters' default
    compile(proc.stdout, "<stdin>", "exec")
    again = check(tmp_path, "--fix", "--unsafe-fixes", "-", stdin=proc.stdout)
    assert again.stdout == proc.stdout  # a second run changes nothing
    clean = "x = 1\n"
    assert check(tmp_path, "--fix", "-", stdin=clean).stdout == clean


def test_stdin_syntax_error(tmp_path):
    proc = check(tmp_path, "-", stdin="import torch\ndef (:\n")
    assert proc.returncode == 1 and proc.stdout.startswith("-:2:5: SYNC000 syntax error")


@pytest.mark.parametrize(
    "args, message",
    [
        (["-", "a.py"], "`-` (standard input) cannot be combined with other paths"),
        (["--stdin-filename", "a.py", "."], "--stdin-filename needs `-` as the path"),
        (["--add-noqa", "-"], "--add-noqa needs files"),
        (["--add-noqa", "--fix", "."], "--add-noqa cannot be combined with --fix or --diff"),
        (["--select", "SYNC999", "."], "`select` names 'SYNC999', which matches no rule"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, message):
    proc = check(tmp_path, *args, stdin="")
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_unknown_rule_in_noqa_is_a_warning(tmp_path):
    (tmp_path / "a.py").write_text(SYNC.replace("if x.any():", "if x.any():  # noqa: SYNC999, E501"))
    proc = check(tmp_path, "a.py")
    assert proc.returncode == 1  # SYNC999 silences nothing
    assert proc.stderr.strip() == "synclint: warning: a.py:3: `# noqa` names SYNC999, which is no rule"


def test_noqa_of_other_linters_is_not_warned_about(tmp_path):
    (tmp_path / "a.py").write_text(SYNC.replace("if x.any():", "if x.any():  # noqa: E501, SYNC101"))
    proc = check(tmp_path, "a.py")
    assert proc.returncode == 0 and proc.stderr == ""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_config_that_is_a_folder_or_unreadable(tmp_path):
    (tmp_path / "conf.toml").mkdir()
    proc = check(tmp_path, "--config", "conf.toml", ".")
    assert proc.returncode == 2 and "conf.toml: no such configuration file" in proc.stderr


def test_syntax_error_in_stdin_is_placed_in_that_text_not_in_the_file_on_disk(tmp_path):
    # CPython takes a SyntaxError's line from the file it is named after, when that file exists.
    (tmp_path / "a.py").write_text("import torch\ndef f():\n    return x\n")
    proc = check(tmp_path, "--stdin-filename", "a.py", "-", stdin="import torch\ndef f():\n    return x +\n")
    assert proc.stdout.splitlines()[0] == "a.py:3:15: SYNC000 syntax error: invalid syntax"
