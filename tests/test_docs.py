"""The documentation a user reads is generated from the rules, so it cannot drift."""

from __future__ import annotations

from conftest import REPO

from synclint.docs import rule_table, with_rule_table


def test_readme_rule_table_matches_the_rules():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert with_rule_table(readme) == readme, "README rule table is stale: run `python -m synclint.docs`"
    assert rule_table() in readme
