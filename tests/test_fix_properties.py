"""Properties of --fix on generated programs: no crash, output parses, a second fix is a no-op."""

from __future__ import annotations

import os
from pathlib import Path

import hypothesmith
import libcst as cst
from hypothesis import HealthCheck, given, settings, strategies as st

from synclint.config import build_settings
from synclint.engine import check_bytes, check_source
from synclint.fixes import fix_bytes, fix_text
from synclint.source import decode

ALL_RULES = build_settings({}, Path("."), None)
# Examples per fuzz test: SYNCLINT_FUZZ_EXAMPLES=20000 runs the long fuzz; the suite keeps a short one.
FUZZ_EXAMPLES = int(os.environ.get("SYNCLINT_FUZZ_EXAMPLES", "40"))
# A prefix that makes every rule's prefilter match and puts device tensors in scope.
PRELUDE = "import torch\nx = torch.randn(4, device='cuda')\nlst = [1, -1]\n"
SYNC_SNIPPETS = st.sampled_from(
    [
        "if x.isinf().any() or x.isnan().any():\n    x = torch.clamp(x, min=-1.0, max=1.0)\n",
        "y = torch.tensor([1, 2], device='cuda')\n",
        "z = x.cpu().to('cuda')\n",
        "i = lst.index(-1)\n",
        "v = x.sum().item()\n",
        "x[0] = 1.0\n",
        "w = torch.linalg.inv(x)\n",
    ]
)


def _fixable(text: str) -> list:
    """The findings of every rule in `text` that come with a fix."""
    return [f for f in check_source(decode(text.encode("utf-8")), "generated.py", ALL_RULES).findings if f.fix]


def _fix_twice(text: str) -> None:
    source = decode(text.encode("utf-8"))
    once = fix_text(source, "generated.py", ALL_RULES, unsafe=True).text
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        # Python accepts it, libcst does not (hypothesmith found `\\` + CRLF at the end of a file):
        # the checker reports SYNC000, and the fixer must leave the text as it is.
        assert once == text
        return
    cst.parse_module(once)
    # The fixes were applied, not only harmless: a text with fixable findings changed, and what
    # the fixer leaves has none (it fixes to a fixpoint).
    if _fixable(text):
        assert once != text
    assert _fixable(once) == []
    twice = fix_text(decode(once.encode("utf-8")), "generated.py", ALL_RULES, unsafe=True).text
    assert twice == once


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_programs_never_crash_the_checker_or_fixer(program):
    text = PRELUDE + program
    result = check_source(decode(text.encode("utf-8")), "generated.py", ALL_RULES)
    assert not any(f.code == "SYNC001" for f in result.findings), result.internal_error
    _fix_twice(text)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(SYNC_SNIPPETS, min_size=1, max_size=5), st.sampled_from(["", "def f():\n", "class C:\n    def m(self):\n"]))
def test_fixes_of_mixed_sync_snippets_parse_and_are_idempotent(snippets, wrapper):
    body = "".join(snippets)
    if wrapper:
        indent = "    " * wrapper.count(":")
        body = wrapper + "".join(indent + line + "\n" for line in body.splitlines())
    _fix_twice(PRELUDE + body)


# Mutations of real files: the fixture kernels, cut short, with bytes flipped, lines dropped or doubled.
REAL_FILES = sorted((Path(__file__).resolve().parent.parent / "fixtures").glob("SYNC*/before.py"))


@st.composite
def mutated_real_files(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(REAL_FILES)).read_bytes())
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "drop_line", "double_line", "insert"]))
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            del data[position:]
        elif kind == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind in ("drop_line", "double_line"):
            lines = bytes(data).splitlines(keepends=True)
            if lines:
                i = position % len(lines)
                lines[i:i + 1] = [] if kind == "drop_line" else [lines[i], lines[i]]
                data = bytearray(b"".join(lines))
        elif kind == "insert":
            data[position:position] = draw(st.sampled_from([b"(", b")", b":", b"\n", b"    ", b"\t", b'"', b"\\", b"\x00",
                                                            b"\xff", b"\r", b"lambda ", b".item()", b"if x.any():\n"]))
    return bytes(data)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_real_files())
def test_mutated_real_files_never_crash_and_fixes_parse(data):
    result = check_bytes(data, "mutated.py", ALL_RULES)
    assert result.internal_error is None, result.internal_error
    fixed = fix_bytes(data, "mutated.py", ALL_RULES, unsafe=True)
    assert fixed.result.internal_error is None, fixed.result.internal_error
    if fixed.new_bytes is not None:
        compile(fixed.new_bytes, "mutated.py", "exec", dont_inherit=True)
        again = fix_bytes(fixed.new_bytes, "mutated.py", ALL_RULES, unsafe=True)
        assert again.new_bytes is None  # a second fix changes nothing
