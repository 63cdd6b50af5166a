"""Every console block of the README is what its commands print (tests/readme_examples.py runs
them; `python -m tests.readme_examples --update` rewrites the blocks after a deliberate change)."""

from __future__ import annotations

import pytest
from readme_examples import README, examples, run_example

EXAMPLES = examples(README.read_text(encoding="utf-8"))


def test_the_readme_has_its_examples():
    headings = [example.heading for example in EXAMPLES]
    assert headings[:2] == ["An example", "Usage"] and "Suppressing a finding" in headings
    assert all(block.body.startswith("$ ") for example in EXAMPLES for block in example.consoles)


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.heading for example in EXAMPLES])
def test_each_console_block_is_what_its_commands_print(example):
    ran = run_example(example)
    for block, output in zip(example.consoles, ran, strict=True):
        assert block.body == output, "README is stale: run `python -m tests.readme_examples --update`"
