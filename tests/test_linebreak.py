"""linebreak: a line a fix made too long, broken as black and ruff format break it (each
expected output here is what `ruff format` writes for the same line)."""

from __future__ import annotations

import pytest

from synclint.linebreak import break_line

CASES = [
    # the last bracket pair, the trailer that fits glued to the tail
    (
        "    ids = torch.tensor(token_ids, dtype=torch.long, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)",
        88,
        [
            "    ids = torch.tensor(",
            "        token_ids, dtype=torch.long, pin_memory=torch.cuda.is_available()",
            "    ).to(device, non_blocking=True)",
        ],
    ),
    # a chain of two method calls: in parentheses, one call a line
    (
        "        weights = torch.tensor([scale] * len(prompt), pin_memory=torch.cuda.is_available()).to(self.device, non_blocking=True).reshape(-1, 1, 1, 1)",
        88,
        [
            "        weights = (",
            "            torch.tensor([scale] * len(prompt), pin_memory=torch.cuda.is_available())",
            "            .to(self.device, non_blocking=True)",
            "            .reshape(-1, 1, 1, 1)",
            "        )",
        ],
    ),
    # arguments that do not fit on one line: one a line, with a trailing comma
    (
        "    out = combine(first_argument_name, second_argument_name, third_argument_name, fourth_argument)",
        60,
        [
            "    out = combine(",
            "        first_argument_name,",
            "        second_argument_name,",
            "        third_argument_name,",
            "        fourth_argument,",
            "    )",
        ],
    ),
    # a returned tuple: in parentheses, one element a line
    (
        "    return prompt_embeds[1], prompt_embeds[0], prompt_attention_mask, negative_attention_mask",
        60,
        [
            "    return (",
            "        prompt_embeds[1],",
            "        prompt_embeds[0],",
            "        prompt_attention_mask,",
            "        negative_attention_mask,",
            "    )",
        ],
    ),
    # a condition
    (
        "        while first_placeholder > 0 and req_output_token_ids[first_placeholder - 1] == -1:",
        88,
        [
            "        while (",
            "            first_placeholder > 0 and req_output_token_ids[first_placeholder - 1] == -1",
            "        ):",
        ],
    ),
    # an augmented assignment keeps its target whole
    (
        "    value_local[:, :, h_start:h_end, w_start:w_end] += latents_view_denoised",
        60,
        ["    value_local[:, :, h_start:h_end, w_start:w_end] += (", "        latents_view_denoised", "    )"],
    ),
]


@pytest.mark.parametrize("line, limit, expected", CASES)
def test_a_long_line_is_broken_as_ruff_format_breaks_it(line, limit, expected):
    assert break_line(line, limit) == expected


def test_inside_brackets_a_line_is_split_at_its_delimiters():
    line = "        torch.tensor(self.vae.config.latents_mean).view(1, 4, 1, 1).to(latents.device, latents.dtype, non_blocking=True)"
    assert break_line(line, 88, inside_brackets=True, statement=False) == [
        "        torch.tensor(self.vae.config.latents_mean)",
        "        .view(1, 4, 1, 1)",
        "        .to(latents.device, latents.dtype, non_blocking=True)",
    ]


def test_an_assert_message_stays_a_message():
    # `assert (test, message)` would assert a non-empty tuple: always true.
    line = '        assert image.shape[-2:] == mask.shape[-2:], "Image and Mask must have the same dimensions"'
    broken = break_line(line, 50)
    assert broken[0] != "        assert ("
    assert " ".join(part.strip() for part in broken).replace("[ ", "[").replace(" ]", "]") == line.strip()


@pytest.mark.parametrize("line", [
    "    x = 1",  # fits
    "    x = some_function_name(argument_one, argument_two) + \\",  # a backslash
    "    # a comment that is far too long to fit in the line length of forty characters",
    "    x = 'a string that is far too long to fit in forty characters and cannot be split'",
])
def test_what_cannot_or_need_not_be_broken_comes_back_as_it_was(line):
    assert break_line(line, 40) == [line]
