"""The findings of a run are a function of the code and the settings alone: cold or warm, one
process or many, after a file is touched, and over one file of the package with the rest kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.trees import build


def _package(root: Path) -> Path:
    """The package of these tests, tests/trees.py's "determinism" (the differential checks it too):
    a pipeline whose own method's parameter is on the GPU only because its caller in the same file
    passes one (a run that looked again a fixed number of times ended on either side of that
    fact: issue 30), helpers and a tracker in other modules, and 17 plain files that use them."""
    return build("determinism", root)


def _findings(root: Path, *args: str) -> list[dict]:
    result = run_cli("check", "--output-format", "json", "--exit-zero", "--min-confidence", "low", *args, "pkg",
                     cwd=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    _package(tmp_path / "tree")
    return tmp_path / "tree"


def test_cold_warm_touched_and_parallel_runs_agree_exactly(tree: Path, tmp_path: Path):
    cold = _findings(tree, "--jobs", "1", "--cache-dir", str(tmp_path / "one"))
    assert any(f["code"] == "SYNC101" and f["location"]["row"] == 15 for f in cold)  # the GPU parameter's check
    assert not any(f["code"] == "SYNC102" for f in cold)  # `latents.to(device)` moves a GPU tensor: no copy
    assert any(f["code"] == "SYNC112" and f["filename"] == "pkg/user3.py" for f in cold)  # across files
    assert _findings(tree, "--jobs", "2", "--cache-dir", str(tmp_path / "two")) == cold
    assert _findings(tree, "--jobs", "2", "--cache-dir", str(tmp_path / "two")) == cold  # warm
    assert _findings(tree, "-q", "--jobs", "1", "--cache-dir", str(tmp_path / "one")) == cold  # warm
    os.utime(tree / "pkg" / "helpers.py")  # touched: same bytes, a newer time
    assert _findings(tree, "--jobs", "2", "--cache-dir", str(tmp_path / "two")) == cold
    assert _findings(tree, "--no-cache") == cold


def test_one_file_after_a_run_over_the_package_agrees_with_the_package_run(tree: Path, tmp_path: Path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    whole = _findings(tree, *cache)
    alone = run_cli("check", "--output-format", "json", "--exit-zero", "--min-confidence", "low", *cache,
                    "pkg/pipeline.py", cwd=tree)
    assert json.loads(alone.stdout) == [f for f in whole if f["filename"] == "pkg/pipeline.py"]


def test_the_order_the_files_are_named_in_does_not_matter(tree: Path, tmp_path: Path):
    names = sorted(p.name for p in (tree / "pkg").glob("*.py"))
    forward = run_cli("check", "--output-format", "json", "--exit-zero", "--no-cache", "--min-confidence", "low",
                      *[f"pkg/{n}" for n in names], cwd=tree)
    backward = run_cli("check", "--output-format", "json", "--exit-zero", "--no-cache", "--min-confidence", "low",
                       *[f"pkg/{n}" for n in reversed(names)], cwd=tree)
    assert json.loads(forward.stdout) == json.loads(backward.stdout) == _findings(tree, "--no-cache")


def test_a_copy_of_the_tree_elsewhere_gives_the_same_findings(tree: Path, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(tree, elsewhere)
    assert _findings(elsewhere, "--no-cache") == _findings(tree, "--no-cache")
