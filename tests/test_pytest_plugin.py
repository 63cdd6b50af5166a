"""The pytest plugin finds the syncs planted in a sample test suite, and stays out of the way unless asked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")

LIBRARY = '''\
import torch


def total(x):
    return x.sum().item()


def mask_rows(x):
    return x[x > 0]


def fine(x):
    return (x * 2).sum()
'''

TESTS = '''\
from contextlib import contextmanager

import pytest
import torch

import mylib
from synclint.verify import gpu_sync_allowed as synclint_gpu_sync_allowed


@contextmanager
def gpu_sync_allowed():  # the project's own no-op marker: found by name
    yield


def test_total():
    assert isinstance(mylib.total(torch.randn(8)), float)


def test_total_three_times():
    x = torch.randn(8)
    for _ in range(3):
        mylib.total(x)


def test_mask():
    mylib.mask_rows(torch.randn(16))


def test_sync_free():
    mylib.fine(torch.randn(8))


def test_host_data_is_no_sync():
    assert torch.tensor([1, 2, 3]).sum().item() == 6


@pytest.mark.allow_sync
def test_marked():
    mylib.total(torch.randn(4))


def test_own_allowed_region():
    x = torch.randn(4)
    with gpu_sync_allowed():
        mylib.total(x)


def test_synclint_allowed_region():
    x = torch.randn(4)
    with synclint_gpu_sync_allowed():
        mylib.total(x)
'''


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "mylib.py").write_text(LIBRARY, encoding="utf-8")
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    return tmp_path


def entry_point_site(root: Path) -> Path:
    """A distribution on PYTHONPATH that declares the same pytest11 entry point as synclint's pyproject,
    so that pytest loads the plugin the way an installed synclint makes it."""
    site = root / "site"
    info = site / "synclint_entry_point_probe-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: synclint-entry-point-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nsynclint = synclint.verify.pytest_plugin\n")
    return site


def run_pytest(cwd: Path, *args: str, entry_point: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    paths = [str(REPO)]
    if entry_point:
        paths.append(str(entry_point_site(cwd.parent / f"{cwd.name}-ep")))
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    else:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        args = ("-p", "synclint.verify.pytest_plugin", *args)
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_warn_lists_every_planted_site_most_frequent_first_and_writes_json(suite):
    proc = run_pytest(suite, "--sync-check=warn", "--sync-report", "sites.json", "test_sample.py", entry_point=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "synclint: GPU<->CPU sync sites (simulated on the CPU)" in out
    lines = [line.strip() for line in out.splitlines() if "  mylib.py:" in line]
    assert lines[0].startswith("4  mylib.py:5  aten._local_scalar_dense"), lines
    assert "tests: test_total, test_total_three_times" in lines[0]
    assert lines[1].startswith("1  mylib.py:9  aten.index with a bool mask"), lines
    assert len(lines) == 2  # nothing from the sync-free, host-data, marked or allowed tests
    assert "5 syncs at 2 sites in 3 tests; 2 more in allowed regions" in out
    report = json.loads((suite / "sites.json").read_text())
    assert report["simulated"] is True and report["allowed"] == 2
    first = report["sites"][0]
    assert (first["file"], first["line"], first["count"], first["function"]) == ("mylib.py", 5, 4, "total")
    assert first["tests"] == ["test_sample.py::test_total", "test_sample.py::test_total_three_times"]
    assert first["source"] == "return x.sum().item()"


def test_error_fails_the_tests_that_sync_outside_allowed_regions(suite):
    proc = run_pytest(suite, "--sync-check=error", "-rf", "test_sample.py")
    assert proc.returncode == 1
    failed = sorted(line.split("::")[1].split(" ")[0] for line in proc.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == ["test_mask", "test_total", "test_total_three_times"]
    assert "3 failed, 5 passed" in proc.stdout
    assert "mylib.py:5: aten._local_scalar_dense (.item(), bool(), int(), float(), format) (x3)" in proc.stdout
    assert "Mark the test @pytest.mark.allow_sync" in proc.stdout


def test_off_unless_asked_and_then_imports_no_torch(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n\ndef test_plain():\n    assert 'torch' not in sys.modules\n", encoding="utf-8")
    proc = run_pytest(tmp_path, "test_plain.py", entry_point=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "GPU<->CPU sync sites" not in proc.stdout
    # Loaded through an entry point: the probe's, or the installed synclint's where pip installed it.
    assert re.search(r"^plugins: .*synclint", proc.stdout, re.MULTILINE), proc.stdout
    help_text = run_pytest(tmp_path, "--help", entry_point=True).stdout
    assert "--sync-check={off,warn,error}" in help_text and "--sync-report=FILE" in help_text


def test_pyproject_registers_the_plugin_and_ships_the_package():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"synclint": "synclint.verify.pytest_plugin"}
    assert "synclint.verify" in project["tool"]["setuptools"]["packages"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (bench/verify_cuda.sh runs it)")
def test_on_a_gpu_the_debug_mode_finds_the_planted_sites(tmp_path):
    (tmp_path / "mylib.py").write_text(LIBRARY, encoding="utf-8")
    tests = re.sub(r"torch\.randn\((\d+)\)", r'torch.randn(\1, device="cuda")', TESTS)
    (tmp_path / "test_sample.py").write_text(tests, encoding="utf-8")
    proc = run_pytest(tmp_path, "--sync-check=warn", "--sync-check-device=cuda", "--sync-report", "sites.json",
                      "test_sample.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "sites.json").read_text())
    assert report["simulated"] is False and report["device"] == "cuda"
    assert [(s["file"], s["line"], s["count"]) for s in report["sites"]] == [("mylib.py", 5, 4), ("mylib.py", 9, 1)]
    assert report["allowed"] == 2
