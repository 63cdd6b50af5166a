"""Code for accelerators other than a CUDA GPU (Intel Gaudi/HPU, Apple MPS, TPU through torch_xla,
Intel's IPEX, NPU, Neuron) makes the host wait for them, not for a CUDA GPU: its findings are low,
with the platform in their `because`, and hidden by default."""

from __future__ import annotations

import pytest

from synclint.model import Confidence
from synclint.rules.host_read import HostRead
from synclint.testing import check_snippet

TRAIN = """
def train(model, loader, opt):
    model.to("cuda")
    for batch in loader:
        loss = model(batch)
        loss.backward()
        opt.step()
        print(loss.item())
"""


def found(code: str, filename: str = "train.py") -> list[tuple[int, Confidence, str | None]]:
    return [(f.location.row, f.confidence, f.because)
            for f in check_snippet(HostRead, code, filename=filename, min_confidence=Confidence.LOW)]


@pytest.mark.parametrize(("imports", "platform"), [
    ("import habana_frameworks.torch.core as htcore", "HPU"),
    ("from habana_frameworks.torch.hpu import memory_stats", "HPU"),
    ("import intel_extension_for_pytorch as ipex", "IPEX"),
    ("import torch_xla.core.xla_model as xm", "XLA"),
    ("from optimum.habana import GaudiTrainer", "HPU"),
    ("import torch_npu", "NPU"),
])
def test_a_file_that_needs_another_accelerators_stack_is_that_accelerators_code(imports, platform):
    code = f"import torch\n{imports}\n{TRAIN}"
    [(row, confidence, because)] = found(code)
    assert (row, confidence) == (10, Confidence.LOW)
    assert because == f'{platform} code, not CUDA; model(...) runs a module on the GPU (moved by .to("cuda"))'


def test_an_import_that_only_may_happen_leaves_the_cuda_code_as_it_is():
    # diffusers' pipelines import torch_xla where it is installed, and run on CUDA GPUs elsewhere.
    for guarded in ("if is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\n",
                    "try:\n    import intel_extension_for_pytorch as ipex\nexcept ImportError:\n    ipex = None\n"):
        code = f"import torch\n{guarded}{TRAIN}"
        assert [confidence for _, confidence, _ in found(code)] == [Confidence.MEDIUM]


@pytest.mark.parametrize("filename", ["composer/devices/device_mps.py", "examples/pipeline_stable_diffusion_xl_ipex.py",
                                      "utils/xla_utils.py", "habana/train.py"])
def test_files_named_for_another_accelerator(filename):
    [(_, confidence, because)] = found(f"import torch\n{TRAIN}", filename)
    assert confidence is Confidence.LOW and because.split(" ", 1)[1].startswith("code, not CUDA")


def test_classes_and_functions_named_for_mps_xla_or_gaudi():
    code = ("import torch\n\nclass DeviceMPS(torch.nn.Module):\n    def forward(self, t: torch.Tensor):\n"
            "        return t.sum().item()\n\n"
            "def gather_xla(model, batch):\n    model.to('cuda')\n    return model(batch).item()\n\n"
            "def step_gaudi(model, batch):\n    return model(batch).item()\n")
    assert [(row, because.split(";")[0]) for row, _, because in found(code)] == [
        (5, "MPS code, not CUDA"), (9, "XLA code, not CUDA"), (12, "HPU code, not CUDA")]


@pytest.mark.parametrize("test", ["torch.backends.mps.is_available()", "torch.xpu.is_available()", "is_hpu_installed()",
                                  "is_ipex_available()", "is_musa_available()", "device.type == 'musa'",
                                  "device.type == 'mlu'"])
def test_branches_that_run_only_on_another_accelerator(test):
    code = (f"import torch\n\n\ndef step(model, batch):\n    model.to('cuda')\n    loss = model(batch)\n"
            f"    if {test}:\n        return loss.item()\n    return loss.sum().item()\n")
    assert [(row, confidence) for row, confidence, _ in found(code)] == [(8, Confidence.LOW), (9, Confidence.MEDIUM)]


def test_a_private_helper_called_only_from_another_accelerators_code_is_that_code():
    # composer's `_object_to_tensor`, called only by `all_gather_object_list_hpu`.
    code = ("import torch\n\n\ndef _to_host(model, batch):\n    return model(batch).item()\n\n\n"
            "def gather_hpu(model, batch):\n    return _to_host(model, batch)\n\n\n"
            "def _shared(model, batch):\n    return model(batch).item()\n\n\n"
            "def gather_npu(model, batch):\n    return _shared(model, batch)\n\n\n"
            "def gather(model, batch):\n    model.to('cuda')\n    return _shared(model, batch)\n")
    assert [(row, because.split(";")[0]) for row, _, because in found(code)] == [
        (5, "HPU code, not CUDA"), (13, "model(...) is a module's output, in a file that puts its model or data on "
                                        "the GPU (`model.to('cuda')`)")]
