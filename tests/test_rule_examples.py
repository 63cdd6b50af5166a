"""Every rule's own VALID and INVALID examples, Fixit style: one test runs them all.

What each INVALID example reports (position, end, confidence, message and reason of every
finding) is pinned in `tests/snapshots/<CODE>.txt`, one section per example, as ruff pins its
fixtures' diagnostics. After a deliberate change, `SYNCLINT_UPDATE_SNAPSHOTS=1 pytest
tests/test_rule_examples.py` rewrites them; review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synclint.registry import builtin_rules
from synclint.rule import validate_rule_class
from synclint.testing import check_snippet, fix_snippet

RULES = builtin_rules()
VALID = [pytest.param(rule, ex, id=f"{rule.code}-valid-{i}") for rule in RULES for i, ex in enumerate(rule.VALID)]
INVALID = [pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}") for rule in RULES for i, ex in enumerate(rule.INVALID)]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_is_well_formed(rule):
    assert validate_rule_class(rule) == []


def test_rule_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule, example", VALID)
def test_valid_example_has_no_finding(rule, example):
    findings = check_snippet(rule, example.code, example.config, example.filename)
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("rule, example", INVALID)
def test_invalid_example_is_found(rule, example):
    findings = check_snippet(rule, example.code, example.config, example.filename, example.min_confidence)
    assert findings, f"{rule.code} found nothing in:\n{example.code}"
    assert all(f.code == rule.code for f in findings)
    if example.count is not None:
        assert len(findings) == example.count, [f.message for f in findings]
    if example.confidence is not None:
        assert findings[0].confidence == example.confidence


FIXED = [pytest.param(rule, ex, id=f"{rule.code}-fix-{i}") for rule in RULES for i, ex in enumerate(rule.INVALID)
         if ex.expected_fix is not None]


@pytest.mark.parametrize("rule, example", FIXED)
def test_invalid_example_is_fixed_as_documented(rule, example):
    fixed = fix_snippet(rule, example.code, example.config, example.filename)
    assert fixed == example.expected_fix
    # A second run changes nothing, and the result parses.
    assert fix_snippet(rule, fixed, example.config, example.filename) == fixed
    compile(fixed, example.filename, "exec")


SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("SYNCLINT_UPDATE_SNAPSHOTS") == "1"


def _snapshot_of(findings) -> str:
    lines = []
    for f in findings:
        lines.append(f"{f.location.row}:{f.location.column}-{f.end_location.row}:{f.end_location.column} "
                     f"{f.confidence} {f.code} {f.message}")
        if f.because:
            lines.append(f"    because: {f.because}")
    return "\n".join(lines)


def _sections(rule) -> dict[str, str]:
    path = SNAPSHOTS / f"{rule.code}.txt"
    if not path.exists():
        return {}
    sections: dict[str, str] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:]
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return {name: text.strip("\n") for name, text in sections.items()}


def _write_snapshot(rule) -> None:
    parts = []
    for i, example in enumerate(rule.INVALID):
        findings = check_snippet(rule, example.code, example.config, example.filename, example.min_confidence)
        parts.append(f"## invalid {i}\n{_snapshot_of(findings)}\n")
    SNAPSHOTS.mkdir(exist_ok=True)
    (SNAPSHOTS / f"{rule.code}.txt").write_text("\n".join(parts), encoding="utf-8")


@pytest.mark.parametrize("rule, example", INVALID)
def test_invalid_example_reports_what_its_snapshot_says(rule, example):
    if UPDATE:
        _write_snapshot(rule)
    index = rule.INVALID.index(example)
    findings = check_snippet(rule, example.code, example.config, example.filename, example.min_confidence)
    expected = _sections(rule).get(f"invalid {index}")
    assert expected is not None, f"no snapshot for {rule.code} invalid {index}: run with SYNCLINT_UPDATE_SNAPSHOTS=1"
    assert _snapshot_of(findings) == expected


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_snapshots_have_one_section_per_invalid_example(rule):
    assert sorted(_sections(rule)) == sorted(f"invalid {i}" for i in range(len(rule.INVALID)))
