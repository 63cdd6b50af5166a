"""The documentation a user reads is generated from the code, so it cannot drift."""

from __future__ import annotations

from conftest import REPO

from synclint.docs import config_table, option_table, rule_table, with_generated_sections


def test_readme_generated_sections_match_the_code():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert with_generated_sections(readme) == readme, "README is stale: run `python -m synclint.docs`"


def test_generated_tables_name_every_rule_option_and_key():
    from synclint.config import CORE_KEYS
    from synclint.registry import all_rules

    rules, options, keys = rule_table(), option_table(), config_table()
    assert all(f"| {code} | {rule.name} |" in rules for code, rule in all_rules().items())
    assert "| `--baseline` FILE | report only findings not recorded in this baseline file |" in options
    assert "| `--min-confidence` low\\|medium\\|high | report only findings this sure |" in options
    assert all(f"| `{key}` |" in keys for key in CORE_KEYS)
    assert '| `min-confidence` | `"medium"` |' in keys
