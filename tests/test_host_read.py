"""SYNC107 host-read: the device-model facts it relies on, and where it stops."""

from __future__ import annotations

from synclint.evidence import Certainty
from synclint.model import Confidence
from synclint.rules.host_read import HostRead
from synclint.rules.sync_in_condition import SyncInCondition
from synclint.testing import check_snippet


def messages(code: str) -> list[str]:
    # Low confidence too: these snippets are helpers outside an nn.Module, whose tensor
    # parameters are tensors of unknown device.
    return [f.message for f in check_snippet(HostRead, code, min_confidence=Confidence.LOW)]


def test_enumerate_index_is_a_python_int_not_a_gpu_scalar():
    code = (
        "import torch\n\ndef f(rows: torch.Tensor):\n"
        "    for i, row in enumerate(rows):\n        head = rows[:i]\n"
    )
    assert messages(code) == []


def test_enumerate_element_is_still_a_gpu_scalar():
    code = (
        "import torch\n\ndef f(rows: torch.Tensor, out: torch.Tensor):\n"
        "    for i, n in enumerate(rows):\n        head = out[:n]\n"
    )
    assert len(messages(code)) == 1


def test_zip_binds_each_position_from_its_own_iterable():
    code = (
        "import torch\n\ndef f(lens: torch.Tensor, names: list[str], out: torch.Tensor):\n"
        "    for name, n in zip(names, lens):\n        text = f'{name}'\n        head = out[:n]\n"
    )
    found = messages(code)
    assert len(found) == 1 and "`out[:n]`" in found[0]


def test_registered_buffer_is_on_the_device_so_indexing_with_it_does_not_wait():
    code = (
        "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('idxs', torch.tensor([0, 2]))\n\n"
        "    def forward(self, x: torch.Tensor):\n        return x[:, self.idxs]\n"
    )
    assert messages(code) == []


def test_unregistered_cpu_index_tensor_waits():
    code = (
        "import torch\nfrom torch import nn\n\nclass Head(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.idxs = torch.tensor([0, 2])\n\n"
        "    def forward(self, x: torch.Tensor):\n        return x[:, self.idxs]\n"
    )
    found = check_snippet(HostRead, code)
    assert len(found) == 1 and found[0].confidence == Confidence.MEDIUM


def test_item_tested_by_if_is_reported_once_by_sync101_only():
    code = "import torch\nt = torch.ones(1, device='cuda')\nif t.item():\n    pass\nok = bool(t.item())\n"
    assert check_snippet(HostRead, code) == []
    assert len(check_snippet(SyncInCondition, code)) == 2


def test_item_compared_in_a_condition_is_host_read():
    code = "import torch\nt = torch.ones(1, device='cuda')\nif t.item() > 0:\n    pass\n"
    assert check_snippet(SyncInCondition, code) == []
    assert len(messages(code)) == 1


def test_cpu_then_numpy_is_one_wait():
    code = "import torch\nx = torch.ones(4, device='cuda')\na = x.cpu().numpy()\nb = x.detach().cpu().tolist()\n"
    found = messages(code)
    assert len(found) == 2 and all("`.cpu()`" not in m and ".cpu()`" in m for m in found)


def test_plain_numpy_on_a_tensor_is_not_a_wait_but_force_is():
    code = (
        "import torch\n\ndef f(x: torch.Tensor):\n    return x.numpy()\n\n"
        "def g(x: torch.Tensor):\n    return x.numpy(force=True)\n"
    )
    found = messages(code)
    assert len(found) == 1 and "force=True" in found[0]


def test_list_index_is_flagged_but_an_int_index_is_not():
    code = (
        "import torch\nx = torch.ones(8, device='cuda')\n\ndef f(n: int):\n"
        "    rows = [0, n]\n    a = x[rows]\n    b = x[n]\n    c = x[rows[0]]\n"
    )
    found = messages(code)
    assert len(found) == 1 and "`x[rows]`" in found[0]


def test_name_that_is_sometimes_an_int_is_not_a_list_index():
    code = (
        "import torch\nx = torch.ones(8, device='cuda')\n\ndef f(flag: bool):\n"
        "    rows = [0, 1]\n    if flag:\n        rows = 3\n    return x[rows]\n"
    )
    assert messages(code) == []


def test_writes_through_a_list_index_are_not_reads():
    code = "import torch\nx = torch.ones(8, device='cuda')\nx[[0, 1]] = 0.0\ndel x[[2]]\n"
    assert messages(code) == []


def test_protocol_methods_do_not_make_tensors():
    code = (
        "import torch\n\ndef names(t: torch.Tensor):\n"
        "    for attr in t.__tensor_flatten__()[0]:\n        yield f'{attr}'\n"
    )
    assert messages(code) == []


def test_to_meta_and_non_blocking_to_cpu_do_not_wait():
    code = (
        "import torch\nx = torch.ones(4, device='cuda')\na = x.to('meta')\n"
        "b = x.to('cpu', non_blocking=True)\nc = x.to('cpu', non_blocking=False)\n"
    )
    found = messages(code)
    assert len(found) == 1 and "non_blocking=False" in found[0]


def test_builtin_max_with_a_key_compares_host_values():
    code = "import torch\n\ndef f(xs: torch.Tensor, n: int):\n    a = max(xs, key=len)\n    b = max(xs)\n    c = max(n, 2)\n"
    found = messages(code)
    assert len(found) == 1 and "`max(xs)`" in found[0]


def test_multiline_expression_gives_a_one_line_message():
    code = "import torch\nx = torch.ones(4, device='cuda')\nv = (\n    x\n    .sum()\n    .item()\n)\n"
    (message,) = messages(code)
    assert "\n" not in message and "`(x.sum().item())`" in message


def test_class_attributes_do_not_depend_on_which_method_is_asked_first():
    # The rule asks about `print(self.size)` inside __init__ first, while __init__ is
    # still being walked; `self.seq_lens`, assigned later in __init__, must still be known in f.
    code = (
        "import torch\n\nclass Runner:\n    def __init__(self, device, config):\n        self.device = device\n"
        "        self.config = config\n        self.size = self.config\n        print(self.size)\n"
        "        self.seq_lens = torch.zeros(8, device=self.device)\n\n"
        "    def f(self, n: int):\n        for i in range(n):\n            ids = torch.arange(self.seq_lens[i])\n"
    )
    found = messages(code)
    assert len(found) == 1 and "torch.arange(self.seq_lens[i])" in found[0]


def test_parameter_the_function_itself_uploads_is_a_host_tensor():
    code = (
        "import torch\n\ndef build(qo_indptr: torch.Tensor, lens: torch.Tensor, device):\n"
        "    gpu = qo_indptr.to(device, non_blocking=True)\n"
        "    a = int((qo_indptr[1:] - qo_indptr[:-1]).max())\n    b = int(lens.max())\n"
    )
    found = messages(code)
    assert len(found) == 1 and "lens.max()" in found[0]


def test_cpu_of_a_field_of_unknown_device_is_a_medium_host_read():
    # vLLM 0.19.1 flashmla_sparse.py: `common_attn_metadata.seq_lens.cpu()` (PR #40654 removed it).
    code = (
        "import torch\n\n"
        "def build(common_attn_metadata: CommonAttentionMetadata, model):\n"
        "    seq_lens_cpu = common_attn_metadata.seq_lens.cpu()\n"
        "    model.cpu()\n"
        "    return seq_lens_cpu\n"
    )
    findings = check_snippet(HostRead, code)
    assert [(f.location.row, f.confidence) for f in findings] == [(4, Confidence.MEDIUM)]
    assert "`.cpu()` moves common_attn_metadata.seq_lens to the host" in findings[0].because


def test_tensors_in_multimodal_processor_code_are_host_tensors():
    # vLLM's HF-style processors (transformers_utils/processors/, *processing*.py, mm_preprocess.py)
    # build model inputs on the CPU: a tensor parameter there is not a GPU tensor.
    code = "import torch\n\ndef num_tokens(grid_thw: torch.Tensor) -> int:\n    return int(grid_thw.prod().item())\n"
    assert check_snippet(HostRead, code, filename="vllm/models/m3/common/mm_preprocess.py") == []
    assert check_snippet(HostRead, code, filename="vllm/transformers_utils/processors/asr.py") == []
    assert [f.code for f in check_snippet(HostRead, code, filename="vllm/models/m3/model.py", min_confidence=Confidence.LOW)] == ["SYNC107"]


def test_tensor_parameters_are_medium_in_an_nn_module_and_low_in_a_helper():
    method = (
        "import torch\n\nclass Encoder(torch.nn.Module):\n"
        "    def lengths(self, mask: torch.Tensor) -> list[int]:\n        return mask.sum(-1).tolist()\n"
    )
    helper = "import torch\n\ndef lengths(mask: torch.Tensor) -> list[int]:\n    return mask.sum(-1).tolist()\n"
    activation = "import torch\n\ndef last(hidden_states: torch.Tensor) -> float:\n    return hidden_states[-1].item()\n"
    assert [f.confidence for f in check_snippet(HostRead, method)] == [Confidence.MEDIUM]
    assert check_snippet(HostRead, helper) == []
    (low,) = check_snippet(HostRead, helper, min_confidence=Confidence.LOW)
    assert low.confidence == Confidence.LOW and low.because == "mask is annotated torch.Tensor, outside an nn.Module"
    # A model's activations are on the GPU wherever they are passed.
    assert [f.confidence for f in check_snippet(HostRead, activation)] == [Confidence.MEDIUM]


def test_a_tensor_indexed_by_a_host_index_tensor_is_a_tensor():
    # vLLM 0.21.0 qwen2_5_vl.py and qwen3_omni_moe_thinker.py (PR #42347): the vision RoPE cache,
    # returned by another object's method, gathered with position ids built on the host.
    code = (
        "import torch\n\nclass VisionTransformer(torch.nn.Module):\n"
        "    def rot_pos_emb(self, grid_thw):\n        pos_ids = []\n"
        "        for t, h, w in grid_thw:\n            hpos = torch.arange(h).unsqueeze(1).expand(-1, w)\n"
        "            pos_ids.append(torch.stack([hpos, hpos], dim=-1).repeat(t, 1))\n"
        "        pos_ids = torch.cat(pos_ids, dim=0)\n"
        "        cos, sin = self.rotary_pos_emb.get_cos_sin(64)\n"
        "        return cos[pos_ids].flatten(1), sin[grid_thw]\n"
    )
    (found,) = check_snippet(HostRead, code)
    assert "`cos[pos_ids]`" in found.message and found.confidence == Confidence.MEDIUM
    assert "indexed by a tensor" in found.because
    # Outside an nn.Module the same gather is only low confidence.
    helper = code.replace("class VisionTransformer(torch.nn.Module):", "class VisionTransformer:")
    assert check_snippet(HostRead, helper) == []
    assert len(check_snippet(HostRead, helper, min_confidence=Confidence.LOW)) == 1


def test_a_helpers_tensor_return_annotation_is_as_unsure_as_its_parameters():
    code = (
        "import torch\n\ndef lengths(batch) -> torch.Tensor:\n    return batch['lengths']\n\n"
        "class Encoder(torch.nn.Module):\n    def mask(self) -> torch.Tensor:\n        return self.m\n\n"
        "    def forward(self, batch):\n        a = lengths(batch).tolist()\n        b = self.mask().tolist()\n"
    )
    found = check_snippet(HostRead, code, min_confidence=Confidence.LOW)
    assert [(f.location.row, f.confidence) for f in found] == [(11, Confidence.LOW), (12, Confidence.MEDIUM)]


def test_weight_loaders_receive_checkpoint_tensors_on_the_host():
    code = (
        "import torch\n\nclass Linear(torch.nn.Module):\n"
        "    def weight_loader(self, param: torch.nn.Parameter, loaded_weight: torch.Tensor):\n"
        "        scale = loaded_weight.item()\n        rows = loaded_weight[torch.arange(4)]\n"
        "        param.data.copy_(loaded_weight)\n\n"
        "    def forward(self, x: torch.Tensor):\n        return x.sum().item()\n"
    )
    found = check_snippet(HostRead, code, min_confidence=Confidence.LOW)
    assert [f.location.row for f in found] == [10]


def test_a_branch_that_returns_does_not_reach_the_code_after_it():
    # vLLM 0.33.0 fmha_sm100/api.py: the `.to(device)` happens only on the path that returns.
    code = (
        "import torch\n\ndef plan(lens: list[int], offsets, device, fast: bool):\n"
        "    if fast:\n        offsets = offsets.to(device)\n        return offsets\n"
        "    return offsets.tolist()\n\n"
        "def plan_gpu(offsets, device, fast: bool):\n"
        "    if fast:\n        offsets = offsets.to(device)\n    return offsets.tolist()\n"
    )
    found = check_snippet(HostRead, code, min_confidence=Confidence.LOW)
    # Row 7 reads a value of unknown type with `.tolist()`: a tensor, not the one moved on the path that returned.
    assert [(f.location.row, f.confidence) for f in found] == [(7, Confidence.LOW), (12, Confidence.MEDIUM)]
    assert "is read as only a tensor or an array can be" in found[0].because


def test_a_guessed_device_tensor_mixed_with_a_cpu_copy_is_a_cpu_tensor():
    # torch refuses `cuda_mask & cpu_mask`, so `is_multimodal` must be on the CPU here.
    code = (
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n"
        "    def embed(self, input_ids: torch.Tensor, is_multimodal: torch.Tensor) -> int:\n"
        "        is_video = is_multimodal & (input_ids.cpu() == 7)\n"
        "        return is_video.sum().item()\n"
    )
    found = check_snippet(HostRead, code)
    assert [f.message.split("`")[1] for f in found] == ["input_ids.cpu()"]


def test_a_proven_device_tensor_mixed_with_a_cpu_tensor_stays_on_the_device():
    # A proven CUDA tensor can only meet a 0-dim CPU tensor: the result is on the GPU.
    code = (
        "import torch\n\ndef f(scale_cpu: torch.Tensor):\n"
        "    x = torch.ones(4, device='cuda')\n"
        "    y = x * scale_cpu.cpu()\n"
        "    return y.sum().item()\n"
    )
    found = check_snippet(HostRead, code)
    assert [f.message.split("`")[1] for f in found] == ["y.sum().item()"]


# What the code itself says about where a tensor lives beats what its annotation guesses.

def test_a_declared_attribute_is_what_other_methods_assign_to_it():
    code = (
        "import torch\nfrom torch import nn\n\nclass Runner(nn.Module):\n"
        "    def __init__(self):\n        self.fault: torch.Tensor | None = None\n"
        "        self.flag: torch.Tensor | None = None\n\n"
        "    def launch(self, fault):\n        self.fault = fault.to('cpu', non_blocking=True)\n\n"
        "    def poll(self):\n        return self.fault.item() + self.flag.item()\n"
    )
    found = messages(code)
    assert len(found) == 1 and "`self.flag.item()`" in found[0]  # only declared: the annotation stands


def test_a_parameter_the_function_requires_on_the_cpu_is_a_host_tensor():
    code = (
        "import torch\n\ndef maps(p2l: torch.Tensor, n: int):\n"
        "    device = p2l.device\n    assert p2l.device.type == 'cpu'\n"
        "    count = torch.zeros(n, device=device)\n    return count.max().item()\n\n"
        "def prepare(grid: torch.Tensor):\n    if not grid.is_cpu:\n        raise ValueError('on the CPU, please')\n"
        "    return grid.prod().item()\n\n"
        "def on_gpu(x: torch.Tensor):\n    if not x.is_cuda:\n        raise ValueError('CUDA, please')\n"
        "    return x.sum().item()\n"
    )
    found = messages(code)
    assert len(found) == 1 and "`x.sum().item()`" in found[0]


def test_a_private_helper_that_every_call_gives_a_host_tensor_reads_a_host_tensor():
    code = (
        "import torch\nfrom torch import nn\n\nclass Encoder(nn.Module):\n"
        "    def forward(self, x: torch.Tensor, crops_cpu: torch.Tensor):\n"
        "        return [self._local(x, crops_cpu[j]) for j in range(2)] + [self._local(x, crops_cpu[0])]\n\n"
        "    def _local(self, x: torch.Tensor, crop: torch.Tensor):\n        return self._grid(x, crop)\n\n"
        "    def _grid(self, x: torch.Tensor, crop: torch.Tensor):\n        return x.view(int(crop[0].item()), -1)\n\n"
        "    def _mixed(self, t: torch.Tensor):\n        return t.item()\n\n"
        "    def run(self, x_cpu: torch.Tensor, y: torch.Tensor):\n        return self._mixed(x_cpu) + self._mixed(y)\n"
    )
    found = messages(code)
    assert len(found) == 1 and "`t.item()`" in found[0]  # one call to `_mixed` passes a device tensor
    passed_on = code.replace("crops_cpu[0])]", "x[0])]")
    found = messages(passed_on)
    assert len(found) == 2 and "`crop[0].item()`" in found[0]  # now one call passes a device tensor


def test_a_private_helper_called_with_a_spread_tuple_of_host_tensors_reads_host_tensors():
    code = (
        "import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n"
        "    def forward(self, x: torch.Tensor, sizes_cpu: torch.Tensor, counts: torch.Tensor):\n"
        "        inputs = (x, sizes_cpu)\n        self._split(*inputs)\n"
        "        others = (x, counts)\n        return self._count(*others)\n\n"
        "    def _split(self, x: torch.Tensor, sizes: torch.Tensor):\n        return x.split(sizes.tolist())\n\n"
        "    def _count(self, x: torch.Tensor, counts: torch.Tensor):\n        return counts.tolist()\n"
    )
    found = messages(code)
    # `sizes` comes from a host tensor through the spread tuple; `counts` from a forward argument.
    assert len(found) == 1 and "`counts.tolist()`" in found[0]
    twice = code.replace("inputs = (x, sizes_cpu)\n", "inputs = (x, sizes_cpu)\n        inputs = (x, counts)\n")
    assert len(messages(twice)) == 2  # a name bound twice says nothing sure


def test_a_branch_that_tests_for_the_cpu_holds_host_tensors():
    code = (
        "import torch\n\ndef to_tensor(ids: list[int], device: torch.device):\n"
        "    if device.type == 'cpu':\n        return torch.tensor(ids, device=device)\n"
        "    return torch.tensor(ids, device=device)\n\n"
        "def read(x: torch.Tensor, y: torch.Tensor):\n"
        "    a = x.sum().item() if False else 0\n"
        "    if x.is_cpu:\n        a = x.sum().item()\n    else:\n        a = x.max().item()\n"
        "    if not y.is_cpu:\n        raise ValueError('on the CPU, please')\n"
        "    return a + y.sum().item()\n"
    )
    found = messages(code)
    assert len(found) == 2 and "`x.sum().item()`" in found[0] and "`x.max().item()`" in found[1]
    from synclint.rules.host_data_to_device import HostDataToDevice
    created = check_snippet(HostDataToDevice, code, min_confidence=Confidence.LOW)
    assert [f.location.row for f in created] == [6]


def test_the_cpu_side_of_a_device_dispatch_guesses_no_gpu():
    # `if x.is_cuda: return kernel(x)`: what follows is the CPU fallback, where a tensor the
    # code does not place (a parameter, a buffer) is only a low-confidence guess of the GPU.
    code = (
        "import torch\nfrom torch import nn\n\nclass Ngram(nn.Module):\n"
        "    def forward(self, input_ids: torch.Tensor, starts: torch.Tensor, table: torch.Tensor):\n"
        "        if input_ids.is_cuda:\n            return kernel(input_ids, starts)\n"
        "        rows = torch.searchsorted(starts, torch.arange(input_ids.shape[0]))\n"
        "        return table[rows]\n\n"
        "    def step(self, input_ids: torch.Tensor, starts: torch.Tensor, table: torch.Tensor):\n"
        "        rows = torch.searchsorted(starts, torch.arange(input_ids.shape[0]))\n"
        "        return table[rows]\n"
    )
    shown = check_snippet(HostRead, code)  # the default threshold: medium
    assert [f.location.row for f in shown] == [13]  # only the method that does not dispatch
    hidden = [f for f in check_snippet(HostRead, code, min_confidence=Confidence.LOW) if f.location.row == 9]
    assert len(hidden) == 1 and hidden[0].confidence is Confidence.LOW
    assert "this path runs only where `input_ids.is_cuda` is False" in hidden[0].because


def test_a_submodule_that_every_call_in_the_file_gives_a_host_tensor_reads_a_host_tensor():
    # `self.adapter(x, meta.grid_thw_cpu)`, the adapter picked from a registry of this file's
    # modules: their `forward(..., grid_thw: torch.Tensor)` reads a CPU tensor, not a GPU guess.
    code = (
        "import torch\nfrom torch import nn\n\n"
        "class Shuffle(nn.Module):\n    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):\n"
        "        return int(grid_thw[0, 1])\n\n"
        "class Merge(nn.Module):\n    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):\n"
        "        return grid_thw[:, 1].tolist()\n\n"
        "ADAPTERS: dict[str, type[nn.Module]] = {'shuffle': Shuffle, 'merge': Merge}\n\n"
        "class Vit(nn.Module):\n    def __init__(self, kind):\n        super().__init__()\n"
        "        cls = ADAPTERS.get(kind)\n        self.adapter = cls()\n\n"
        "    def forward(self, x: torch.Tensor, meta):\n        return self.adapter(x, meta.grid_thw_cpu)\n"
    )
    assert messages(code) == []
    gpu = code.replace("meta.grid_thw_cpu)", "meta.grid_thw)")  # now the call says nothing sure
    assert len(check_snippet(HostRead, gpu)) == 2
    passed_on = code.replace("        return self.adapter(x", "        keep(self.adapter)\n        return self.adapter(x")
    assert len(check_snippet(HostRead, passed_on)) == 2  # the module is handed to code we cannot see


def test_a_copy_to_a_device_variable_that_is_the_cpu_says_so():
    # `.to(device)` reads as a copy to the GPU: the message says this `device` is the host.
    code = ("import torch\n\ndef f(x: torch.Tensor):\n    device = 'cpu'\n    y = torch.ones(2, device='cuda')\n"
            "    a = y.to(device)\n    b = y.to('cpu')\n")
    assert messages(code) == [
        "`y.to(device)` copies the values to `device`, which is the CPU here: a blocking device-to-host copy; the host "
        "waits for the GPU",
        "`y.to('cpu')` is a blocking device-to-host copy; the host waits for the GPU",
    ]


def test_a_because_quoting_code_over_several_lines_is_one_line():
    code = ("import torch\nfrom accelerate import Accelerator\n\naccelerator = Accelerator(\n"
            "    gradient_accumulation_steps=1,\n    mixed_precision='fp16',\n)\n\n"
            "def train(model, batch):\n    loss = model(batch)\n    return loss.item()\n")
    [finding] = check_snippet(HostRead, code)
    assert finding.because == ("model(...) is a module's output, in a file that puts its model or data on the GPU "
                               "(`Accelerator(gradient_accumulation_steps=1, mixed...`)")


def test_a_helper_named_for_moving_a_tensor_to_the_device_returns_a_device_tensor():
    # composer's `self.state.device.tensor_to_device(torch.tensor(n))`, read with `.item()` every batch.
    code = ("import torch\n\ndef train(state, loader):\n    for batch in loader:\n"
            "        size = state.device.tensor_to_device(torch.tensor(len(batch)))\n"
            "        total = size.item()\n        host = state.device.tensor_to_device(torch.tensor(1), 'cpu')\n"
            "        same = host.item()\n")
    [finding] = check_snippet(HostRead, code)
    assert (finding.location.row, finding.confidence) == (6, Confidence.MEDIUM)
    assert finding.because == "moved by tensor_to_device(...), which by its name puts it on the device"


def test_a_host_sequence_indexed_by_a_gpu_value_reads_it_as_an_int():
    # Python asks a 0-d tensor for `__index__` to index a list: it reads the value on the host. Iterating a
    # GPU tensor yields GPU tensors, so each `table[i]` waits; a dict hashes a tensor by identity (no read).
    code = (
        "import torch\n\ndef step():\n    table = [1, 2, 3]\n    names = {'a': 1}\n"
        "    x = torch.zeros(4, dtype=torch.long, device='cuda')\n    top = x.argmax()\n"
        "    v = table[top]\n    for i in x:\n        print(table[i])\n    return v, names[top]\n"
    )
    found = check_snippet(HostRead, code, min_confidence=Confidence.LOW)
    assert [(f.location.row, f.message, f.evidence.value if f.evidence else None) for f in found] == [
        (8, "`table[top]` indexes a host sequence with the GPU tensor `top`, which Python reads as an int; "
            "the host waits for the GPU", Certainty.HIGH),
        (10, "`table[i]` indexes a host sequence with the GPU tensor `i`, which Python reads as an int; "
             "the host waits for the GPU", Certainty.HIGH),
    ]


def test_a_value_host_only_by_a_guess_indexed_by_a_gpu_tensor_is_not_a_host_sequence():
    # `getattr(module, name)` and a helper's result may be tensors: indexing one with a GPU tensor gathers on the GPU.
    code = (
        "import torch\n\ndef pick(module, name: str, active: torch.Tensor):\n"
        "    full = getattr(module, name)\n    a, b = helper(module), helper(module)\n"
        "    active = active.cuda()\n    return full[active], a[active]\n"
    )
    assert messages(code) == []
