"""SYNC111 unsynchronized-device-to-host: which copies, which reads, and what counts as a wait."""

from __future__ import annotations

from pathlib import Path

from synclint.model import Confidence
from synclint.rules.unsynchronized_device_to_host import UnsynchronizedDeviceToHost
from synclint.testing import check_snippet

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "SYNC111" / "before.py"


def findings(code: str):
    # Low confidence too: the snippets are helpers outside an nn.Module, whose tensor
    # parameters are tensors of unknown device.
    return check_snippet(UnsynchronizedDeviceToHost, code, min_confidence=Confidence.LOW)


def rows(code: str) -> list[int]:
    return [f.location.row for f in findings(code)]


def test_fixture_kernels_are_both_found_on_the_read():
    found = findings(FIXTURE.read_text())
    assert [f.source_line.strip() for f in found] == ["return sampled_cpu.tolist()", "return host_buf[:n].tolist()"]
    # host_buf is annotated torch.Tensor, but its name says host memory; `.values` of a max
    # result lives where the reduced tensor does.
    assert "host_buf[:n].copy_(logprobs.max(dim=-1).values" in found[1].message
    assert all(f.confidence == Confidence.LOW and "outside an nn.Module" in f.because for f in found)


def test_a_project_sync_helper_between_copy_and_read_counts_as_a_wait():
    code = (
        "import torch\n\nclass R:\n    def out(self, x: torch.Tensor):\n"
        "        y = x.to('cpu', non_blocking=True)\n        self._sync_device()\n        return y.tolist()\n"
    )
    assert rows(code) == []


def test_an_async_helper_is_not_a_sync_helper():
    code = (
        "import torch\n\ndef out(x: torch.Tensor, ids: list[int]):\n"
        "    y = x.to('cpu', non_blocking=True)\n    idx = async_tensor_h2d(ids, x.device)\n    return y.tolist()\n"
    )
    assert rows(code) == [6]


def test_a_blocking_read_of_another_device_tensor_drains_the_stream():
    code = (
        "import torch\nx = torch.ones(4, device='cuda')\nn = torch.ones(1, device='cuda')\n"
        "y = x.to('cpu', non_blocking=True)\ncount = int(n)\nprint(y[:count])\n"
    )
    assert rows(code) == []


def test_a_read_before_the_copy_or_in_another_function_is_not_reported():
    code = (
        "import torch\n\nclass Out:\n    def start(self, x: torch.Tensor):\n"
        "        print(self.y_cpu)\n        self.y_cpu = x.to('cpu', non_blocking=True)\n\n"
        "    def get(self):\n        return self.y_cpu.tolist()\n"
    )
    assert rows(code) == []


def test_rows_taken_by_a_for_loop_are_views_and_reading_one_is_the_read():
    code = (
        "import torch\nx = torch.ones(4, 2, device='cuda')\ny = x.to('cpu', non_blocking=True)\n"
        "rows = list(y)\nfor row in y:\n    first = row[0].item()\n"
    )
    found = findings(code)
    assert [f.location.row for f in found] == [6]
    assert found[0].confidence == Confidence.HIGH
    assert "`row[0].item()` reads `row`" in found[0].message


def test_identity_checks_and_metadata_are_not_reads():
    code = (
        "import torch\n\ndef f(x: torch.Tensor):\n    y = x.to('cpu', non_blocking=True)\n"
        "    if y is None:\n        return None\n    n = len(y) + y.shape[0]\n    return y, n\n"
    )
    assert rows(code) == []


def test_a_copy_into_a_device_tensor_is_not_a_device_to_host_copy():
    code = (
        "import torch\nsrc = torch.ones(4, device='cuda')\ndst = torch.empty(4, device='cuda')\n"
        "dst.copy_(src, non_blocking=True)\ntotal = dst.sum()\n"
    )
    assert rows(code) == []


def test_one_finding_per_copy_even_with_several_reads():
    code = (
        "import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu', non_blocking=True)\n"
        "a = y.tolist()\nb = y.sum()\nprint(f'{y}')\n"
    )
    assert rows(code) == [4]


def test_a_read_in_an_f_string_and_an_arithmetic_operand_are_reads():
    code = (
        "import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu', non_blocking=True)\nprint(f'{y}')\n"
        "z = x.to(device='cpu', non_blocking=True)\nw = z * 2\n"
    )
    assert rows(code) == [4, 6]


def test_a_copy_into_an_element_of_a_python_container_is_not_judged_host_memory():
    code = (
        "import torch\n\nclass Lora:\n    def __init__(self, n):\n"
        "        self.stacked = tuple(torch.zeros(4, device='cuda') for _ in range(n))\n\n"
        "    def set(self, i, w: torch.Tensor):\n        self.stacked[0][i].copy_(w, non_blocking=True)\n"
        "        return self.stacked[0][i].sum()\n"
    )
    assert rows(code) == []


def test_a_blocking_to_cpu_of_another_device_tensor_counts_as_a_wait_but_a_non_blocking_one_does_not():
    code = (
        "import torch\n\ndef f(a: torch.Tensor, b: torch.Tensor):\n"
        "    x = a.to('cpu', non_blocking=True)\n    y = b.to('cpu')\n    print(x)\n"
        "    z = a.to('cpu', non_blocking=True)\n    w = b.to('cpu', non_blocking=True)\n    print(z)\n"
    )
    assert rows(code) == [9]
