"""SYNC106 scalar-write-to-device: what waits (measured on an H100), the device-model facts
the rule relies on, and where its loop fix stops."""

from __future__ import annotations

from synclint.model import Confidence
from synclint.rules.scalar_write_to_device import ScalarWriteToDevice
from synclint.testing import check_snippet, fix_snippet

CUDA_1D = "import torch\nx = torch.zeros(8, device='cuda')\n"
CUDA_2D = "import torch\nx = torch.zeros(8, 8, device='cuda')\n"


def findings(code: str, filename: str = "example.py"):
    return check_snippet(ScalarWriteToDevice, code, filename=filename)


def test_augmented_assignment_adds_on_the_gpu_and_does_not_wait():
    # Measured: `x[3] += 1` and `x2[0, 1] *= 2.0` raised nothing under set_sync_debug_mode("error").
    assert findings(CUDA_2D + "x[0, 1] += 1.0\nx[0, 1] *= 2.0\n") == []


def test_integer_index_with_a_slice_fills_a_view_without_a_copy():
    assert findings(CUDA_2D + "x[0, :] = 1.0\nx[..., 0] = 1.0\nx[None, 0, 1] = 1.0\n") == []


def test_slice_with_an_index_list_or_gpu_index_still_waits():
    # Measured: `x2[:, [1, 2]] = 1.0` and `x2[:, gpu_idx] = 1.0` both waited.
    code = CUDA_2D + "idx = torch.tensor([1, 2], device='cuda')\nx[:, [1, 2]] = 1.0\nx[:, idx] = 1.0\n"
    found = findings(code)
    assert len(found) == 2 and all("index list or tensor" in f.message for f in found)


def test_one_element_of_a_two_dimensional_tensor_waits_but_a_row_does_not():
    found = findings(CUDA_2D + "x[1, 2] = 1.0\nx[3] = 0.0\n")
    assert [f.location.row for f in found] == [3]
    assert found[0].confidence == Confidence.HIGH


def test_enumerate_counter_is_an_int_so_a_row_slice_write_does_not_wait():
    code = (
        "import torch\n\ndef pad(lengths: torch.Tensor, n: int):\n"
        "    mask = torch.zeros(4, n, dtype=torch.long, device='cuda')\n"
        "    for i, length in enumerate(lengths):\n        mask[i, :length] = 1\n    return mask\n"
    )
    assert findings(code) == []


def test_a_position_into_a_mask_is_an_integer_index_not_a_mask():
    code = (
        "import torch\n\nclass Budget:\n    def __init__(self, n: int):\n"
        "        self.mask = torch.zeros(n, dtype=torch.bool, device='cuda')\n\n"
        "    def force(self, starts: list[int], i: int):\n"
        "        mask_idx = starts[i] + 1\n        self.mask[mask_idx] = True\n"
    )
    found = findings(code)
    assert len(found) == 1 and found[0].confidence == Confidence.HIGH


def test_bool_mask_bound_earlier_is_a_masked_fill():
    assert findings(CUDA_1D + "keep = x > 0\nx[keep] = 0.0\n") == []


def test_self_in_a_closure_is_the_enclosing_method_s_self():
    # `self._requires_gpu` is a dict: its `*_gpu` name must not make it a device tensor.
    code = (
        "import torch\n\nclass Registry:\n    def __init__(self):\n"
        "        self._requires_gpu: dict[str, bool] = {}\n\n"
        "    def register(self, name: str, requires_gpu: bool = False):\n"
        "        def wrap(cls):\n            self._requires_gpu[name] = requires_gpu\n"
        "            return cls\n        return wrap\n"
    )
    assert findings(code) == []


def test_list_elements_may_be_tensors_so_they_are_not_taken_for_scalars():
    code = (
        "import torch\n\ndef stack(tensor_list: list[torch.Tensor], n: int):\n"
        "    out = torch.empty(len(tensor_list), n, device='cuda')\n"
        "    for i in range(len(tensor_list)):\n        out[i, 0] = tensor_list[i]\n    return out\n"
    )
    assert findings(code) == []


def test_elements_of_a_tolist_result_are_scalars():
    code = (
        "import torch\n\ndef run(query_start_loc: torch.Tensor, n: int):\n"
        "    qsl = query_start_loc.tolist()\n    cu = torch.zeros(2, device='cuda', dtype=torch.int32)\n"
        "    for i in range(n):\n        q_len = qsl[i + 1] - qsl[i]\n        cu[1] = q_len\n"
    )
    found = findings(code)
    assert len(found) == 1 and found[0].confidence == Confidence.HIGH


def test_host_tensor_into_a_tensor_of_unknown_device_is_not_reported():
    # `dst[idx] = src.cpu()` is most likely a copy into a host buffer.
    code = (
        "import torch\n\ndef swap_out(src: torch.Tensor, dst: torch.Tensor, idx: torch.Tensor):\n"
        "    dst[idx] = src[idx].cpu()\n"
    )
    assert findings(code) == []
    assert len(findings(CUDA_1D + "x[0] = torch.tensor(1.0)\n")) == 1


def test_tensors_of_unknown_device_in_cpu_kernel_modules_are_host_tensors():
    code = "import torch\n\nclass Attention(torch.nn.Module):\n    def reset(self, state: torch.Tensor, i: int):\n        state[i] = 0\n"
    assert len(findings(code, "vllm/layers/attn.py")) == 1
    assert findings(code, "vllm/layers/ops/cpu/attn.py") == []
    assert findings(code, "vllm/utils/cpu_triton_utils.py") == []


# ---- the loop fix ---------------------------------------------------------------------

LOOP = (
    "import torch\n\n\ndef ban(logits: torch.Tensor, rows: list[int], token: int):\n"
    "    for row in rows:\n{body}    return logits\n"
)


def test_loop_fix_keeps_multi_line_strings_and_continuation_lines_as_they_were():
    body = (
        '        note = """a\nb"""\n'
        "        check = max(row,\n"
        "                    0)\n"
        "        logits[row, token] = -1.0\n"
    )
    fixed = fix_snippet(ScalarWriteToDevice, LOOP.format(body=body), {"line-length": 120})  # no line broken
    assert '        note = """a\nb"""\n' in fixed
    assert "        check = max(row,\n                    0)\n" in fixed
    assert "        rows_list.append(row)\n        cols_list.append(token)\n" in fixed
    assert "logits.index_put_((rows_idx, cols_idx), logits.new_full((len(rows_list),), -1.0))" in fixed


def test_loop_fix_is_not_offered_where_it_would_reorder_reads_of_the_tensor():
    body = "        logits[row, token] = -1.0\n        print(logits[row].sum())\n"
    assert findings(LOOP.format(body=body))[0].fix is None


def test_loop_fix_is_not_offered_when_the_value_changes_in_the_loop():
    body = "        value = float(row)\n        logits[row, token] = value\n"
    assert findings(LOOP.format(body=body))[0].fix is None


def test_loop_fix_is_not_offered_when_the_loop_can_return_early():
    body = "        if row < 0:\n            return logits\n        logits[row, token] = -1.0\n"
    assert findings(LOOP.format(body=body))[0].fix is None


def test_loop_fix_is_not_offered_when_a_comment_ends_the_loop():
    # The loop's span ends before that comment, which would be written twice.
    body = "        logits[row, token] = -1.0  # ban\n"
    assert findings(LOOP.format(body=body))[0].fix is None


def test_loop_fix_is_not_offered_for_gpu_positions():
    code = (
        "import torch\n\n\ndef ban(logits: torch.Tensor, rows: torch.Tensor):\n"
        "    for row in rows:\n        logits[row, 0] = -1.0\n    return logits\n"
    )
    found = findings(code)
    assert len(found) == 1 and found[0].fix is None


def test_fix_writes_a_value_wrapped_over_lines_on_one_line():
    # vLLM 0.21.0 thinking_budget_state.py wraps the forced token id in parentheses over three lines.
    code = (
        "import torch\n\n"
        "def force(ids: list[int], tokens: list[int], k: int):\n"
        "    out = torch.zeros(8, dtype=torch.long, device='cuda')\n"
        "    for i in ids:\n"
        "        out[i] = (\n"
        "            tokens[k]\n"
        "        )\n"
        "    return out\n"
    )
    fixed = fix_snippet(ScalarWriteToDevice, code, {"line-length": 120})  # no line broken
    assert "out.new_full((len(" in fixed and "), tokens[k]))\n" in fixed
    compile(fixed, "example.py", "exec")


def test_a_host_tensor_written_into_a_slice_of_a_gpu_buffer_is_a_blocking_copy():
    # `buf[: len(ids)] = torch.tensor(ids)` copies from pageable host memory, which waits (the catalogue's
    # `x[0] = torch.tensor(1.0)`, a CPU tensor written into a CUDA one); a scalar fills the slice without a copy.
    code = CUDA_1D + "def step(ids: list[int]):\n    x[: len(ids)] = torch.tensor(ids)\n    x[:4] = 0\n"
    found = findings(code)
    assert [(f.location.row, f.location.column, f.message) for f in found] == [
        (4, 5, "`x[: len(ids)] = torch.tensor(ids)` writes a host tensor into a slice of `x`, which is a CUDA "
               "tensor: a blocking host-to-device copy that waits for the GPU")]
    assert found[0].fix is None  # the loop fix collects scalars; a slice has nothing to collect
