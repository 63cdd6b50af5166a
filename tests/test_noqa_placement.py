"""Where a `# noqa` sits: on any line of the flagged statement, so that it survives black and
`ruff format`, which move a trailing comment within its statement and never out of it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run_cli

from synclint.noqa import Noqa, add_noqa, parse_noqa

# Lines that fit in 88 columns until `--add-noqa` lengthens them: black then splits each statement
# and leaves the comment on its closing line; `ruff format` (which leaves pragma comments out of a
# line's width) joins them again.
MODEL = """import torch


def step(batch, some_long_argument_name, another_long_argument_name_here):
    probs = torch.zeros(4, device="cuda")
    result = some_function_call(probs.sum().item(), some_long_argument_name, another)
    if probs.isinf().any() or probs.isnan().any() or some_long_argument_name > 3:
        pass
    value = torch.tensor([1, 2, 3], device=probs.device, dtype=torch.float32)
    return dict(a=probs.max().item(), b=another_long_argument_name_here, c=value)
"""

BLACK_SPLIT = """import torch


def step(batch, some_long_argument_name, another_long_argument_name_here):
    probs = torch.zeros(4, device="cuda")
    result = some_function_call(
        probs.sum().item(), some_long_argument_name, another
    )  # noqa: SYNC107
    if (
        probs.isinf().any() or probs.isnan().any() or some_long_argument_name > 3
    ):  # noqa: SYNC101
        pass
    value = torch.tensor(
        [1, 2, 3], device=probs.device, dtype=torch.float32
    )  # noqa: SYNC103
    return dict(
        a=probs.max().item(), b=another_long_argument_name_here, c=value
    )  # noqa: SYNC107
"""


def concise(tmp_path, *args: str):
    proc = run_cli("check", "--output-format", "concise", "--no-cache", *args, cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def formatter(tool: str, path) -> None:
    command = [sys.executable, "-m", "black", "-q", str(path)] if tool == "black" else \
        [sys.executable, "-m", "ruff", "format", "-q", "--no-cache", str(path)]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=path.parent, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_noqa_on_any_line_of_the_statement_covers_findings_that_start_in_it():
    text = BLACK_SPLIT
    marks = parse_noqa(text)
    # The statement of rows 6-8 has its comment on row 8: rows 6, 7 and 8 are covered, by that comment.
    assert [marks[row] for row in (6, 7, 8)] == [Noqa(8, frozenset({"SYNC107"}))] * 3
    assert marks[10] == Noqa(11, frozenset({"SYNC101"}))
    assert 12 not in marks and 5 not in marks  # `pass`, and the statement before: other statements
    # On the opening line, or inside the brackets: the same.
    opening = "x = f(  # noqa: SYNC107\n    a.item(),\n    b,\n)\ny = a.item()\n"
    assert [row for row, mark in sorted(parse_noqa(opening).items())] == [1, 2, 3, 4]
    inner = "x = f(\n    a.item(),  # noqa\n    b.item(),  # noqa: SYNC101\n)\n"
    assert parse_noqa(inner)[4] == Noqa(3, None)  # a bare noqa and a coded one: the bare one wins


def test_a_split_statement_with_its_noqa_on_the_closing_line_checks_clean(tmp_path):
    (tmp_path / "model.py").write_text(BLACK_SPLIT)
    assert concise(tmp_path, ".").stdout == "All checks passed!\n"
    # Without the comments, the same file has its five findings, at the rows the comments cover.
    (tmp_path / "model.py").write_text("\n".join(line.split("  # noqa")[0] for line in BLACK_SPLIT.split("\n")))
    found = [line.split(" ")[0:2] for line in concise(tmp_path, ".").stdout.splitlines() if ": SYNC" in line]
    assert found == [["model.py:7:9:", "SYNC107"], ["model.py:10:9:", "SYNC101"], ["model.py:10:32:", "SYNC101"],
                     ["model.py:13:13:", "SYNC103"], ["model.py:17:11:", "SYNC107"]]


def test_add_noqa_writes_at_the_end_of_the_statement_and_merges_with_its_noqa():
    text = "x = f(\n    a.item(),\n    b,\n)\ny = g(\n    a.item(),  # noqa: E501\n)\n"
    new, changed, skipped = add_noqa(text, {2: {"SYNC107"}, 6: {"SYNC107"}})
    assert (changed, skipped) == (2, [])
    assert new == "x = f(\n    a.item(),\n    b,\n)  # noqa: SYNC107\ny = g(\n    a.item(),  # noqa: E501, SYNC107\n)\n"
    assert add_noqa(new, {2: {"SYNC107"}, 6: {"SYNC107"}}) == (new, 0, [])
    # Text that does not tokenize: where its statements end is unknown, so nothing is written.
    assert add_noqa("x = f(\n    a.item(),\n", {2: {"SYNC107"}}) == ("x = f(\n    a.item(),\n", 0, [2])


@pytest.mark.parametrize("order", [("black", "ruff"), ("ruff", "black"), ("black", "ruff", "black")])
def test_add_noqa_then_the_formatters_then_check_exits_0(tmp_path, order):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    before = concise(tmp_path, ".")
    assert before.returncode == 1 and before.stdout.count(": SYNC") == 5
    proc = run_cli("check", "--add-noqa", "--no-cache", ".", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "Added 5 noqa directives in 1 file.\n")
    formatted = []
    for tool in order:
        formatter(tool, path)
        formatted.append(path.read_text())
        after = concise(tmp_path, ".")
        assert (after.returncode, after.stdout) == (0, "All checks passed!\n"), (tool, path.read_text())
    if order[0] == "black":
        assert formatted[0] == BLACK_SPLIT  # black moved every comment to the statement's closing line
