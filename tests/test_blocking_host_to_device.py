"""SYNC102 blocking-host-to-device: which copies are host-to-device, how sure, and how the fix is judged."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from rules.blocking_host_to_device import BlockingHostToDevice
from synclint.devices.lattice import Place
from synclint.devices.model import DeviceModel
from synclint.evidence import Certainty
from synclint.model import Applicability, Confidence
from synclint.testing import check_snippet, fix_snippet


def findings(code: str, **kwargs):
    return check_snippet(BlockingHostToDevice, textwrap.dedent(code), min_confidence=Confidence.LOW, **kwargs)


def only(code: str):
    found = findings(code)
    assert len(found) == 1, [f.message for f in found]
    return found[0]


def test_gemma4_optional_mask_parameter_is_medium_with_unsafe_fix():
    finding = only(
        """
        import torch

        def embed_input_ids(input_ids: torch.Tensor, is_multimodal: torch.Tensor | None = None):
            if is_multimodal is not None:
                is_multimodal = is_multimodal.to(input_ids.device)
                return torch.where(is_multimodal, torch.zeros_like(input_ids), input_ids)
            return input_ids
        """
    )
    assert finding.confidence == Confidence.MEDIUM
    assert finding.source_line.strip().startswith("is_multimodal = is_multimodal.to(")
    # A parameter may be a pinned buffer the caller reuses: the fix needs --unsafe-fixes.
    assert finding.fix.applicability is Applicability.UNSAFE
    assert "pinned memory" in finding.fix.message


def test_forward_activation_is_low_and_hidden_by_default():
    code = """
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def forward(self, pixel_values: torch.Tensor, device: torch.device):
            return pixel_values.to(device)
    """
    assert only(code).confidence == Confidence.LOW
    assert check_snippet(BlockingHostToDevice, textwrap.dedent(code)) == []


def test_parameter_of_a_module_moves_with_the_module():
    assert findings(
        """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.newline = nn.Parameter(torch.empty(16))

            def merge(self, embeds: torch.Tensor):
                return torch.cat([embeds, self.newline[None].to(embeds.device)])
        """
    ) == []


def test_result_of_a_local_helper_known_only_by_its_annotation_is_medium():
    finding = only(
        """
        import torch

        def streaming_mask(n: int) -> torch.Tensor:
            return build_mask(n).unsqueeze(0)

        def encode(xs: torch.Tensor, n: int, device: torch.device):
            mask = streaming_mask(n)
            mask = mask.to(device)
            return xs, mask
        """
    )
    assert finding.confidence == Confidence.MEDIUM
    assert "returned by streaming_mask()" in finding.because


def test_tensor_built_on_the_device_by_this_code_is_not_moved():
    assert findings(
        """
        import torch

        def offsets(x: torch.Tensor, n: int):
            ptr = torch.full((n,), 1, device=x.device)
            return ptr.to(x.device)

        def own(xs_pad: torch.Tensor):
            device = xs_pad.device
            return xs_pad.to(device)
        """
    ) == []


def test_fresh_host_tensor_is_high_and_its_fix_is_safe():
    finding = only(
        """
        import torch

        def positions(n: int, device: torch.device):
            pos = torch.arange(n).view(-1, 1)
            return pos.to(device)
        """
    )
    assert finding.confidence == Confidence.HIGH
    assert finding.fix.applicability is Applicability.SAFE


@pytest.mark.parametrize(
    "source",
    [
        "self.staging_cpu[:n]",  # a long-lived buffer (vLLM's are pinned)
        "staging[:n]",  # a local, but pinned: a reused staging buffer
    ],
)
def test_copy_from_a_possibly_pinned_buffer_is_an_unsafe_fix(source):
    finding = only(
        f"""
        import torch

        class Runner:
            def __init__(self):
                self.staging_cpu = torch.zeros(64, pin_memory=True)
                self.ids_gpu = torch.zeros(64, device="cuda")

            def step(self, n: int):
                staging = torch.zeros(64, pin_memory=True)
                self.ids_gpu[:n].copy_({source})
        """
    )
    assert finding.fix.applicability is Applicability.UNSAFE
    assert "pinned buffer" in finding.fix.message
    assert "only if" not in finding.fix.message  # pinned: the copy will not wait


def test_copies_between_gpu_tensors_and_to_the_host_are_not_flagged():
    assert findings(
        """
        import torch

        def stage(buf: torch.Tensor, logits: torch.Tensor, out_cpu: torch.Tensor):
            x = torch.zeros(4, device="cuda")
            y = x.cuda()
            buf[: logits.shape[0]].copy_(logits)
            out_cpu.copy_(x)
            return x.to("cpu"), x.cpu(), y
        """
    ) == []


def test_tensor_built_from_python_data_is_left_to_sync103():
    code = "import torch\nids = [1, 2]\nt = torch.tensor(ids).to('cuda')\nu = torch.from_numpy(a).cuda()\n"
    assert findings(code) == []


def test_fix_keeps_a_multi_line_call_layout():
    code = textwrap.dedent(
        """
        import torch
        mask = torch.ones(8)
        m = mask.to(
            device="cuda",
        )
        """
    )
    assert fix_snippet(BlockingHostToDevice, code) == textwrap.dedent(
        """
        import torch
        mask = torch.ones(8)
        m = mask.to(
            device="cuda",
            non_blocking=True,
        )
        """
    )


def test_fix_of_a_multi_line_call_inside_blocks_keeps_their_indentation():
    code = textwrap.dedent(
        """
        import torch

        def f(n: int, device: torch.device):
            if n:
                ids = torch.arange(n)
                return ids.to(
                    device
                )
        """
    )
    assert fix_snippet(BlockingHostToDevice, code) == code.replace(
        "            device\n", "            device, non_blocking=True\n"
    )  # (hugged, as black writes arguments that fit between the brackets with no trailing comma)


def test_parameter_converted_to_a_dtype_too_is_low():
    # `.to(device=..., dtype=...)` of an input is mostly normalization of a tensor already on the GPU.
    finding = only(
        """
        import torch

        def lengths(cu_seqlens: torch.Tensor, q: torch.Tensor):
            return cu_seqlens.to(device=q.device, dtype=torch.int64)
        """
    )
    assert finding.confidence == Confidence.LOW


def test_host_named_destination_is_not_a_device_copy():
    # A parameter annotated torch.Tensor is of unknown device, but its `_cpu` name says host.
    assert findings(
        """
        import torch

        def update(buf: torch.Tensor, ids: list[int]):
            idx_cpu = buf[: len(ids)]
            idx_cpu.copy_(torch.as_tensor(ids, dtype=torch.long))
        """
    ) == []


def test_result_of_a_local_helper_that_builds_on_a_device_is_not_moved():
    assert findings(
        """
        import torch

        def rot_pos_emb(grid: list[int], device: torch.device) -> torch.Tensor:
            pos_ids = [torch.arange(h, device=device) for h in grid]
            return torch.cat(pos_ids)

        def encode(grid: list[int], device: torch.device):
            return rot_pos_emb(grid, device).to(device)
        """
    ) == []


def test_multi_line_chain_is_reported_on_the_line_of_the_copy():
    finding = only(
        """
        import torch

        def positions(n: int, device: torch.device):
            return torch.arange(
                n
            ).to(device)
        """
    )
    assert finding.location.row == 7


def test_concatenation_of_a_list_of_tensors_is_of_unknown_device():
    # A Python list holds tensors of any device: torch.cat of it is a tensor, neither a host value
    # nor proven host, of a device nothing says (low).
    module = cst.parse_module("import torch\nparts = [a, b]\nx = torch.concat(parts)\ny = torch.cat([a, b])\n")
    model = DeviceModel(module)
    for statement in module.body[2:]:
        value = statement.body[0].value
        where = model.where(value, module, statement.body[0])
        assert (where.place, where.certainty) == (Place.DEVICE, Certainty.LOW), where


def test_a_position_of_a_returned_tuple_keeps_its_place():
    # vLLM 0.21.0 qwen3_vl.py (PR #42347): `get_mrope_input_positions(...)[0].to(device)`, where
    # the helper returns `torch.from_numpy(positions), delta`.
    code = (
        "import numpy as np\nimport torch\n\nclass Model(torch.nn.Module):\n"
        "    def mrope(self, tokens: list[int]):\n        positions = np.arange(len(tokens))\n"
        "        return torch.from_numpy(positions), 3\n\n"
        "    def embed(self, tokens: list[int], emb: torch.Tensor):\n"
        "        original = self.mrope(tokens)[0].to(emb.device)\n"
        "        positions, delta = self.mrope(tokens)\n"
        "        return original, positions.to(emb.device), delta\n"
    )
    found = check_snippet(BlockingHostToDevice, code)
    assert [f.location.row for f in found] == [10, 12]
    assert all(f.confidence == Confidence.MEDIUM and "torch.from_numpy()" in f.because for f in found)


def test_a_factory_while_a_module_is_built_follows_the_default_device():
    code = """
        import torch
        from vllm.model_executor.custom_op import CustomOp

        class Rope(CustomOp):
            def __init__(self, n: int) -> None:
                super().__init__()
                self.device = torch.device("cuda:0")
                self.register_buffer("cache", self._cache(n), persistent=False)

            def _cache(self, n: int) -> torch.Tensor:
                t = torch.arange(n, dtype=torch.float)
                return torch.cat((t.cos(), t.sin())).to(device=self.device)

            def _later(self, n: int) -> torch.Tensor:
                return torch.arange(n, dtype=torch.float).to(device=self.device)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x + self._later(4)
        """
    found = {f.location.row: f for f in findings(code)}
    # Built under the loader's `with torch.device(...)`: a guess, at low confidence, and saying why.
    assert found[13].confidence == Confidence.LOW and "default device" in found[13].because
    # A method forward calls runs on every step: the copy is a host tensor's to `self.device`, which
    # `__init__` sets to `torch.device("cuda:0")`: the GPU surely, so the copy is proven.
    assert found[16].confidence == Confidence.HIGH
    # Without a register_buffer (nor an nn.Module base) nothing says a module is being built: a host
    # tensor copied to `torch.device("cuda:0")`, proven.
    plain = {f.location.row: f for f in findings(code.replace('self.register_buffer("cache", self._cache(n), persistent=False)', "self.cache = self._cache(n)"))}
    assert plain[13].confidence == Confidence.HIGH


def test_a_factory_moved_to_the_device_is_made_there():
    code = """
    import torch

    def masks(imgs: torch.Tensor, mask: torch.Tensor, n: int, h: int, w: int):
        one_mask = torch.ones(n, n, dtype=torch.bool).to(imgs.device)
        unused = torch.arange(len(mask)).to(mask.device)[~mask]
        grid = torch.zeros(h, w).cuda()
        noise = torch.randn(h, w).to(imgs.device)
        steps = torch.arange(0, 1, 0.1).to(imgs.device)
        return one_mask, unused, grid, noise, steps
    """
    assert fix_snippet(BlockingHostToDevice, textwrap.dedent(code)) == textwrap.dedent("""
    import torch

    def masks(imgs: torch.Tensor, mask: torch.Tensor, n: int, h: int, w: int):
        one_mask = torch.ones(n, n, dtype=torch.bool, device=imgs.device)
        unused = torch.arange(len(mask), device=mask.device)[~mask]
        grid = torch.zeros(h, w, device="cuda")
        noise = torch.randn(h, w).to(imgs.device, non_blocking=True)
        steps = torch.arange(0, 1, 0.1).to(imgs.device, non_blocking=True)
        return one_mask, unused, grid, noise, steps
    """)
    fix = findings(code)[0].fix
    assert fix.applicability is Applicability.SAFE
    assert fix.message == "Make it on the device: `torch.ones(n, n, dtype=torch.bool, device=imgs.device)` copies nothing"
