"""Changing only what is shown re-filters the cached analysis: no file is analysed again.

The cache keeps every rule's findings at every confidence and in every context; `--select`,
`--ignore`, `--extend-select`, `--min-confidence`, `per-file-ignores`, `ignore-contexts` and
the test setting choose among them (synclint.view). These tests count the analyses and the
files parsed, not the time, and compare each re-filtered report with a run that checks again.
"""

from __future__ import annotations

import hashlib
import shutil

import pytest
from conftest import run_cli

from synclint import engine

HELPERS = """\
import torch


def count_left(budget: torch.Tensor, used: torch.Tensor) -> float:
    return (budget - used).item()
"""

TRAIN = """\
import torch
from torch import nn

from pkg.helpers import count_left


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(4, device="cuda"))
        self.scale = float(self.weight.sum())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.isnan().any():
            x = torch.nan_to_num(x)
        total = x.sum().item()
        return x * total


def train(model, batches, budget):
    for batch in batches:
        loss = model(batch.cuda())
        print(f"loss {loss.item()}")
        left = count_left(budget, loss)
    torch.cuda.synchronize()
"""

TEST = """\
import torch


def test_forward():
    x = torch.ones(3, device="cuda")
    assert x.sum().item() == 3
"""


@pytest.fixture
def tree(tmp_path):
    """A package with findings of five rules at three confidences, in the loop, step, init,
    code and test contexts, one of them (SYNC112) known only from another file's facts."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_train.py").write_text(TEST)
    return tmp_path


@pytest.fixture
def analyses(monkeypatch):
    """Counts of `engine.analyse` calls and of files parsed, in this process (`-j 1` keeps the
    checks here)."""
    counts = {"analyse": 0, "parse": 0}
    analyse, parse = engine.analyse, engine.parse_module

    def counted_analyse(*args, **kwargs):
        counts["analyse"] += 1
        return analyse(*args, **kwargs)

    def counted_parse(*args, **kwargs):
        counts["parse"] += 1
        return parse(*args, **kwargs)

    monkeypatch.setattr(engine, "analyse", counted_analyse)
    monkeypatch.setattr(engine, "parse_module", counted_parse)
    return counts


def check(tree, *args):
    proc = run_cli("check", "-j", "1", "--output-format", "concise", *args, cwd=tree)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


VIEWS = [
    ("--select", "SYNC107"),
    ("--ignore", "SYNC101,SYNC110"),
    ("--select", "SYNC101", "--extend-select", "SYNC110"),
    ("--min-confidence", "low"),
    ("--min-confidence", "high"),
    ("--include-tests",),
    ("--include-tests", "--min-confidence", "low", "--select", "SYNC107,SYNC112"),
    ('per-file-ignores = { "pkg/train.py" = ["SYNC107"] }',),
    ('ignore-contexts = ["loop", "init"]',),
    ("include-tests = true",),
    ("include-tests = true", "--no-include-tests"),
]


@pytest.mark.parametrize("view", VIEWS, ids=[" ".join(v) for v in VIEWS])
@pytest.mark.parametrize("first", [(), ("--select", "SYNC110", "--min-confidence", "high")],
                         ids=["first-default", "first-narrow"])
def test_another_view_analyses_nothing_again(tree, analyses, first, view):
    assert check(tree, *first, ".").returncode == 1
    assert analyses["analyse"] >= 3 and analyses["parse"] >= 3  # the first run analysed every file
    config = [part for part in view if " = " in part]  # a line of [tool.synclint]
    options = [part for part in view if part not in config]
    if config:
        (tree / "pyproject.toml").write_text("[tool.synclint]\n" + "\n".join(config) + "\n")
    analyses.update(analyse=0, parse=0)
    again = check(tree, *options, ".")
    assert again.returncode in (0, 1), again.stderr
    assert analyses == {"analyse": 0, "parse": 0}, f"{view}: re-analysed"
    fresh = check(tree, "--no-cache", *options, ".")
    assert analyses["analyse"] >= 3  # (the comparison run did check)
    assert (again.returncode, again.stdout, again.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_every_view_is_filtered_from_one_analysis(tree, analyses):
    """The views of VIEWS shown one after the other: still only the first run analyses."""
    check(tree, ".")
    first = analyses["analyse"]
    for view in VIEWS:
        if not any(" = " in part for part in view):
            assert check(tree, *view, ".").returncode in (0, 1)
    assert analyses["analyse"] == first


def test_the_views_show_what_they_say(tree):
    def codes(*args):
        return sorted(line.split()[1] for line in check(tree, *args, ".").stdout.splitlines() if ": SYNC" in line)

    assert codes() == ["SYNC101", "SYNC107", "SYNC107", "SYNC110"]
    assert codes("--min-confidence", "low") == ["SYNC101", "SYNC102", "SYNC107", "SYNC107", "SYNC107", "SYNC107",
                                                 "SYNC110", "SYNC112"]
    assert codes("--min-confidence", "high") == ["SYNC110"]
    assert codes("--select", "SYNC107") == ["SYNC107", "SYNC107"]
    assert codes("--include-tests", "--select", "SYNC107") == ["SYNC107", "SYNC107", "SYNC107"]


def test_fix_applies_only_the_selected_rules_fixes(tmp_path):
    """The engine reports every rule; a fix run fixes only what the view shows."""
    source = ("import torch\n\n\ndef step(x: torch.Tensor, lens_cpu):\n"
              "    lens = lens_cpu.to(x.device)\n    assert (x > 0).all()\n    return lens\n")
    (tmp_path / "a.py").write_text(source)
    proc = run_cli("check", "--diff", "--unsafe-fixes", "--min-confidence", "low", "--select", "SYNC102", "a.py",
                   cwd=tmp_path)
    changed = [line for line in proc.stdout.splitlines() if line.startswith(("+ ", "- ", "+    ", "-    "))]
    assert changed and all("lens" in line for line in changed), proc.stdout


def drop_replays(tree):
    """Forget the recorded runs (synclint.cache.replay): the next run reads the per-file cache."""
    for folder in tree.glob(".synclint_cache/v*/replay"):
        shutil.rmtree(folder)


def test_diff_on_a_cached_tree_fixes_each_file_once_then_never_again(tree, analyses):
    assert check(tree, "--min-confidence", "low", ".").returncode == 1
    analyses.update(analyse=0, parse=0)
    diff = ("--diff", "--unsafe-fixes", "--min-confidence", "low")
    first = check(tree, *diff, ".")
    assert first.stdout.count("--- a/pkg/") == 1 and "Would fix 1 finding in 1 file." in first.stderr
    # The fix starts from the check's findings: only the fixed text is analysed, once.
    assert analyses["analyse"] == 1
    for replayed in (True, False):
        if not replayed:
            drop_replays(tree)
        analyses.update(analyse=0, parse=0)
        again = check(tree, *diff, ".")
        assert analyses == {"analyse": 0, "parse": 0}
        assert (again.returncode, again.stdout, again.stderr) == (first.returncode, first.stdout, first.stderr)
    drop_replays(tree)
    # Another view is another diff: the fix is worked out again, from the cached check.
    analyses.update(analyse=0, parse=0)
    other = check(tree, *diff, "--ignore", "SYNC102", ".")
    assert other.stdout == "" and "Would fix 0 findings in 0 files." in other.stderr
    assert analyses == {"analyse": 0, "parse": 0}
    assert check(tree, *diff, ".").stdout == first.stdout


def test_a_fix_does_not_trust_a_check_of_other_bytes(tree):
    """A fix starts from the run's check only if the file still holds the bytes that check read."""
    from synclint.config import build_settings
    from synclint.engine import FileResult
    from synclint.fixes import fix_file

    train = tree / "pkg" / "train.py"
    settings = build_settings({"min-confidence": "low"}, tree, None)
    nothing = FileResult("pkg/train.py", [], analysis=[])  # a check that found nothing to fix
    stale = (hashlib.sha256(b"other bytes").digest(), nothing)
    assert fix_file(train, "pkg/train.py", settings, True, False, checked=stale).fixed == {"SYNC102": 1}
    current = (hashlib.sha256(train.read_bytes()).digest(), nothing)
    assert not fix_file(train, "pkg/train.py", settings, True, False, checked=current).fixed
