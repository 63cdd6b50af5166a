"""SYNC108 data-dependent-shape: which forms wait, and when a size is passed for you."""

from __future__ import annotations

from synclint.model import Applicability, Confidence
from synclint.rules.data_dependent_shape import DataDependentShape
from synclint.testing import check_snippet, fix_snippet


def findings(code: str):
    return check_snippet(DataDependentShape, code, min_confidence=Confidence.LOW)


def test_integer_repeats_do_not_wait_but_tensor_repeats_do():
    code = (
        "import torch\n\ndef f(x: torch.Tensor, counts: torch.Tensor, k: int):\n"
        "    a = x.repeat_interleave(k, dim=0)\n    b = torch.repeat_interleave(x, 2)\n"
        "    c = x.repeat_interleave(counts, dim=0)\n"
    )
    (found,) = findings(code)
    assert "x.repeat_interleave(counts, dim=0)" in found.message
    # `counts`, a helper's parameter outside an nn.Module, is a tensor of unknown device.
    assert found.confidence == Confidence.LOW and "outside an nn.Module" in found.because


def test_host_tensor_repeats_of_a_gpu_tensor_wait():
    code = (
        "import torch\nx = torch.ones(4, device='cuda')\ncounts = torch.tensor([1, 2, 1, 0])\n"
        "y = torch.repeat_interleave(x, counts)\n"
    )
    (found,) = findings(code)
    assert found.confidence == Confidence.HIGH


def test_host_tensors_alone_do_not_wait():
    code = "import torch\ncounts = torch.tensor([1, 2])\ny = torch.repeat_interleave(torch.arange(2), counts)\n"
    assert findings(code) == []


def test_no_fix_without_a_known_host_size_and_the_message_says_so():
    code = (
        "import torch\n\ndef f(x: torch.Tensor, counts: torch.Tensor, total):\n"
        "    return x.repeat_interleave(counts)\n"
    )
    (found,) = findings(code)
    assert found.fix is None and "no such size in scope" in found.message


def test_no_fix_when_two_sizes_could_be_meant():
    code = (
        "import torch\n\ndef f(x: torch.Tensor, counts: torch.Tensor, total: int, num_tokens: int):\n"
        "    return x.repeat_interleave(counts)\n"
    )
    (found,) = findings(code)
    assert found.fix is None


def test_size_assigned_after_the_call_is_not_in_scope():
    code = (
        "import torch\nimport torch.nn.functional as F\n\ndef f(ids: torch.Tensor, cfg):\n"
        "    hot = F.one_hot(ids)\n    num_experts = 8\n    return hot\n"
    )
    (found,) = findings(code)
    assert found.fix is None


def test_size_fix_is_unsafe_and_keeps_a_multiline_call_layout():
    code = (
        "import torch\nimport torch.nn.functional as F\n\nids = torch.zeros(4, dtype=torch.long, device='cuda')\n"
        "num_experts = 8\nhot = F.one_hot(\n    ids,\n)\n"
    )
    (found,) = findings(code)
    assert found.fix is not None and found.fix.applicability == Applicability.UNSAFE
    fixed = fix_snippet(DataDependentShape, code)
    assert fixed.endswith("hot = F.one_hot(\n    ids,\n    num_classes=num_experts,\n)\n")


def test_size_fix_inside_a_function_keeps_the_block_indentation():
    code = (
        "import torch\nimport torch.nn.functional as F\n\n\ndef f(input_ids: torch.Tensor):\n"
        "    num_experts = 8\n    return F.one_hot(\n        input_ids,\n    )\n"
    )
    fixed = fix_snippet(DataDependentShape, code)
    assert fixed.endswith("    return F.one_hot(\n        input_ids,\n        num_classes=num_experts,\n    )\n")


def test_cpu_modules_report_only_proven_gpu_tensors():
    code = (
        "import torch\n\ndef f(x: torch.Tensor):\n    a = x.nonzero()\n"
        "    b = torch.zeros(4, device='cuda').nonzero()\n"
    )
    assert len(check_snippet(DataDependentShape, code)) == 2
    (found,) = check_snippet(DataDependentShape, code, filename="attention/backends/cpu_mla.py")
    assert found.confidence == Confidence.HIGH


def test_one_hot_with_explicit_default_waits_and_is_not_given_a_second_size():
    code = (
        "import torch\nimport torch.nn.functional as F\n\ndef f(ids: torch.Tensor, num_classes: int):\n"
        "    return F.one_hot(ids, -1)\n"
    )
    (found,) = findings(code)
    assert found.fix is None


def test_mask_parameter_of_unknown_dtype_is_not_a_bool_mask():
    code = "import torch\n\ndef f(x: torch.Tensor, index: torch.Tensor):\n    return x[index]\n"
    assert findings(code) == []


def test_mask_built_in_the_function_is_a_bool_mask():
    code = (
        "import torch\n\ndef f(x: torch.Tensor, lens: torch.Tensor):\n"
        "    valid = lens > 0\n    valid = valid & (x != 0)\n    keep = torch.zeros_like(lens, dtype=torch.bool)\n"
        "    return x[valid], x[keep], x[valid.nonzero_static(size=4)]\n"
    )
    assert [f.message.split("`")[1] for f in findings(code)] == ["x[valid]", "x[keep]"]


def test_mask_writes_do_not_wait_but_augmented_writes_read_first():
    code = "import torch\nx = torch.zeros(8, device='cuda')\nx[x > 0] = 1.0\nx[x < 0] *= 2\n"
    (found,) = findings(code)
    assert found.location.row == 4


def test_histc_with_zero_range_takes_it_from_the_data():
    code = (
        "import torch\nx = torch.zeros(8, device='cuda')\na = torch.histc(x, 4, min=0, max=0)\n"
        "b = torch.histc(x, 4, 0.0, 1.0)\nc = x.histc(4, -1, 1)\n"
    )
    (found,) = findings(code)
    assert found.location.row == 3


def test_numpy_and_unresolved_modules_are_never_flagged():
    code = (
        "import numpy as np\nimport torch\nimport pandas as pd\nx = torch.zeros(8, device='cuda')\n"
        "a = np.nonzero(np.arange(3))\nb = np.where(np.arange(3) > 1)\nc = pd.unique([1, 2])\n"
        "d = x.where(x > 0, 0.0)\n"
    )
    assert findings(code) == []
