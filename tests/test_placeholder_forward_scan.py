"""SYNC104 placeholder-forward-scan: which `.index` calls are placeholder scans, and the fix's layout."""

from __future__ import annotations

from synclint.model import Confidence
from synclint.rules.placeholder_forward_scan import PlaceholderForwardScan
from synclint.testing import check_snippet, fix_snippet


def findings(code: str):
    return check_snippet(PlaceholderForwardScan, code)


def test_minus_one_in_a_shape_is_the_inferred_dimension_not_a_placeholder():
    assert findings("def f(x):\n    dims = list(x.shape)\n    return dims.index(-1), x.size().index(-1)\n") == []


def test_output_token_history_with_minus_one_is_high_confidence():
    found = findings("def f(output_token_ids):\n    return output_token_ids.index(-1)\n")
    assert len(found) == 1 and found[0].confidence == Confidence.HIGH


def test_named_sentinel_needs_a_list_named_like_a_history():
    assert findings("def f(values):\n    return values.index(PLACEHOLDER)\n") == []
    found = findings("def f(token_buffer):\n    return token_buffer.index(PLACEHOLDER)\n")
    assert len(found) == 1 and found[0].confidence == Confidence.MEDIUM


def test_fix_writes_the_scan_with_the_file_s_own_indentation():
    code = "def f(token_ids):\n\tif token_ids:\n\t\tstart = token_ids.index(-1)\n\t\treturn start\n"
    expected = (
        "def f(token_ids):\n\tif token_ids:\n\t\tstart = len(token_ids)\n"
        "\t\twhile start > 0 and token_ids[start - 1] == -1:\n\t\t\tstart -= 1\n\t\treturn start\n"
    )
    assert fix_snippet(PlaceholderForwardScan, code) == expected


def test_no_fix_when_the_scan_would_call_or_read_the_result_again():
    calls = findings("def f(get):\n    i = get().output_ids.index(-1)\n")
    reads_itself = findings("def f(ids, i):\n    i = ids[i].index(-1)\n")
    one_line_if = findings("def f(ids):\n    if ids: i = ids.index(-1)\n")
    assert [len(calls), len(reads_itself), len(one_line_if)] == [1, 1, 1]
    assert calls[0].fix is None and reads_itself[0].fix is None and one_line_if[0].fix is None
