"""The one policy (synclint/policy.py): evidence in, confidence out, and nothing else decides one."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synclint import policy
from synclint.evidence import Basis, Certainty, Evidence, Reach
from synclint.model import Confidence

ROOT = Path(__file__).resolve().parent.parent

# Where a `Confidence` member or a `confidence=` keyword may appear without deciding a finding's confidence:
# the policy itself, the enum's own module, the view's threshold (`--min-confidence`, a filter), the
# editor's severity for each confidence (a reading), and rules' INVALID examples (expectations, checked by tests).
ALLOWED = {"synclint/policy.py", "synclint/model.py", "synclint/config.py", "synclint/server/convert.py"}


def _deciders(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    expectations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Invalid":
            expectations.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in expectations:
            continue
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Confidence"
                and node.attr in ("HIGH", "MEDIUM", "LOW")):
            found.append(f"{node.lineno}: Confidence.{node.attr}")
        elif isinstance(node, ast.keyword) and node.arg == "confidence":
            found.append(f"{node.value.lineno}: confidence=")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{node.lineno}: .confidence =" for t in targets
                      if isinstance(t, ast.Attribute) and t.attr == "confidence"]
    return found


def test_nothing_but_the_policy_decides_a_confidence():
    offenders = {}
    for path in sorted([*ROOT.joinpath("synclint").rglob("*.py"), *ROOT.joinpath("rules").glob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        found = _deciders(path)
        if found:
            offenders[rel] = found
    assert offenders == {}


def test_the_scan_sees_a_confidence_set_elsewhere(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from dataclasses import replace\n"
                       "def lower(f):\n    return replace(f, confidence=Confidence.LOW)\n")
    assert _deciders(planted) == ["3: confidence=", "3: Confidence.LOW"]


def _evidence(runs="loop", reach=Reach.CUDA, value=Certainty.MEDIUM, basis=Basis.OTHER):
    return Evidence(value, runs, basis, reach)


@pytest.fixture
def table(monkeypatch):
    rows: dict[tuple[str, ...], tuple[int, int]] = {}
    monkeypatch.delenv(policy.UNCALIBRATED, raising=False)
    monkeypatch.setattr(policy, "ROWS", rows)
    monkeypatch.setattr(policy, "MEDIUM_AT", 0.85)
    return rows


def test_a_kind_measured_at_the_calibrated_precision_with_enough_examples_is_shown_by_default(table):
    table[("SYNC107", "medium", "other", "repeats")] = (40, 36)  # 0.90
    decision = policy.decide("SYNC107", _evidence())
    assert decision.confidence is Confidence.MEDIUM
    assert decision.row == ("SYNC107", "medium", "other", "repeats")
    assert (decision.examples, decision.synced) == (40, 36)


def test_high_needs_95_percent_and_more_examples(table):
    table[("SYNC107", "medium", "other", "repeats")] = (25, 25)  # enough to decide, too few for high
    assert policy.confidence("SYNC107", _evidence()) is Confidence.MEDIUM
    table[("SYNC107", "medium", "other", "repeats")] = (40, 39)
    assert policy.confidence("SYNC107", _evidence()) is Confidence.HIGH


def test_a_kind_below_the_calibrated_precision_is_low_even_where_a_coarser_kind_is_better(table):
    table[("SYNC107", "medium", "other", "repeats")] = (40, 20)
    table[("SYNC107", "medium", "repeats")] = (200, 190)
    decision = policy.decide("SYNC107", _evidence())
    assert decision.confidence is Confidence.LOW and decision.row == ("SYNC107", "medium", "other", "repeats")


def test_a_kind_with_too_few_examples_backs_off_to_the_next_and_stays_low_without_one(table):
    table[("SYNC107", "medium", "other", "repeats")] = (5, 5)
    assert policy.decide("SYNC107", _evidence()).row is None
    assert policy.confidence("SYNC107", _evidence()) is Confidence.LOW
    table[("SYNC107", "medium", "repeats")] = (30, 27)
    assert policy.decide("SYNC107", _evidence()).row == ("SYNC107", "medium", "repeats")


def test_a_dozen_examples_do_not_decide_a_kind(table):
    # Issue 43: 12 examples (2 synced) of `SYNC101 medium code` hid the README's seed pattern, the
    # clamp of vLLM PR #42347. A dozen cannot tell 0.17 from 0.5: the coarser kind decides.
    assert policy.ENOUGH > 12
    code = _evidence(runs="code", basis=Basis.ANNOTATION)
    table[("SYNC101", "medium", "code")] = (12, 2)
    table[("SYNC101", "medium")] = (42, 38)
    assert policy.decide("SYNC101", code).row == ("SYNC101", "medium")
    assert policy.confidence("SYNC101", code) is Confidence.MEDIUM


def test_a_wait_on_a_line_that_runs_once_is_low_whatever_the_table_says(table):
    once = _evidence(runs="init")
    for kind in policy.kinds("SYNC107", once):
        table[kind] = (100, 100)
    assert policy.decide("SYNC107", once) == policy.Decision(Confidence.LOW, None)
    # A bug that is one whatever how often it runs (an unsynchronized copy) is measured as any other.
    bug = Evidence(Certainty.MEDIUM, "init", Basis.OTHER, Reach.CUDA, wait=False)
    table[("SYNC104", "medium", "other", "init")] = (40, 36)
    assert policy.confidence("SYNC104", bug) is Confidence.MEDIUM


@pytest.mark.parametrize("reach", [Reach.ACCELERATOR, Reach.HOST_SIDE])
def test_code_that_ordinary_use_runs_off_the_gpu_is_low(table, reach):
    for kind in policy.kinds("SYNC107", _evidence(reach=reach)):
        table[kind] = (100, 100)
    assert policy.confidence("SYNC107", _evidence(reach=reach)) is Confidence.LOW


def test_uncalibrated_the_device_model_s_certainty_is_the_confidence(monkeypatch):
    monkeypatch.setenv(policy.UNCALIBRATED, "1")
    assert policy.confidence("SYNC107", _evidence(value=Certainty.HIGH)) is Confidence.HIGH
    assert policy.confidence("SYNC107", _evidence(value=Certainty.HIGH, runs="interval")) is Confidence.MEDIUM
    assert policy.confidence("SYNC107", _evidence(value=Certainty.HIGH, runs="init")) is Confidence.LOW


def test_a_file_synclint_could_not_check_is_always_shown():
    assert policy.confidence("SYNC000", None) is Confidence.HIGH


def test_the_table_is_counts_of_findings_and_of_those_that_synced():
    from synclint.policy_table import ROWS

    assert ROWS, "bench/calibrate.py --write has not been run"
    for kind, (examples, synced) in ROWS.items():
        assert 0 <= synced <= examples and len(kind) in (2, 3, 4)


def test_a_finding_carries_its_evidence_and_the_policy_s_confidence(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(
        "import torch\n"
        "model = torch.nn.Linear(4, 4).cuda()\n"
        "def train(batches):\n"
        "    for x in batches:\n"
        "        loss = model(x.cuda()).sum()\n"
        "        print(loss.item())\n"
    )
    calibrated = {k: v for k, v in os.environ.items() if k != policy.UNCALIBRATED}
    out = subprocess.run([sys.executable, "-m", "synclint", "check", "--output-format", "json", "--min-confidence",
                          "low", "--no-cache", str(source)], capture_output=True, text=True, check=False, env=calibrated)
    assert out.returncode == 1, out.stderr
    findings = json.loads(out.stdout)
    item = next(f for f in findings if f["location"]["row"] == 6)
    assert item["code"] == "SYNC107"
    assert item["evidence"] == {"certainty": "medium", "basis": "module-output", "runs": "loop", "reach": "cuda",
                                "wait": True}
    assert item["because"] == "model(...) runs a module on the GPU (torch.nn.Linear(4, 4).cuda())"
    evidence = Evidence(Certainty.MEDIUM, "loop", Basis.MODULE_OUTPUT, Reach.CUDA)
    assert item["confidence"] == str(policy.confidence("SYNC107", evidence))
