"""`synclint verify` after `pip install 'synclint[verify]'`, from a folder outside the checkout.

The fixture kernels ship inside the wheel (synclint/fixtures), and the extra installs what
verify and the fixtures import. The test builds ONE fresh virtual environment per run (marked
`fresh_venv`) and installs a copy of the checkout into it with pip, extra and all (a copy: pip
builds in the source tree, and the checkout stays as it is). torch is pinned to the test
environment's own build (`torch==2.13.0+cpu` in CI), which pip takes from its cache: about 40 s
on a quiet 2-core machine, two and a half minutes on a loaded one.

Where that is too slow, `SYNCLINT_FRESH_VENV=shared` lets the fresh environment see the test
environment's packages through a `.pth` file: pip then finds the extra's requirements installed
and installs synclint alone (about 20 s). That cannot show a requirement missing from the extra
(the test environment has numpy anyway), which is why
`test_the_verify_extra_declares_what_verify_imports` also checks the declared requirements
against the imports.
"""

from __future__ import annotations

import ast
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.fresh_venv
SHARED = os.environ.get("SYNCLINT_FRESH_VENV") == "shared"


def _run(args: list, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "COLUMNS": "200"})


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with `synclint[verify]` installed from (a copy of) the checkout:
    the folder of its executables."""
    torch = pytest.importorskip("torch")
    base = tmp_path_factory.mktemp("fresh")
    checkout = base / "synclint-checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, checkout / name)
    for name in ("synclint", "rules", "fixtures"):
        shutil.copytree(REPO / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", venv], base)
    assert made.returncode == 0, made.stderr
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    requirements = [f"{checkout}[verify]"]
    if not SHARED:
        requirements.insert(0, f"torch=={torch.__version__}")  # this build: pip's cache has it
    else:
        # After the fresh environment's own site-packages: the test environment's, for torch and numpy.
        purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base)
        ours = [p for p in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
        Path(purelib.stdout.strip(), "test-environment.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    pip = _run([python, "-m", "pip", "install", "-q", *requirements], base)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    return bin_dir


def test_verify_runs_from_any_folder_after_installing_the_extra(installed, tmp_path):
    elsewhere = tmp_path / "elsewhere"  # no fixtures folder, no checkout above it
    elsewhere.mkdir()
    code = "import pathlib, synclint.verify.fixtures as f; print(f.default_root(pathlib.Path.cwd()))"
    where = _run([installed / "python", "-c", code], elsewhere)
    assert where.returncode == 0, where.stderr
    fixtures = Path(where.stdout.strip())
    assert fixtures.is_relative_to(installed.parent) and fixtures.parts[-2:] == ("synclint", "fixtures")
    proc = _run([installed / "synclint", "verify", "--device", "cpu", "--repeat", "1", "SYNC101", "SYNC103"],
                elsewhere)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "8 kernels, 0 failed." in proc.stdout
    # The simulation shows no speedups: a CPU run cannot measure them.
    assert "speedup" not in proc.stdout.split("No speedups")[0].lower() and "No speedups" in proc.stdout


def test_the_verify_extra_declares_what_verify_imports():
    """Every distribution that `synclint verify` and the fixture kernels import is a requirement
    of synclint or of its verify extra (numpy was missing: SYNC103 failed)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_name(req) for req in [*project["dependencies"], *project["optional-dependencies"]["verify"]]}
    sources = [*(REPO / "fixtures").glob("*/*.py"), *(REPO / "synclint" / "verify").glob("*.py")]
    imported: set[str] = set()
    for path in sources:
        if path.name == "pytest_plugin.py":  # runs under pytest, which is there
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            imported.update(name.split(".")[0] for name in names)
    third_party = {name for name in imported if name not in sys.stdlib_module_names and name != "synclint"}
    owners = packages_distributions()
    needed = {_name(dist) for name in third_party for dist in owners.get(name, [name])}
    assert {"torch", "numpy"} <= needed
    assert needed <= declared, f"imported by verify or the fixtures, not declared: {sorted(needed - declared)}"


def _name(requirement: str) -> str:
    for stop in "<>=!~;[ @":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower().replace("_", "-")
