"""Fixes a formatter would not have to clean up: the project's line length, no parentheses
that are not needed."""

from __future__ import annotations

from conftest import run_cli

# One copy per call, of a list the host builds: the fix builds it in pinned memory.
LONG = """import torch


class Embedder(torch.nn.Module):
    def forward(self, hidden_states: torch.Tensor, token_ids: list[int]) -> torch.Tensor:
        for step in range(4):
            positions = torch.tensor(token_ids, dtype=torch.long, device=hidden_states.device)
            hidden_states = hidden_states + positions
        return hidden_states
"""
LONG_AT_100 = """import torch


class Embedder(torch.nn.Module):
    def forward(self, hidden_states: torch.Tensor, token_ids: list[int]) -> torch.Tensor:
        for step in range(4):
            positions = torch.tensor(
                token_ids, dtype=torch.long, pin_memory=torch.cuda.is_available()
            ).to(hidden_states.device, non_blocking=True)
            hidden_states = hidden_states + positions
        return hidden_states
"""
LONG_AT_120 = """import torch


class Embedder(torch.nn.Module):
    def forward(self, hidden_states: torch.Tensor, token_ids: list[int]) -> torch.Tensor:
        for step in range(4):
            positions = torch.tensor(token_ids, dtype=torch.long, pin_memory=torch.cuda.is_available()).to(
                hidden_states.device, non_blocking=True
            )
            hidden_states = hidden_states + positions
        return hidden_states
"""


def test_a_fixed_line_is_broken_at_the_line_length_of_ruff(write, tmp_path):
    path = write("model.py", LONG)
    write("pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    proc = run_cli("check", "--fix", "model.py", cwd=tmp_path)
    assert "Fixed 1 finding" in proc.stderr, proc.stderr
    assert path.read_text() == LONG_AT_100
    assert max(len(line) for line in path.read_text().splitlines()) <= 100


def test_line_length_of_black_and_of_synclint(write, tmp_path):
    path = write("model.py", LONG)
    write("pyproject.toml", "[tool.black]\nline-length = 120\n")
    run_cli("check", "--fix", "model.py", cwd=tmp_path)
    assert path.read_text() == LONG_AT_120
    path.write_text(LONG)
    # synclint's own key wins over the formatter's.
    write("pyproject.toml", "[tool.black]\nline-length = 120\n\n[tool.synclint]\nline-length = 100\n")
    run_cli("check", "--fix", "model.py", cwd=tmp_path)
    assert path.read_text() == LONG_AT_100


def test_a_line_that_fits_stays_one_line(write, tmp_path):
    path = write("model.py", LONG)
    write("ruff.toml", "line-length = 150\n")
    run_cli("check", "--fix", "model.py", cwd=tmp_path)
    assert path.read_text() == LONG.replace(
        "device=hidden_states.device)",
        "pin_memory=torch.cuda.is_available()).to(hidden_states.device, non_blocking=True)",
    )


def test_line_length_out_of_range_is_a_config_error(write, tmp_path):
    write("model.py", LONG)
    write("pyproject.toml", "[tool.synclint]\nline-length = 0\n")
    proc = run_cli("check", "model.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "`line-length` must be a number of characters from 1 to 320, not 0" in proc.stderr


# A value already in parentheses of its own over several lines: the fix keeps those, adds none.
PARENTHESIZED = """import torch


def normalize(latents: torch.Tensor, mean: list[float]) -> torch.Tensor:
    latents_mean = (
        torch.tensor(mean).view(1, 4, 1, 1).to(latents.device, latents.dtype)
    )
    return latents - latents_mean
"""
PARENTHESIZED_FIXED = """import torch


def normalize(latents: torch.Tensor, mean: list[float]) -> torch.Tensor:
    latents_mean = (
        torch.tensor(mean).view(1, 4, 1, 1).to(latents.device, latents.dtype, non_blocking=True)
    )
    return latents - latents_mean
"""
PARENTHESIZED_AT_80 = """import torch


def normalize(latents: torch.Tensor, mean: list[float]) -> torch.Tensor:
    latents_mean = (
        torch.tensor(mean)
        .view(1, 4, 1, 1)
        .to(latents.device, latents.dtype, non_blocking=True)
    )
    return latents - latents_mean
"""


def test_a_fix_adds_no_parentheses(write, tmp_path):
    path = write("norm.py", PARENTHESIZED)
    write("pyproject.toml", "[tool.synclint]\nline-length = 100\n")
    proc = run_cli("check", "--fix", "--unsafe-fixes", "norm.py", cwd=tmp_path)
    assert "Fixed 1 finding" in proc.stderr, proc.stderr
    assert path.read_text() == PARENTHESIZED_FIXED


def test_a_method_chain_too_long_is_split_at_its_dots(write, tmp_path):
    path = write("norm.py", PARENTHESIZED)
    write("pyproject.toml", "[tool.synclint]\nline-length = 80\n")
    run_cli("check", "--fix", "--unsafe-fixes", "norm.py", cwd=tmp_path)
    assert path.read_text() == PARENTHESIZED_AT_80


# A statement the formatter already split over lines: the fix lengthens its first line, and the
# whole statement is written again as the formatter writes it (joined, then split).
SPLIT_BEFORE = """import torch


def expand(latent_model_input: torch.Tensor, t: int, device: torch.device) -> torch.Tensor:
    for step in range(2):
        t_expand = torch.tensor([t] * latent_model_input.shape[0], device=device).to(
            dtype=latent_model_input.dtype
        )
    return t_expand
"""
SPLIT_FIXED = """import torch


def expand(latent_model_input: torch.Tensor, t: int, device: torch.device) -> torch.Tensor:
    for step in range(2):
        t_expand = (
            torch.tensor([t] * latent_model_input.shape[0], pin_memory=torch.cuda.is_available())
            .to(device, non_blocking=True)
            .to(dtype=latent_model_input.dtype)
        )
    return t_expand
"""


def test_a_statement_over_several_lines_is_written_again_whole(write, tmp_path):
    path = write("expand.py", SPLIT_BEFORE)
    write("pyproject.toml", "[tool.ruff]\nline-length = 100\n")
    proc = run_cli("check", "--fix", "expand.py", cwd=tmp_path)
    assert "Fixed 1 finding" in proc.stderr, proc.stderr
    assert path.read_text() == SPLIT_FIXED


# Black hugs arguments that fit on one line between the brackets, and keeps them one per line only
# for a trailing comma: a keyword the fix adds follows the same rule.
HUGGED = '''import torch


def schedule(device, n: int):
    steps = torch.randint(0, n, (n,), dtype=torch.long).to(
        device=device if device is not None else "cpu"
    )
    order = torch.randperm(n).to(
        device,
    )
    return steps, order
'''
HUGGED_FIXED = '''import torch


def schedule(device, n: int):
    steps = torch.randint(0, n, (n,), dtype=torch.long).to(
        device=device if device is not None else "cpu", non_blocking=True
    )
    order = torch.randperm(n).to(
        device,
        non_blocking=True,
    )
    return steps, order
'''


def test_a_keyword_added_to_a_call_over_several_lines_is_laid_out_as_black_lays_it_out(write, tmp_path):
    path = write("schedule.py", HUGGED)
    proc = run_cli("check", "--fix", "--unsafe-fixes", "--min-confidence", "low", "schedule.py", cwd=tmp_path)
    assert "Fixed 2 findings" in proc.stderr, proc.stderr
    assert path.read_text() == HUGGED_FIXED
