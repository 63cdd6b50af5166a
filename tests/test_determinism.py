"""The findings of a run are a function of the code and the settings alone: cold or warm, one
process or many, after a file is touched, and over one file of the package with the rest kept."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli

# A pipeline whose own method's parameter is on the GPU only because its caller in the same
# file passes one: that fact, once known, changes what the file says of the parameter, and a
# run that looks again a fixed number of times ended on either side of it (issue 30).
PIPELINE = '''\
from typing import Optional

import torch

from pkg.helpers import grad_norm
from pkg.state import Tracker


class Pipeline(Tracker):
    def prepare_latents(self, shape, device, latents=None):
        if latents is None:
            latents = torch.randn(shape, device=device)
        else:
            latents = latents.to(device)
            if latents.abs().max() > 1e4:
                latents = latents / 2
        return latents * 2

    def __call__(self, prompt, latents: Optional[torch.Tensor] = None):
        latents = self.prepare_latents((1, 4), "cuda", latents)
        for t in range(10):
            latents = self.unet(latents)
            norm = grad_norm(latents)
            if self.best_loss > 0:
                print(norm)
        return latents
'''

HELPERS = '''\
import torch


def grad_norm(x):
    total = torch.linalg.vector_norm(x)
    return total.item()


def clip(x, limit):
    return x.clamp(max=limit)
'''

STATE = '''\
import torch


class Tracker:
    def __init__(self):
        self.losses = torch.zeros(8, device="cuda")

    @property
    def best_loss(self):
        return self.losses.min().item()
'''

# Plain files that use the helpers, enough of them for a pool of workers to share them out.
USER = '''\
import torch

from pkg.helpers import clip, grad_norm
from pkg.state import Tracker


class Trainer{n}(Tracker):
    def step(self, batch: torch.Tensor):
        for x in batch:
            y = clip(x, {n})
            if grad_norm(y) > {n}:
                return self.best_loss
        return None
'''


def _package(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "pipeline.py").write_text(PIPELINE)
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "state.py").write_text(STATE)
    for n in range(17):
        (pkg / f"user{n}.py").write_text(USER.format(n=n))
    return pkg


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
