"""A run over a few files of a package with nothing kept of it: only the files whose facts they use
are analysed (synclint.project.demand), and the findings are those of a run over the package."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_json
from test_project import CHAIN, make_package

from synclint.cache.store import Cache
from synclint.config import SettingsResolver
from synclint.runner import Mode, run_paths

# engine -> prepare -> helpers (CHAIN), a property read by name on a value of unknown class, a
# helper whose parameter its callers elsewhere fill with a GPU tensor (checked alone, it looks
# for its callers), a class whose base is two modules away, and modules none of them use.
DEMAND = {
    **CHAIN,
    "engine.py": CHAIN["engine.py"] + """

        def read_lengths(meta):
            return meta.lengths_cpu
    """,
    "meta/metadata.py": """
        import torch


        class Metadata:
            def __init__(self, lengths: torch.Tensor):
                self.lengths = lengths

            @property
            def lengths_cpu(self) -> torch.Tensor:
                return self.lengths.to("cpu")
    """,
    "ops/scaling.py": """
        import torch


        def scale(t: torch.Tensor) -> torch.Tensor:
            if t.isinf().any():
                t = torch.clamp(t, min=-1e4, max=1e4)
            return t
    """,
    "models/layer.py": """
        import torch
        from torch import nn

        from app.ops.scaling import scale


        class Layer(nn.Module):
            def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
                return scale(hidden_states * 2)
    """,
    "base/module.py": """
        import torch
        from torch import nn


        class Base:
            def __init__(self, device):
                self.table = torch.zeros(8, device=device)
    """,
    "base/middle.py": """
        import torch

        from app.base.module import Base


        class Middle(Base):
            pass
    """,
    "top.py": """
        import torch

        from app.base.middle import Middle


        class Top(Middle):
            def sample(self, logits):
                if self.table.any():
                    logits = logits - self.table
                return logits
    """,
    "unrelated/one.py": """
        import torch


        def noise(n):
            return torch.randn(n, device="cuda").sum().item()
    """,
    "unrelated/two.py": """
        import torch

        from app.unrelated.one import noise


        def more(n):
            for _ in range(n):
                noise(n)
    """,
}


def _check(cwd: Path, *paths: str, cache: Cache | None = None):
    resolver = SettingsResolver(None, {"min-confidence": "low"}, cwd)
    return run_paths([cwd / p for p in paths], resolver, Mode(), jobs=1, cwd=cwd, cache=cache)


def test_one_file_alone_finds_what_a_run_over_the_package_finds(tmp_path):
    make_package(tmp_path, DEMAND)
    _, whole = run_json("check", "--no-cache", "--min-confidence", "low", "app", cwd=tmp_path)
    for name in ("engine.py", "top.py", "ops/scaling.py", "prepare.py"):
        code, alone = run_json("check", "--no-cache", "--min-confidence", "low", f"app/{name}", cwd=tmp_path)
        mine = [f for f in whole if f["filename"] == f"app/{name}"]
        assert alone == mine, name
        assert code == (1 if mine else 0)
    engine = [(f["code"], f["location"]["row"], f["location"]["column"]) for f in whole
              if f["filename"] == "app/engine.py"]
    # The chain three modules deep, twice, and the property read by name.
    assert engine == [("SYNC112", 8, 16), ("SYNC112", 12, 13), ("SYNC105", 16, 12)]
    (chain,) = [f for f in whole if f["filename"] == "app/engine.py" and f["location"]["row"] == 8]
    assert chain["message"].endswith("prepare -> lengths -> _count: `counts.sum().item()` at app/helpers.py:10")
    # Its callers fill the helper's parameter with a GPU tensor: the clamp's check syncs.
    assert [f["code"] for f in whole if f["filename"] == "app/ops/scaling.py"] == ["SYNC101"]
    assert [f["code"] for f in whole if f["filename"] == "app/top.py"] == ["SYNC101"]


def test_one_file_alone_analyses_only_the_files_whose_facts_it_uses(tmp_path):
    make_package(tmp_path, DEMAND)
    run = _check(tmp_path, "app/engine.py")
    analysed = sorted(Path(p).relative_to(tmp_path).as_posix() for p in run.analysed_files)
    assert analysed == ["app/engine.py", "app/helpers.py", "app/meta/metadata.py", "app/prepare.py"]
    # Every file of the package is read (a look at the text finds properties and callers by name).
    assert len(run.read_files) == len([p for p in tmp_path.rglob("*.py")])
    scaling = _check(tmp_path, "app/ops/scaling.py")
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in scaling.analysed_files) == [
        "app/models/layer.py", "app/ops/scaling.py"]
    top = _check(tmp_path, "app/top.py")
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in top.analysed_files) == [
        "app/base/middle.py", "app/base/module.py", "app/top.py"]


def test_a_run_over_part_of_a_package_keeps_no_package_state(tmp_path):
    make_package(tmp_path, DEMAND)
    cache = Cache(tmp_path / "cache")
    first = _check(tmp_path, "app/engine.py", cache=cache)
    # The next run over another file reads what that file needs, not a state made for engine.py.
    top = _check(tmp_path, "app/top.py", cache=cache)
    assert [f.code for f in top.findings] == ["SYNC101"]
    assert sorted(os.path.basename(p) for p in top.analysed_files) == ["middle.py", "module.py", "top.py"]
    # After a run over the whole package, a run over one file starts from its state.
    _check(tmp_path, "app", cache=cache)
    again = _check(tmp_path, "app/engine.py", cache=cache)
    assert [os.path.basename(p) for p in again.analysed_files] == ["engine.py"]
    assert again.findings == first.findings


def test_a_file_that_uses_most_of_its_package_indexes_all_of_it_and_keeps_its_state(tmp_path):
    make_package(tmp_path, {
        "a.py": "import torch\n\nfrom app.b import one\nfrom app.c import two\n\n\ndef step(t):\n"
                "    for _ in range(3):\n        one(t)\n        two(t)\n",
        "b.py": "import torch\n\n\ndef one(t):\n    return torch.zeros(1, device='cuda').item()\n",
        "c.py": "import torch\n\n\ndef two(t):\n    return torch.ones(1, device='cuda').item()\n",
        "d.py": "import torch\n\n\ndef three(t):\n    return t\n",
    })
    cache = Cache(tmp_path / "cache")
    # a.py, b.py, c.py of the five files (with __init__.py): more than half, so all of them.
    first = _check(tmp_path, "app/a.py", cache=cache)
    assert len(first.analysed_files) == 5
    assert [(f.code, f.location.row) for f in first.findings] == [("SYNC112", 9), ("SYNC112", 10)]
    # Its state was kept: a run over another file reads only that file.
    other = _check(tmp_path, "app/d.py", cache=cache)
    assert [os.path.basename(p) for p in other.analysed_files] == ["d.py"]
