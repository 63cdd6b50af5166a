"""Every rule's own VALID and INVALID examples, Fixit style: one test runs them all."""

from __future__ import annotations

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
    findings = check_snippet(rule, example.code, example.config, example.filename)
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
