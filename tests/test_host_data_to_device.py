"""SYNC103 host-data-to-device: what counts as host data, how sure, and which fix is offered."""

from __future__ import annotations

import textwrap

from rules.host_data_to_device import HostDataToDevice
from synclint.model import Applicability, Confidence
from synclint.testing import check_snippet, fix_snippet


def findings(code: str, config: dict | None = None):
    return check_snippet(HostDataToDevice, textwrap.dedent(code), config, min_confidence=Confidence.LOW)


def only(code: str, config: dict | None = None):
    found = findings(code, config)
    assert len(found) == 1, [f.message for f in found]
    return found[0]


def fixed(code: str, config: dict | None = None) -> str:
    """The fixed code, on lines long enough that the fix's own line is never broken (test_fix_layout)."""
    return fix_snippet(HostDataToDevice, textwrap.dedent(code), {"line-length": 320, **(config or {})})


def test_confidence_follows_the_data_and_the_device():
    code = """
    import torch

    def f(ids: list[int], x: torch.Tensor, data):
        a = torch.tensor(ids, device="cuda")
        b = torch.tensor(ids, device=x.device)
        c = torch.tensor(data, device="cuda")
        d = torch.as_tensor(data, device="cuda")
        e = torch.tensor(-1, device="cuda")
    """
    by_row = {f.location.row: f.confidence for f in findings(code)}
    assert by_row == {
        5: Confidence.HIGH,  # a list on a proven CUDA device
        6: Confidence.MEDIUM,  # the device of a tensor parameter
        7: Confidence.MEDIUM,  # data of unknown type: torch.tensor is for Python data
        8: Confidence.LOW,  # as_tensor of unknown data may be a GPU tensor already
        9: Confidence.MEDIUM,  # a scalar
    }


def test_data_of_unknown_kind_is_copied_from_pageable_memory():
    # torch.tensor cannot pin a tensor made from numpy (RuntimeError, measured): only Python data is pinned.
    finding = only("import torch\n\ndef f(data):\n    return torch.tensor(data, device='cuda')\n")
    assert finding.fix.applicability is Applicability.SAFE  # torch.tensor copies: nothing is shared
    assert "4 MB" in finding.fix.message
    assert fixed("import torch\n\ndef f(data):\n    return torch.tensor(data, device='cuda')\n").endswith(
        "    return torch.tensor(data).to('cuda', non_blocking=True)\n"
    )


def test_python_data_is_pinned_whatever_the_constructor():
    assert fixed("import torch\n\ndef f(ids: list[int] | None):\n    return torch.as_tensor(ids, device='cuda')\n") == (
        "import torch\n\ndef f(ids: list[int] | None):\n"
        "    return torch.tensor(ids, pin_memory=torch.cuda.is_available()).to('cuda', non_blocking=True)\n"
    )


def test_numpy_parameter_copied_without_a_copy_of_its_own_is_an_unsafe_fix():
    # `torch.as_tensor(a)` reads `a`'s memory: a view of a pinned buffer would be overwritten under the copy.
    code = "import numpy as np\nimport torch\n\ndef f(a: np.ndarray):\n    return torch.as_tensor(a, device='cuda')\n"
    assert only(code).fix.applicability is Applicability.UNSAFE
    fresh = (
        "import numpy as np\nimport torch\n\ndef f(n: int):\n    return torch.as_tensor(np.arange(n), device='cuda')\n"
    )
    assert only(fresh).fix.applicability is Applicability.SAFE


def test_numpy_data_with_the_older_helper_signature_is_not_given_to_it():
    # The older helper pins with torch.tensor, which raises on numpy arrays.
    result = fixed(
        "import numpy as np\nimport torch\nfrom vllm.utils import async_tensor_h2d\n\n"
        "def f(a: np.ndarray, dev: torch.device):\n    return torch.tensor(a, device=dev)\n",
        {"async-h2d-signature": "data-dtype-device-pin"},
    )
    assert result.endswith("    return torch.tensor(a).to(dev, non_blocking=True)\n")


def test_no_finding_when_no_host_data_crosses():
    assert findings(
        """
        import torch
        x = torch.ones(4, device="cuda")
        a = torch.as_tensor(x, device="cuda")
        b = torch.tensor([], device="cuda")
        c = torch.tensor([1, 2])
        d = torch.zeros(3, device="cuda")
        e = torch.tensor([1, 2], pin_memory=True).to("cuda", non_blocking=True)
        """
    ) == []


def test_host_tensor_data_is_reported_without_a_fix():
    finding = only("import torch\nt = torch.ones(4)\nu = torch.as_tensor(t, device='cuda')\n")
    assert finding.fix is None


def test_unknown_keywords_leave_the_call_unfixed():
    finding = only("import torch\nw = torch.tensor([1.0, 2.0], device='cuda', requires_grad=True)\n")
    assert finding.fix is None


def test_new_tensor_on_a_call_result_without_dtype_is_not_fixed():
    # The fix names the receiver twice (dtype and device): only a plain name may be repeated.
    finding = only("import torch\nbias = torch.zeros(2, device='cuda').new_tensor([0.5, 1.5])\n")
    assert finding.fix is None


def test_torch_imported_under_another_name():
    assert fixed("import torch as T\nidx = T.tensor([1, 2], device='cuda')\n") == (
        "import torch as T\nidx = T.tensor([1, 2], pin_memory=T.cuda.is_available()).to('cuda', non_blocking=True)\n"
    )


def test_tensor_imported_from_torch_adds_import_torch():
    result = fixed("from torch import tensor\nidx = tensor([1, 2], device='cuda')\n")
    assert "import torch\n" in result
    assert "torch.tensor([1, 2], pin_memory=torch.cuda.is_available()).to('cuda', non_blocking=True)" in result


def test_multi_line_call_keeps_its_layout():
    assert fixed(
        """
        import torch

        def f(seq_idx: list[int], device: torch.device):
            return torch.as_tensor(
                seq_idx,
                device=device,
                dtype=torch.int32,
            )
        """
    ) == textwrap.dedent(
        """
        import torch

        def f(seq_idx: list[int], device: torch.device):
            return torch.tensor(
                seq_idx,
                dtype=torch.int32,
                pin_memory=torch.cuda.is_available(),
            ).to(device, non_blocking=True)
        """
    )


def test_relatively_imported_helper_is_used_with_the_newer_signature():
    assert fixed(
        """
        import torch
        from .torch_utils import async_tensor_h2d as h2d

        def f(ids: list[int], device: torch.device):
            return torch.tensor(ids, dtype=torch.int32, device=device)
        """
    ).endswith("    return h2d(ids, device, dtype=torch.int32)\n")


def test_helper_is_not_called_inside_itself():
    result = fixed(
        """
        import torch

        def async_tensor_h2d(data: list, device: torch.device):
            return torch.tensor(data, device=device)
        """,
        {"async-h2d-helper": "mypkg.utils:async_tensor_h2d"},
    )
    assert "return torch.tensor(data, pin_memory=torch.cuda.is_available()).to(device, non_blocking=True)" in result
    assert "from mypkg" not in result


def test_helper_defined_in_the_module_needs_no_import():
    result = fixed(
        """
        import torch

        def async_tensor_h2d(data, device, dtype=None):
            return torch.tensor(data, dtype=dtype, pin_memory=True).to(device, non_blocking=True)

        def g(ids: list[int], device: torch.device):
            return torch.tensor(ids, device=device)
        """,
        {"async-h2d-helper": "mypkg.utils:async_tensor_h2d"},
    )
    assert "    return async_tensor_h2d(ids, device)\n" in result
    assert "from mypkg" not in result


def test_new_tensor_with_the_older_helper_signature():
    assert fixed(
        """
        import torch
        from vllm.utils import async_tensor_h2d
        logits = torch.zeros(2, device="cuda")
        ids = logits.new_tensor([1, 2], dtype=torch.long)
        """,
        {"async-h2d-signature": "data-dtype-device-pin"},
    ).endswith("ids = async_tensor_h2d([1, 2], torch.long, logits.device, torch.cuda.is_available())\n")


def test_pinned_chain_without_non_blocking_gets_only_the_flag():
    assert fixed("import torch\nt = torch.tensor([1, 2], pin_memory=True).to('cuda')\n") == (
        "import torch\nt = torch.tensor([1, 2], pin_memory=True).to('cuda', non_blocking=True)\n"
    )


def test_object_of_a_local_class_may_be_gpu_memory():
    code = """
    import torch

    class DeviceBytes:
        @property
        def __cuda_array_interface__(self):
            return {}

    t = torch.as_tensor(DeviceBytes(), device="cuda")
    """
    assert only(code).confidence == Confidence.LOW


def test_list_repeated_by_a_gpu_count_is_still_host_data():
    # `[...] * n` is a Python list whatever `n` is (here a GPU scalar, which syncs by itself too).
    finding = only(
        """
        import torch

        class AudioEncoder(torch.nn.Module):
            def chunks(self, feature_lens: torch.Tensor, n_window: int):
                chunk_num = torch.ceil(feature_lens / n_window).long()
                return torch.tensor([n_window] * chunk_num.sum(), dtype=torch.long, device=feature_lens.device)
        """
    )
    assert finding.confidence == Confidence.MEDIUM


def test_closing_parenthesis_on_its_own_line_stays_there():
    assert fixed(
        """
        import torch

        def f(ids: list[int], device: torch.device):
            return torch.tensor(
                ids, dtype=torch.int32, device=device
            )
        """
    ) == textwrap.dedent(
        """
        import torch

        def f(ids: list[int], device: torch.device):
            return torch.tensor(
                ids, dtype=torch.int32, pin_memory=torch.cuda.is_available()
            ).to(device, non_blocking=True)
        """
    )


def test_no_torch_import_is_added_where_the_fix_does_not_name_torch():
    code = "import numpy as np\nfrom torch import as_tensor\nt = as_tensor(np.arange(4), device='cuda')\n"
    expected = code.replace("device='cuda')", "").replace("(4), ", "(4)).to('cuda', non_blocking=True)")
    assert fixed(code) == expected


def test_a_device_parameter_that_defaults_to_the_cpu_is_no_proof_of_a_gpu():
    code = (
        "import torch\n\n"
        "def lengths(items: list[int], device: str = 'cpu') -> torch.Tensor:\n"
        "    return torch.tensor(items, device=device)\n\n"
        "def lengths_on(items: list[int], device: torch.device) -> torch.Tensor:\n"
        "    return torch.tensor(items, device=device)\n\n"
        "class Cache:\n"
        "    def fill(self, n: int, device: str = 'cpu'):\n"
        "        self.table = torch.tensor(list(range(n)), device=device)\n\n"
        "    def grow(self, x: torch.Tensor):\n"
        "        self.fill(2 * len(x), x.device)  # here it is the GPU\n"
    )
    found = check_snippet(HostDataToDevice, code)
    assert [f.location.row for f in found] == [7, 11]


def test_a_python_number_is_filled_in_on_the_device():
    code = """
    import torch

    def losses(preds: torch.Tensor):
        total = torch.tensor(0.0, device=preds.device)
        count = torch.tensor(0, device=preds.device)
        half = torch.tensor(1, dtype=torch.float16, device=preds.device)
        done = torch.tensor(False, device="cuda")
        floor = torch.tensor(-1e9, device=preds.device)
        return total, count, half, done, floor
    """
    assert fixed(code) == textwrap.dedent("""
    import torch

    def losses(preds: torch.Tensor):
        total = torch.zeros((), device=preds.device)
        count = torch.zeros((), dtype=torch.long, device=preds.device)
        half = torch.ones((), dtype=torch.float16, device=preds.device)
        done = torch.zeros((), dtype=torch.bool, device="cuda")
        floor = torch.full((), -1e9, device=preds.device)
        return total, count, half, done, floor
    """)
    fix = only("import torch\nzero = torch.tensor(0.0, device='cuda')\n").fix
    assert fix.applicability is Applicability.SAFE
    assert fix.message == "Fill the number in on the device: `torch.zeros((), device='cuda')` copies nothing"


def test_no_fix_where_the_data_reads_the_gpu_in_the_same_loop():
    # `t.item()` waits for the GPU once per element; a pinned, non-blocking copy of its result
    # would leave that wait in the loop, so no fix is offered (SYNC101 reports the read).
    code = """
    import torch

    def accumulate(preds: torch.Tensor) -> torch.Tensor:
        total = torch.zeros((), device=preds.device)
        for t in preds:
            total = total + torch.tensor(t.item(), device=preds.device)
            total = total + torch.tensor([float(t)], device=preds.device)
        return total
    """
    found = findings(code)
    assert [(f.location.row, f.fix) for f in found] == [(7, None), (8, None)]
    assert fixed(code) == textwrap.dedent(code)
