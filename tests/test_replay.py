"""Replayed runs (synclint.cache.replay): an unchanged command over unchanged inputs prints the last
output without checking; any change to what the output depends on checks again."""

from __future__ import annotations

import os
import pickle
import time

from conftest import run_cli

from synclint.cache.entries import Entry
from synclint.cache.store import FORMAT

SYNC = "import torch\nx = torch.zeros(1, device='cuda')\nif x.any():\n    pass\n"
PAST = time.time() - 3600


def age(tmp_path):
    """Make every file and folder an hour old: too old to be 'racily clean'."""
    for root, dirs, files in os.walk(tmp_path):
        for name in [*dirs, *files]:
            os.utime(os.path.join(root, name), (PAST, PAST))
    os.utime(tmp_path, (PAST, PAST))


def check(tmp_path, *args):
    proc = run_cli("check", "--output-format", "concise", *args, ".", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def records(tmp_path):
    folder = tmp_path / ".synclint_cache" / f"v{FORMAT}" / "replay"
    return sorted(folder.iterdir()) if folder.exists() else []


def forget_results(tmp_path):
    """Replace every per-file entry and snapshot by an empty result: only a replay still reports."""
    for path in (tmp_path / ".synclint_cache" / f"v{FORMAT}").rglob("*"):
        if path.is_file() and path.parent.name != "replay":
            path.write_bytes(pickle.dumps(Entry([], [])))


def recorded(tmp_path, *args):
    """Run twice on an aged tree: the first run creates the cache folder, the second keeps a record."""
    age(tmp_path)
    first = check(tmp_path, *args)
    age(tmp_path)
    second = check(tmp_path, *args)
    assert second.stdout == first.stdout and records(tmp_path)
    forget_results(tmp_path)
    return second


def test_an_unchanged_run_is_replayed(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text(SYNC)
    kept = recorded(tmp_path)
    assert kept.returncode == 1 and "pkg/a.py:3:4: SYNC101" in kept.stdout
    again = check(tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (kept.returncode, kept.stdout, kept.stderr)
    other = check(tmp_path, "--jobs", "1")  # another command line: checked, from the forgotten entries
    assert other.returncode == 0


def test_an_edited_file_is_checked_again(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    recorded(tmp_path)
    (tmp_path / "a.py").write_text(SYNC.replace("x.any()", "True"))
    age(tmp_path)  # same age: the size tells the edit
    assert check(tmp_path).returncode == 0


def test_a_new_file_in_a_walked_folder_is_checked(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("x = 1\n")
    assert recorded(tmp_path).returncode == 0
    (tmp_path / "sub" / "b.py").write_text(SYNC)
    proc = check(tmp_path)
    assert proc.returncode == 1 and "sub/b.py" in proc.stdout


def test_a_new_configuration_is_read(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    assert recorded(tmp_path).returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SYNC101"]\n')
    assert check(tmp_path).returncode == 0


def test_a_new_ruff_configuration_in_a_parent_folder_is_read(tmp_path):
    # Its line length decides how a fix is laid out: a record made without it is stale.
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("import torch\nidx = torch.tensor([1, 2, 3], device='cuda')\n")
    first = recorded(project, "--output-format", "json")
    assert "pin_memory=torch.cuda.is_available()).to(\\n" in first.stdout  # broken at 88
    (tmp_path / "ruff.toml").write_text("line-length = 120\n")
    again = check(project, "--output-format", "json")
    assert "pin_memory=torch.cuda.is_available()).to('cuda', non_blocking=True)" in again.stdout


def test_an_edited_gitignore_is_read(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("other.py\n")
    (tmp_path / "a.py").write_text(SYNC)
    assert recorded(tmp_path).returncode == 1
    (tmp_path / ".gitignore").write_text("a.py\n")
    assert check(tmp_path).returncode == 0


def test_the_output_file_is_written_again(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    recorded(tmp_path, "-o", "report.txt")
    text = (tmp_path / "report.txt").read_text()
    (tmp_path / "report.txt").unlink()
    age(tmp_path)
    proc = check(tmp_path, "-o", "report.txt")
    assert proc.returncode == 1 and (tmp_path / "report.txt").read_text() == text and "SYNC101" in text


def test_a_file_changed_just_before_the_run_is_not_recorded(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    age(tmp_path)
    check(tmp_path)
    age(tmp_path)
    (tmp_path / "a.py").write_text(SYNC)  # now: within the file system's time granularity of the run
    check(tmp_path)
    assert records(tmp_path) == []


def test_runs_that_write_or_skip_the_cache_are_not_recorded(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ny = torch.tensor([1, 2], device='cuda')\n")
    age(tmp_path)
    for args in (["--no-cache"], ["--diff"], ["--fix"]):
        check(tmp_path, *args)
        age(tmp_path)
    assert records(tmp_path) == []


def test_signatures_the_run_took_are_not_taken_again(tmp_path):
    # After a pre-commit run, the package state has just compared every other file's signature:
    # the record takes those, and stats only what it did not see.
    from synclint.cache.replay import inputs_of
    from synclint.cache.signatures import signature

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 2\n")
    a, b = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    seen = (1, 2, 3, 4)  # not what a stat would say: only the run's own signature can give it
    inputs = inputs_of([], [a, b], known={a: seen})
    assert inputs[a] == seen and inputs[b] == signature(b)
    assert inputs[str(tmp_path / "pyproject.toml")] is None  # the markers of its folders, as before
