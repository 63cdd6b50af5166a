"""Properties of --fix on generated programs: no crash, output parses, a second fix is a no-op."""

from __future__ import annotations

from pathlib import Path

import hypothesmith
import libcst as cst
from hypothesis import HealthCheck, given, settings, strategies as st

from synclint.config import build_settings
from synclint.engine import check_source
from synclint.fixes import fix_text
from synclint.source import decode

ALL_RULES = build_settings({}, Path("."), None)
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


def _fix_twice(text: str) -> None:
    source = decode(text.encode("utf-8"))
    once = fix_text(source, "generated.py", ALL_RULES, unsafe=True).text
    cst.parse_module(once)
    twice = fix_text(decode(once.encode("utf-8")), "generated.py", ALL_RULES, unsafe=True).text
    assert twice == once


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
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
