"""The result cache: hits are used, anything that changes results misses, sharing it is safe."""

from __future__ import annotations

import pickle
import subprocess
import sys

from conftest import run_cli

from synclint.cache.entries import Entry
from synclint.cache.store import FORMAT
from synclint.evidence import Basis, Certainty, Evidence

SYNC = "import torch\nx = torch.zeros(1, device='cuda')\nif x.any():\n    pass\n"


def check(tmp_path, *args):
    proc = run_cli("check", "--output-format", "concise", *args, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def entries(tmp_path, name=".synclint_cache"):
    return sorted(p for p in (tmp_path / name).rglob("*") if p.is_file() and p.parent.parent.name == f"v{FORMAT}")


def file_entries(tmp_path):
    """Entries of single files (the others are project index snapshots)."""
    return [p for p in entries(tmp_path) if isinstance(pickle.loads(p.read_bytes()), Entry)]


def poison(tmp_path):
    """Replace every entry by one finding-free result: a run that then reports nothing read the cache."""
    for path in entries(tmp_path):
        path.write_bytes(pickle.dumps(Entry([], [])))


def test_second_run_reads_the_cache(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    first = check(tmp_path, ".")
    assert first.returncode == 1 and len(file_entries(tmp_path)) == 1
    assert (tmp_path / ".synclint_cache" / ".gitignore").read_text().endswith("*\n")
    assert check(tmp_path, ".").stdout == first.stdout
    poison(tmp_path)
    assert check(tmp_path, ".").returncode == 0  # served from the (poisoned) cache
    assert check(tmp_path, "--no-cache", ".").returncode == 1  # --no-cache reads nothing


def test_changes_to_the_file_or_the_settings_miss(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    check(tmp_path, ".")
    poison(tmp_path)
    (tmp_path / "a.py").write_text(SYNC + "\n")
    assert check(tmp_path, ".").returncode == 1  # new bytes: checked again
    poison(tmp_path)
    # Settings that change the analysis: checked again (those that only filter it: test_refilter.py).
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nallow-sync-contexts = ["quiet"]\n')
    assert check(tmp_path, ".").returncode == 1
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore = ["SYNC101"]\n')
    assert check(tmp_path, ".").returncode == 0


def test_no_cache_writes_nothing_and_cache_dir_moves_it(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    check(tmp_path, "--no-cache", ".")
    assert not (tmp_path / ".synclint_cache").exists()
    check(tmp_path, "--cache-dir", "elsewhere", ".")
    assert not (tmp_path / ".synclint_cache").exists() and entries(tmp_path, "elsewhere")


def test_clean_removes_the_cache(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    check(tmp_path, ".")
    proc = run_cli("clean", cwd=tmp_path)
    assert proc.returncode == 0 and "Removed" in proc.stderr
    assert not (tmp_path / ".synclint_cache").exists()
    assert "No cache at" in run_cli("clean", cwd=tmp_path).stderr
    (tmp_path / "notes").mkdir()
    proc = run_cli("clean", "--cache-dir", "notes", cwd=tmp_path)
    assert proc.returncode == 2 and "does not look like a synclint cache" in proc.stderr
    assert (tmp_path / "notes").exists()


def test_a_read_only_cache_is_used_without_writing(tmp_path):
    (tmp_path / "a.py").write_text(SYNC)
    (tmp_path / ".synclint_cache").write_text("not a folder")  # cannot create entries under it
    proc = check(tmp_path, ".")
    assert proc.returncode == 1 and proc.stderr == ""


def test_two_runs_sharing_the_cache_agree(tmp_path):
    for i in range(60):
        (tmp_path / f"m{i}.py").write_text(SYNC * (1 + i % 3))
    cmd = [sys.executable, "-m", "synclint", "check", "--output-format", "concise", "."]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(err == "" for _, err in outputs), outputs
    assert len({out for out, _ in outputs}) == 1
    assert check(tmp_path, ".").stdout == outputs[0][0]
    assert not [p for p in (tmp_path / ".synclint_cache").rglob(".tmp-*")]  # no half-written entries left


def test_fix_skips_cached_files_without_fixes_and_fixes_the_rest(tmp_path):
    (tmp_path / "clean.py").write_text(SYNC)  # SYNC101 here has no fix
    (tmp_path / "fixable.py").write_text("import torch\ny = torch.tensor([1, 2], device='cuda')\n")
    check(tmp_path, ".")
    proc = run_cli("check", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert "Fixed 1 finding" in proc.stderr
    assert "non_blocking=True" in (tmp_path / "fixable.py").read_text()
    assert (tmp_path / "clean.py").read_text() == SYNC


def test_what_the_cache_keeps_comes_back_equal():
    # Findings, summaries and facts are pickled field by field (model.pickled_by_fields): each
    # must come back with every field in its place, nested values included.
    from synclint.cache.entries import Packed
    from synclint.devices.lattice import Place, Where
    from synclint.model import Applicability, Confidence, Edit, Finding, Fix, Location
    from synclint.project.facts import (
        Chain,
        ClassSummary,
        FunctionFact,
        FunctionSummary,
        ModuleSummary,
        Needs,
        PropertyFact,
        SyncSite,
    )

    gpu = Where(Place.DEVICE, Certainty.MEDIUM, "x is annotated", items=(Where(Place.HOST, Certainty.HIGH),),
                basis=Basis.ANNOTATION)
    site = SyncSite("SYNC102", "x.item()", "app/a.py", 7, Certainty.HIGH, once="self._t is None")
    chain = Chain(("app.a.f", "app.a.g"), site, Certainty.MEDIUM)
    kept = [
        Finding("SYNC102", "host-read", "message", "app/a.py", Location(7, 5), Location(7, 13), Confidence.MEDIUM,
                "loop", "why", Fix(Applicability.UNSAFE, "fix it", (Edit("y", Location(7, 5), Location(7, 6)),),
                                   ("import torch",)), 7, 3, "    x.item()",
                evidence=Evidence(Certainty.MEDIUM, "loop", Basis.ANNOTATION, facts=("why",))),
        ModuleSummary("app.a", "app/a.py",
                      {"app.a.f": FunctionSummary("app.a.f", "app/a.py", 3, True, "old", site, ("app.a.g",), ("app.a.C.p",),
                                                  gpu, ("app.a.h",), ("x", "y", "k"), 2, {"app.a.g": {0: gpu, "k": gpu}},
                                                  frozenset({"x"}))},
                      {"app.a.C": ClassSummary("app.a.C", "app/a.py", 10, ("torch.nn.Module",), {"t": gpu},
                                               frozenset({"n"}))},
                      Needs(frozenset({"app.b.f"}), frozenset({"app.b.C"}), frozenset({"t"}), frozenset({"app.b.f"}),
                            frozenset()),
                      {("f", "k"): ("`mask` in run()", False)}),
        FunctionFact("app.a.f", "app/a.py", 3, chain, gpu, True, "old"),
        PropertyFact("app.a.C", "p", "app/a.py", 12, chain, None),
    ]
    for value in kept:
        assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value
    packed = pickle.loads(pickle.dumps(Packed({"app/a.py": kept[1]})))
    assert packed.get("app/a.py") == kept[1] and packed.get("app/b.py") is None


def test_a_cache_used_for_two_runs_reads_the_file_each_run(tmp_path, monkeypatch):
    # A run reads each file once and keys it by that content; a library caller's next run with
    # the same Cache object must read it again, or it is answered with the old file's entry.
    from pathlib import Path

    from synclint.cache.store import Cache
    from synclint.config import SettingsResolver
    from synclint.runner import Mode, run_paths

    (tmp_path / "kernel.py").write_text(SYNC)
    monkeypatch.chdir(tmp_path)
    cache = Cache(tmp_path / "cache")
    resolver = SettingsResolver(None, {"project-analysis": False}, tmp_path)

    def codes():
        return [f.code for f in run_paths([Path("kernel.py")], resolver, Mode(), jobs=1, cwd=tmp_path, cache=cache).findings]

    assert codes() == ["SYNC101"]
    (tmp_path / "kernel.py").write_text(SYNC.replace("if x.any():", "if True:"))
    assert codes() == []


def test_a_run_from_a_subfolder_uses_the_cache_of_the_project_root(tmp_path):
    # No `[tool.synclint]` table anywhere: the project root is where `.git` (or a pyproject.toml) is,
    # as ruff finds it, not the folder a run starts from.
    for marker in (".git", "pyproject.toml"):
        project = tmp_path / marker.strip(".")
        (project / "src" / "deep").mkdir(parents=True)
        if marker == ".git":
            (project / ".git").mkdir()
        else:
            (project / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n")
        (project / "src" / "deep" / "a.py").write_text(SYNC)
        assert check(project / "src" / "deep", "a.py").returncode == 1
        assert check(project / "src", "deep/a.py").returncode == 1
        assert entries(project) and not (project / "src" / ".synclint_cache").exists()
        assert not (project / "src" / "deep" / ".synclint_cache").exists()
        poison(project)  # the run from the subfolder reads the root's cache
        assert check(project / "src" / "deep", "a.py").returncode == 0
        cleaned = run_cli("clean", cwd=project / "src" / "deep")
        assert cleaned.stderr == f"Removed {project / '.synclint_cache'}.\n"
