"""The report `--fix` prints is what the next `check` prints, also where a fix in one file changes
the findings of another."""

from __future__ import annotations

from conftest import run_cli

HELPERS = """import torch


def positions(n, device):
    return torch.tensor([n], device=device, dtype=torch.long)
"""
TRAIN = """import torch

from pkg.helpers import positions


def run(model, loader):
    device = torch.device("cuda")
    for batch in loader:
        pos = positions(len(batch), device)
        out = model(batch.to(device), pos)
        if out.isnan().any():
            print("nan")
"""


def _package(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)


def concise(tmp_path, *args: str):
    proc = run_cli("check", "--output-format", "concise", *args, "pkg", cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_fixing_a_helper_quiets_its_callers_finding_in_the_same_report(tmp_path):
    _package(tmp_path)
    before = concise(tmp_path)
    assert before.stdout.splitlines()[:3] == [
        "pkg/helpers.py:5:12: SYNC103 `torch.tensor([n], device=device, dtype=torch.long)` builds a GPU tensor "
        "from host data with a blocking copy; the host waits for the GPU queue to drain",
        "pkg/train.py:9:15: SYNC112 `positions(...)` in a loop calls a function that makes the host wait for the "
        "GPU: positions: `torch.tensor([n], device=device, dtype=torch.long)` at pkg/helpers.py:5",
        "pkg/train.py:11:12: SYNC101 `out.isnan().any()` is a tensor, likely on the GPU, used as a Python bool; the host waits "
        "for the GPU",
    ]
    fixed = concise(tmp_path, "--fix", "--unsafe-fixes")
    # The fix of helpers.py takes the sync out of `positions`: train.py's SYNC112, which cited the fixed
    # line, is gone from the report the fix prints, as from the next check's.
    assert fixed.stdout == (
        "pkg/train.py:11:12: SYNC101 `out.isnan().any()` is a tensor, likely on the GPU, used as a Python bool; the host waits "
        "for the GPU\nFound 1 finding: 1 in loops.\n")
    assert fixed.stderr == "Fixed 1 finding (SYNC103: 1).\n"
    assert fixed.returncode == 1
    again = concise(tmp_path, "--unsafe-fixes")
    assert (again.returncode, again.stdout) == (fixed.returncode, fixed.stdout)
    assert "pin_memory=torch.cuda.is_available()" in (tmp_path / "pkg" / "helpers.py").read_text()


CLAMP = """import torch


def cast_overflow_tensors(x: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if x.isinf().any() or x.isnan().any():
        clamp_value = torch.finfo(x.dtype).max - offset
        x = torch.clamp(x, min=-clamp_value, max=clamp_value)
    return x


class Model(torch.nn.Module):
    def forward(self, x):
        return cast_overflow_tensors(x.cuda())
"""


def test_the_unsafe_fixes_left_are_counted_as_the_next_check_counts_them(tmp_path):
    _package(tmp_path)
    (tmp_path / "pkg" / "clamp.py").write_text(CLAMP)
    fixed = concise(tmp_path, "--fix")  # the clamp's fix is unsafe: left for --unsafe-fixes
    again = concise(tmp_path)
    assert fixed.stdout == again.stdout
    assert fixed.stderr == "Fixed 1 finding (SYNC103: 1). 2 more fixable with --unsafe-fixes.\n"
    assert again.stdout.endswith("2 more fixable with `--fix --unsafe-fixes`.\n")


def test_without_a_cache_the_fix_also_starts_from_what_the_check_found(tmp_path, monkeypatch):
    # A fix that starts from a check of the file alone may miss the findings other files' facts gave
    # it (accelerate's random.py: a SYNC102 that only project analysis finds was fixed warm, not cold).
    # Cold as warm, the fix starts from the run's check: the file is analysed once, the fixed text once.
    from synclint import engine

    counts = {"analyse": 0}
    analyse = engine.analyse

    def counted(*args, **kwargs):
        counts["analyse"] += 1
        return analyse(*args, **kwargs)

    monkeypatch.setattr(engine, "analyse", counted)
    (tmp_path / "clamp.py").write_text(CLAMP)
    proc = run_cli("check", "-j", "1", "--no-cache", "--diff", "--unsafe-fixes", "clamp.py", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == "Would fix 2 findings in 1 file.\n"
    assert counts["analyse"] == 2
