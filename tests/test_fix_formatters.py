"""`--fix` on formatted code leaves the formatter nothing to do: black and `ruff format` (the test
extra pins both) pass `--check` over the fixed file, at the project's line length."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run_cli

# As black writes it at 88 columns: statements split over several lines, a trailing comment.
SPLIT = """import torch


class Model(torch.nn.Module):
    def forward(self, hidden_states, token_ids, batch):
        for step in range(10):
            positions = torch.tensor(
                token_ids, dtype=torch.long, device=hidden_states.device
            )
            mask = batch["attention_mask"].to(
                hidden_states.device
            )  # the mask for this step
            self.buffer_for_positions_of_this_step = torch.tensor(
                token_ids, device="cuda"
            )
            x = torch.tensor(
                [1, 2, 3], device=hidden_states.device
            )  # a comment that is long enough
            hidden_states = self.layer(hidden_states, positions, mask, x)
        return hidden_states
"""
# The fixes, laid out as the formatters lay them out: each statement joined and split again.
SPLIT_FIXED = """import torch


class Model(torch.nn.Module):
    def forward(self, hidden_states, token_ids, batch):
        for step in range(10):
            positions = torch.tensor(token_ids, dtype=torch.long).to(
                hidden_states.device, non_blocking=True
            )
            mask = batch["attention_mask"].to(
                hidden_states.device, non_blocking=True
            )  # the mask for this step
            self.buffer_for_positions_of_this_step = torch.tensor(token_ids).to(
                "cuda", non_blocking=True
            )
            x = torch.tensor([1, 2, 3], pin_memory=torch.cuda.is_available()).to(
                hidden_states.device, non_blocking=True
            )  # a comment that is long enough
            hidden_states = self.layer(hidden_states, positions, mask, x)
        return hidden_states
"""
# At 80 columns, with magic trailing commas (black keeps those statements one argument a line).
EXPLODED = """import torch


class Model(torch.nn.Module):
    def forward(self, hidden_states, token_ids, batch):
        for step in range(10):
            positions = torch.tensor(
                token_ids,
                dtype=torch.long,
                device=hidden_states.device,
            )
            lengths = torch.tensor(
                [len(t) for t in token_ids],
                device=hidden_states.device,
                dtype=torch.int32,
            )
            out = self.layer(hidden_states, positions, lengths)
        return out
"""

def formatted(tool: str, path, length: int) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "black", "-q", "--check", "-l", str(length), str(path)] if tool == "black" \
        else [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "--line-length", str(length), str(path)]
    return subprocess.run(command, capture_output=True, text=True, cwd=path.parent, timeout=120)


def fix(tmp_path, source: str, length: int) -> str:
    (tmp_path / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {length}\n")
    path = tmp_path / "model.py"
    path.write_text(source)
    for tool in ("black", "ruff"):
        assert formatted(tool, path, length).returncode == 0, f"{tool} would reformat the input"
    proc = run_cli("check", "--fix", "--unsafe-fixes", "--min-confidence", "low", "model.py", cwd=tmp_path)
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("Fixed "), proc.stderr
    return path.read_text()


@pytest.mark.parametrize("tool", ["black", "ruff"])
@pytest.mark.parametrize("source, length", [(SPLIT, 88), (EXPLODED, 80), (EXPLODED, 88)], ids=["split", "exploded-80",
                                                                                          "exploded-88"])
def test_the_formatters_have_nothing_to_redo_after_fix(tmp_path, tool, source, length):
    fixed = fix(tmp_path, source, length)
    assert fixed != source
    proc = formatted(tool, tmp_path / "model.py", length)
    assert proc.returncode == 0, fixed


def test_a_split_statement_is_split_again_where_the_fix_moves_its_split(tmp_path):
    assert fix(tmp_path, SPLIT, 88) == SPLIT_FIXED


def test_a_magic_trailing_comma_keeps_one_argument_a_line(tmp_path):
    fixed = fix(tmp_path, EXPLODED, 80)
    assert "                dtype=torch.long,\n            ).to(hidden_states.device, non_blocking=True)\n" in fixed
    assert ("                dtype=torch.int32,\n                pin_memory=torch.cuda.is_available(),\n"
            "            ).to(hidden_states.device, non_blocking=True)\n") in fixed
