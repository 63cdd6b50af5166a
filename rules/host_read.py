"""SYNC107 host-read."""

from __future__ import annotations

import libcst as cst

from synclint.devices.conventions import MASK_NAME, names_a_module
from synclint.devices.lattice import Place, Where
from synclint.model import Confidence
from synclint.evidence import Basis, Certainty
from synclint.patterns import BoolTensors, bool_operands, one_line, tensor_phrase
from synclint.rule import Invalid, Rule, Valid
from synclint.host_reads import (
    AGGREGATION_METRICS,
    FORMAT_BUILTINS,
    LOGGING_CALLS,
    NUMBER_ARGUMENTS,
    NUMBER_BUILTINS,
    NUMPY_ARRAY_BUILDERS,
    SAVE_CALLS,
    SCALER_READS,
    NUMBER_METHODS,
    SIZE_FIRST_ONLY,
    SIZE_METHODS,
    SIZED_FACTORIES,
    number_arguments,
    size_arguments,
)
from synclint.syntax import keyword_arg, may_be_true, method_call, parameter

MODULE_TENSORS = "the tensors of nn.Module"  # how a module's state is explained
SEQUENCE_ANNOTATIONS = ("list", "List", "Sequence", "MutableSequence", "ndarray", "NDArray")
ARANGE_BOUNDS = ("start", "end", "step")



# Everyday training code: the module's output is a GPU tensor once the model is on the GPU.
TRAINING_LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def train(loader):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item():.3f}")
"""
LOGGED_EVERY_100_STEPS = """\
import torch


def train(model, loader, optimizer):
    model.cuda()
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(step, loss.item())
"""
AMP_STEP = """\
import torch


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler()
    for x in loader:
        with torch.autocast("cuda"):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""
CHECKPOINT_EVERY_STEP = """\
import torch


def train(model, loader, optimizer):
    model.to("cuda")
    for step, x in enumerate(loader):
        model(x).sum().backward()
        optimizer.step()
        torch.save(model.state_dict(), f"ckpt-{step}.pt")
"""
TENSORBOARD = """\
import torch
from torch.utils.tensorboard import SummaryWriter


def train(model, loader):
    writer = SummaryWriter()
    model.cuda()
    for step, x in enumerate(loader):
        loss = model(x).mean()
        loss.backward()
        writer.add_scalar("loss", loss, step)
"""
EVAL_INTO_HOST_TENSOR = """\
import torch


@torch.no_grad()
def estimate_loss(model, batches):
    model.cuda()
    losses = torch.zeros(len(batches))
    for k, (x, y) in enumerate(batches):
        _, loss = model(x, y)
        losses[k] = loss
    return losses.mean()
"""
NOT_ON_THE_WAY = """\
import torch
from torch import nn


def check(x: torch.Tensor, y: torch.Tensor, data: dict):
    assert x.shape == y.shape, f"{x} and {y} differ"
    if "token_type_ids" in data:
        return data["token_type_ids"]


def place(module: nn.Module, device):
    return module.to(device)
"""


class HostRead(Rule):
    code = "SYNC107"
    name = "host-read"
    summary = "A GPU value is read on the host, so the host waits for the GPU to produce it"
    prefilter = ("torch",)
    docs = """
    ## What it does
    Flags reads of a GPU tensor's values by the host: `.item()`, `.tolist()`, `.cpu()`,
    `.to("cpu")` and `host.copy_(gpu)` without `non_blocking=True`, `.numpy(force=True)`,
    `int(t)` and `float(t)`, `f"{t}"`, `"%s" % t`, `"{}".format(t)`, `print(t)`, `repr(t)`,
    `str(t)`, `t.type(torch.FloatTensor)` (a CPU type), the builtins `max`/`min` over GPU
    tensors, `x in t`, indexing a GPU tensor with a Python list, a numpy array or a CPU tensor
    (`x[[1, 2, 3]]`, `x[cpu_idx]`, and `x[cpu_idx] = values`), slicing by a GPU scalar
    (`x[:t]`), a host tensor indexed by a GPU tensor (`host[t]`, `host[gpu_mask]`), and a GPU
    scalar used as a Python number: `range(t)`, `torch.arange(t)`,
    `torch.zeros(t)`, `x.repeat(t)`, `x.view(-1, t)`, `x.narrow(0, t, n)`, `torch.randint(0, t, ...)`,
    `x.topk(t)`, `F.pad(x, (0, t))`, flex attention's `create_block_mask(..., Q_LEN=t)`. A copy into
    a host buffer is reported when its source is proven on the GPU or is what a model returned.

    Not flagged: these calls on host tensors, numpy arrays and lists; indexing with a GPU
    index tensor or a CPU boolean mask (measured: it does not wait); `.to("cpu", non_blocking=True)` (it does not wait: SYNC111 checks that its
    result is not read too early); `bool(t)` and an `.item()` tested directly by `if`/`while`
    (SYNC101); a Python scalar written through an index (SYNC106). `x.cpu().numpy()` is one
    wait and one finding, on the `.cpu()`. A plain `.numpy()` is not flagged: on a GPU tensor
    it raises instead of waiting. In CPU modules (`cpu_*.py`, `ops/cpu/`) only tensors proven
    to be on the GPU are reported.

    ## Why is this bad?
    The host needs the value now, so PyTorch copies it from the GPU, and the copy waits for
    every kernel queued before it: the host stops feeding the GPU until the queue drains
    (measured on an H100 with 20 ms of work queued: `t.item()`, `t.tolist()`, `int(t)`,
    `f"{t:.3f}"`, `x.cpu()`, `x[:t]`, `torch.arange(t)`, `x[[1, 2, 3]]` and `x[cpu_idx]`
    each return after about 20 ms; `print(t)` syncs 22 times). Python's `max(t)` iterates the
    tensor and tests every comparison as a bool: one wait per element.

    ## Example
    ```python
    def num_accepted_tokens(accepted: torch.Tensor) -> int:
        return accepted.sum().item()
    ```

    ## Use instead
    Keep the value on the GPU and pass the tensor on (`torch.where`, `clamp`, `index_select`
    with a GPU index), or take it from a host mirror that the scheduler already keeps (vLLM
    keeps `*_cpu` / `*_np` copies of its per-request state for this). Where the host truly
    needs the value, read it once per step, late, and batch the reads into one `.tolist()`.
    ```python
    def num_accepted_tokens(num_accepted_np: np.ndarray) -> int:
        return int(num_accepted_np.sum())
    ```

    ## Fix safety
    There is no automatic fix: the value is needed on the host, and no rewrite can give it
    there without waiting. The fix is a change of design (keep the computation on the GPU,
    or read a host mirror of the value), which only its author can make.
    """

    VALID = [
        Valid("import numpy as np\na = np.zeros(3)\nb = a.tolist()\nc = int(a[0])\nd = max(a.tolist())\n"),
        Valid("import torch\nx = torch.zeros(3)\ny = x.cpu()\nz = x.numpy()\nw = x.tolist()\nn = x.sum().item()\n"),
        Valid("import torch\nx = torch.zeros(3, device='cuda')\ny = x.to('cpu', non_blocking=True)\n"),
        Valid("import torch\nt = torch.ones(1, device='cuda')\nif t.item():\n    pass\n"),
        # Inside a block that ends in `raise`: only on the way to an error.
        Valid("import torch\nt = torch.ones(4, device='cuda')\nif not ok:\n    bad = t.tolist()\n    raise ValueError(bad)\n"),
        Valid("import torch\nt = torch.ones(1, device='cuda')\nwhile not t.item() or t.item():\n    break\n"),
        Valid("import torch\nx = torch.zeros(3, device='cuda')\nidx = torch.arange(2, device='cuda')\ny = x[idx]\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nn = x.shape[0]\ny = x[:n]\nz = x[0]\nr = range(len(x))\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nprint(f'{x.shape} {x.dtype}', len(x), str(x.device))\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nm = max(x.shape[0], 4)\nk = max([x, x], key=len)\n"),
        Valid(
            "import torch\nx = torch.zeros(8, device='cuda')\nv = x.view(torch.int32).view(2, -1).repeat(2, 1)\n"
            "z = torch.zeros(x.shape[0], device=x.device)\n"
        ),
        Valid("import torch\n\ndef f(x: torch.Tensor, rows: list[int]):\n    x[rows] = 0.0\n"),
        Valid(
            "import torch\n\ndef f(x: torch.Tensor, lens_cpu: torch.Tensor, valid_mask_cpu: torch.Tensor):\n"
            "    return x[lens_cpu > 0], x[valid_mask_cpu]\n"
        ),
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = x.type(torch.cuda.FloatTensor).type(torch.float16)\n"),
        Valid("import torch\n\ndef f(x: torch.Tensor):\n    return x.tolist()\n", filename="ops/cpu/attention.py"),
        Valid(
            "import torch\nx = torch.ones(4, device='cuda')\nout = torch.empty(4, pin_memory=True)\n"
            "out.copy_(x, non_blocking=True)\nm = x.to('meta')\n"
        ),
        Valid("import torch\n\ndef stage(t: torch.Tensor):\n    torch.empty(4, device='cpu').copy_(t)\n"),
        Valid("import torch\nimport torch.nn.functional as F\nx = torch.ones(64, device='cuda')\n"
              "a = torch.randint(0, 10, (4,), device='cuda')\nb = x.topk(k=8)\nc = F.pad(x, (0, x.shape[0]))\n"),
        Valid(NOT_ON_THE_WAY),
        # another accelerator's function (low: hidden by default)
        Valid("import torch\n\ndef _neuron_gather_object(t: torch.Tensor):\n    return t.cuda().cpu()\n"),
        # a multimodal processor prepares inputs on the host
        Valid("import torch\n\nclass AudioMultiModalProcessor:\n    def _get_prompt_updates(self, lens: torch.Tensor):\n"
              "        return lens.tolist()\n"),
        # a staging buffer filled from a tensor of unproven device (low: hidden by default)
        Valid("import torch\n\nclass Runner(torch.nn.Module):\n    def stage(self, lens):\n"
              "        buf = torch.zeros(8, dtype=torch.long)\n        buf[1:] = torch.cumsum(lens, 0)\n        return buf\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nclass Sampler(torch.nn.Module):\n    def num_accepted_tokens(self, accepted: torch.Tensor) -> int:\n"
            "        return accepted.sum().item()\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid("import torch\nx = torch.zeros(3, device='cuda')\nids = x.tolist()\n", confidence=Confidence.HIGH),
        Invalid("import torch\nx = torch.zeros(3, device='cuda')\na = x.cpu().numpy()\nb = x.cpu().tolist()\n", count=2),
        Invalid("import torch\nx = torch.zeros(3, device='cuda')\ny = x.to('cpu')\nz = x.to(device='cpu').numpy()\n", count=2),
        Invalid("import torch\nt = torch.ones(1, device='cuda')\nif t.item() > 0:\n    pass\n"),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nn = int(x.sum())\nf = float(x[0])\n", count=2),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nline = f'max {x.max():.3f}'\n"),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nprint(x)\ntext = repr(x) + str(x)\n", count=3),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nline = 'x=%s' % x\nother = 'x={}'.format(x)\n", count=2),
        Invalid("import torch\n\nclass Encoder(torch.nn.Module):\n    def longest(self, prompt_lens: torch.Tensor):\n        return max(prompt_lens)\n"),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nfound = 3 in x\n"),
        Invalid(
            "import torch\n\ndef rows(hidden_states: torch.Tensor, logits_indices: list[int]):\n"
            "    return hidden_states[logits_indices]\n"
        ),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\ny = x[[0, 2]]\nz = x[:, [1, 3]]\n", count=2),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nidx = torch.tensor([0, 2])\ny = x[idx]\n"),
        Invalid(
            "import numpy as np\nimport torch\nx = torch.ones(4, device='cuda')\nrows = np.array([0, 2])\n"
            "x[rows] = torch.zeros(2, device='cuda')\n"
        ),
        Invalid("import torch\nmask = torch.ones(4, device='cuda')\nm = mask.type(torch.BoolTensor)\n"),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\nn = x.sum().long()\ny = x[:n]\n"),
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\nt = x.max().long()\n"
            "a = torch.arange(t, device='cuda')\nfor i in range(t):\n    pass\n",
            count=2,
        ),
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\nn = x.sum().long()\n"
            "a = x.repeat(n)\nb = torch.zeros((2, n), device='cuda')\nc = x.new_full((n,), 1.0)\n",
            count=3,
        ),
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\nout = torch.empty(4, pin_memory=True)\nout.copy_(x)\n",
            confidence=Confidence.HIGH,
        ),
        # What a model returns, and what tensor methods compute from it, copied into a host buffer or used as a size.
        Invalid(
            "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 8).cuda()\nstaging = torch.empty(8, pin_memory=True)\n\n\n"
            "def step(x):\n    logits = model(x)\n    staging.copy_(logits.argmax(-1))\n"
            "    n = (logits > 0).sum()\n    return torch.arange(n, device='cuda')\n",
            count=2,
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\nfrom torch.nn.attention.flex_attention import create_block_mask\n"
            "x = torch.ones(64, device='cuda')\nn = (x > 0).sum()\na = torch.randint(0, n, (4,), device='cuda')\n"
            "b = x.topk(k=n)\nc = F.pad(x, (0, n))\nd = create_block_mask(None, None, None, Q_LEN=n, KV_LEN=n)\n",
            count=4,
            confidence=Confidence.HIGH,
        ),
        Invalid(TRAINING_LOOP, count=1, confidence=Confidence.MEDIUM),
        Invalid(LOGGED_EVERY_100_STEPS, count=1, confidence=Confidence.MEDIUM),
        Invalid(AMP_STEP, count=1, confidence=Confidence.MEDIUM),
        Invalid(CHECKPOINT_EVERY_STEP, count=1, confidence=Confidence.MEDIUM),
        Invalid(TENSORBOARD, count=1, confidence=Confidence.MEDIUM),
        Invalid(EVAL_INTO_HOST_TENSOR, count=1, confidence=Confidence.MEDIUM),
        # A schedule kept on the host, read at a step that lives on the GPU.
        Invalid(
            "import torch\nalphas_cumprod = torch.cumprod(torch.linspace(0.9, 0.1, 1000), dim=0)\n"
            "timesteps = torch.arange(999, -1, -1, device='cuda')\nfor t in timesteps:\n    a = alphas_cumprod[t]\n",
            confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # `.item()` calls that SYNC101 reports as a condition.
        self._tested_items: set[int] = set()
        # Subscripts being assigned (to the value written) or deleted (to None).
        self._written: dict[int, cst.BaseExpression | None] = {}
        self._is_bool = BoolTensors(self)

    # ---- what SYNC101 already reports --------------------------------------------------

    def visit_If(self, node: cst.If) -> None:
        self._note_tested(node.test, last_is_coerced=True)

    def visit_While(self, node: cst.While) -> None:
        self._note_tested(node.test, last_is_coerced=True)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._note_tested(node.test, last_is_coerced=True)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._note_tested(node.test, last_is_coerced=True)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._note_tested(node.test, last_is_coerced=True)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._note_tested(node, last_is_coerced=False)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._note_tested(node, last_is_coerced=True)

    def _note_tested(self, test: cst.BaseExpression, last_is_coerced: bool) -> None:
        for operand in bool_operands(test, last_is_coerced):
            if method_call(operand, "item") is not None:
                self._tested_items.add(id(operand))

    # ---- subscripts being written --------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._note_written(target.target, node.value)
            if isinstance(target.target, cst.Subscript):
                self._check_write_into_host_tensor(target.target, node.value)

    def _check_write_into_host_tensor(self, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """`losses[k] = loss` with `losses` a host tensor: the GPU value is copied to the host."""
        if self.where(target.value).place is not Place.HOST_TENSOR:
            return
        where = self.where(value)
        if where.on_device:
            if where.certainty < Certainty.HIGH and not where.from_module_output:
                # A host tensor is most often a staging buffer filled from host values: only a
                # value proven on the GPU, or a model's output (`losses[k] = loss`), says the
                # write crosses devices.
                where = where.weaker(Certainty.LOW)
            self.report_where(
                target,
                f"`{one_line(self.code_of(target))} = {one_line(self.code_of(value), 40)}` writes a GPU value into "
                "a host tensor, a blocking device-to-host copy; the host waits for the GPU",
                where,
            )

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note_written(node.target, node.value)

    def visit_Del(self, node: cst.Del) -> None:
        self._note_written(node.target, None)

    def _note_written(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Subscript):
            self._written[id(target)] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._note_written(element.value, None)

    # ---- calls -------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if node.args and self.qualname(func) in SAVE_CALLS:
            self._check_save(node, node.args[0].value)
        elif isinstance(func, cst.Name):
            qual = self.qualname(func)
            if qual in NUMBER_ARGUMENTS:  # `from torch.nn.attention.flex_attention import create_block_mask`
                self._check_host_numbers(node, number_arguments(node, *NUMBER_ARGUMENTS[qual]), "a Python int")
            else:
                self._check_builtin(node, func.value)
        elif isinstance(func, cst.Attribute):
            qual = self.qualname(func)
            if qual is not None and qual.startswith("math.") and qual.count(".") == 1:
                values = [a.value for a in node.args if a.keyword is None and not a.star]
                for value in values:
                    where = self.where(value)
                    if where.on_device:
                        self._report(node, where, f"converts the tensor `{one_line(self.code_of(value))}` to a "
                                                  "Python float")
                        break
            elif qual in ("torch.arange", "torch.range"):
                bounds = [a.value for a in node.args if a.keyword is None or a.keyword.value in ARANGE_BOUNDS]
                self._check_host_numbers(node, bounds, "a bound")
            elif qual in SIZED_FACTORIES:
                self._check_host_numbers(node, size_arguments(node, first_only=qual in SIZE_FIRST_ONLY), "a size")
            elif qual in NUMBER_ARGUMENTS:
                self._check_host_numbers(node, number_arguments(node, *NUMBER_ARGUMENTS[qual]), "a Python int")
            elif qual is None and func.attr.value in NUMBER_METHODS and not self.where(func.value).is_module:
                self._check_host_numbers(node, number_arguments(node, *NUMBER_METHODS[func.attr.value]), "a Python int")
            elif qual is None and func.attr.value in SIZE_METHODS and not self.where(func.value).is_module:
                # (`self.repeat(x)` in an nn.Module calls its submodule `repeat`, not Tensor.repeat)
                sizes = size_arguments(node, first_only=func.attr.value in SIZE_FIRST_ONLY)
                self._check_host_numbers(node, sizes, "a size")
            elif qual is None and func.attr.value in LOGGING_CALLS:
                self._check_logged(node)
            elif qual is None:
                self._check_method(node, func)

    def _is_aggregation_metric(self, receiver: cst.BaseExpression) -> bool:
        """Whether `receiver` was made by a torchmetrics aggregation metric (`MeanMetric()`, `RunningMean(...)`,
        through `.to(device)` and the like), in this scope or in `self`."""
        made: list[cst.BaseExpression | None] = []
        if isinstance(receiver, cst.Name):
            made = self.assignments().get(receiver.value, [])
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            cls = self.self_class()
            made = list(self.attribute_assignments(cls).get(receiver.attr.value, [])) if cls is not None else []
        for value in made:
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                value = value.func.value  # `RunningMean(...).to(device)`
            qual = self.qualname(value.func) if isinstance(value, cst.Call) else None
            if qual is not None and qual.startswith("torchmetrics.") and qual.rsplit(".", 1)[-1] in AGGREGATION_METRICS:
                return True
        return False

    def _check_logged(self, call: cst.Call) -> None:
        """`accelerator.log({"loss": loss})`, `writer.add_scalar("loss", loss)`, `fabric.log_dict(m)`:
        a logger turns the GPU tensors it is given into Python numbers."""
        for arg in call.args:
            where = self._gpu_data_in(arg.value)
            if where is not None:
                self._report(call, where, "logs a GPU tensor, which the logger reads as a Python number")
                return

    def _check_save(self, call: cst.Call, saved: cst.BaseExpression) -> None:
        """`torch.save(checkpoint, path)` of GPU tensors copies each to the host. A checkpoint
        saved in a loop or by a saving routine (every N steps) costs during training; one saved
        by a script's top level, after training, does not."""
        where = self._gpu_data_in(saved)
        if where is None:
            return
        if where.certainty < Certainty.HIGH and where.basis is not Basis.MODULE_STATE:
            # Serialization helpers take tensors of any device: only a model's state, or a tensor
            # proven on the GPU, says the save copies from it.
            where = where.weaker(Certainty.LOW)
        context = self.context()
        if context in ("init", "test") or (self.function is None and context not in ("loop", "interval")):
            where = where.weaker(Certainty.LOW)
        self._report(call, where, "copies the GPU tensors it saves to the host")

    def _gpu_data_in(self, value: cst.BaseExpression, depth: int = 0) -> Where | None:
        """Where `value` holds GPU data: a GPU tensor, an nn.Module, a module's `state_dict()`, or a
        dict or list (built here) holding one."""
        if isinstance(value, cst.Name) and depth < 2:
            bound = [v for v in self.assignments().get(value.value, []) if isinstance(v, (cst.Dict, cst.List, cst.Tuple))]
            if bound:
                # `metrics = {...}` (in each branch that logs): what any of them holds
                return next((w for v in bound if (w := self._gpu_data_in(v, depth + 1)) is not None), None)
        if isinstance(value, cst.Dict) and depth < 3:
            return next((w for e in value.elements if isinstance(e, cst.DictElement)
                         and (w := self._gpu_data_in(e.value, depth + 1)) is not None), None)
        if isinstance(value, (cst.List, cst.Tuple)) and depth < 3:
            return next((w for e in value.elements if (w := self._gpu_data_in(e.value, depth + 1)) is not None), None)
        receiver = method_call(value, "state_dict")
        module = receiver.value if receiver is not None else value
        where = self.where(module)
        if where.is_module:
            placed = Certainty.MEDIUM if where.certainty is Certainty.HIGH else Certainty.LOW
            return Where(Place.DEVICE, placed, f"{MODULE_TENSORS} `{one_line(self.code_of(module), 30)}`: {where.because}",
                         basis=Basis.MODULE_STATE)
        return where if where.on_device else None

    def _check_builtin(self, call: cst.Call, name: str) -> None:
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if name == "bool" and len(positional) == 1:
            self._note_tested(positional[0], last_is_coerced=True)
        elif name in NUMBER_BUILTINS and len(positional) == 1:
            self._report_operand(call, positional[0], "reads a GPU value as a Python number")
        elif name in FORMAT_BUILTINS:
            for value in positional:
                where = self.where(value)
                if where.on_device:
                    self._report(call, where, f"formats {self._named(value, where)} as text on the host")
                    return
        elif name in ("max", "min") and positional and keyword_arg(call, "key") is None:
            for value in positional:
                where = self.where(value)
                if where.on_device:
                    self._report(call, where, "compares GPU values in Python, one wait per comparison")
                    return
        elif name == "range":
            self._check_host_numbers(call, positional, "a bound")

    def _check_method(self, call: cst.Call, func: cst.Attribute) -> None:
        method = func.attr.value
        receiver = func.value
        if method == "cpu" and self._moved_off_an_unknown_device(receiver):
            # A field (`meta.seq_lens.cpu()`, `model.lm_head.weight.cpu()`) is device state more often
            # than not; a local name is as often a value already on the host, normalised: on vLLM
            # 0.33.0, 2 of 2 judged fields were on the GPU, 3 of 12 names.
            sure = Certainty.MEDIUM if isinstance(receiver, cst.Attribute) else Certainty.LOW
            where = Where(Place.DEVICE, sure, f"`.cpu()` moves {one_line(self.code_of(receiver))} to the host, so it is a tensor, likely on the GPU")
            self._report(call, where, "copies the values to the host")
        elif method in ("item", "tolist") and id(call) not in self._tested_items:
            where = self.where_read(receiver)
            if where.on_device:
                self._report(call, where, f"copies {'the values' if method != 'item' else 'a value'} to the host")
        elif method == "cpu":
            self._report_operand(call, receiver, "copies the values to the host")
        elif method == "numpy" and may_be_true(keyword_arg(call, "force")):
            self._report_operand(call, receiver, "copies the values to the host")
        elif method == "to" and not may_be_true(keyword_arg(call, "non_blocking")):
            if self.where(call).place is Place.HOST_TENSOR and not _to_meta(call):
                target = keyword_arg(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None
                                                         else None)
                if target is None or isinstance(target, cst.SimpleString) or isinstance(target, cst.Call):
                    self._report_operand(call, receiver, "is a blocking device-to-host copy")
                else:  # `.to(device)`: say that this `device` is the host, or it reads as a copy to the GPU
                    self._report_operand(call, receiver, f"copies the values to `{one_line(self.code_of(target), 40)}`, "
                                         "which is the CPU here: a blocking device-to-host copy")
        elif method == "type" and call.args and _is_host_tensor_type(self.qualname(call.args[0].value)):
            self._report_operand(call, receiver, "is a blocking device-to-host copy (a CPU tensor type)")
        elif method == "copy_" and call.args and not may_be_true(keyword_arg(call, "non_blocking")):
            # Only a proven CUDA source or a model's output (and what tensor methods compute from it): a
            # tensor of unknown device copied into a host buffer is as often host data staged into pinned memory.
            source = self.where(call.args[0].value)
            if self.where(receiver).place is Place.HOST_TENSOR and source.on_device and (
                    source.certainty >= Certainty.HIGH or source.from_module_output):
                self._report(call, source, "is a blocking copy into host memory")
        elif method == "update" and call.args and self._is_aggregation_metric(receiver):
            # torchmetrics' aggregation metrics check each value for NaN on the host
            # (`nan_strategy`, "warn" by default): `if torch.isnan(x).any(): ...`.
            self._report_operand(call, call.args[0].value, "checks the value for NaN on the host (a torchmetrics "
                                                             "aggregation metric)")
        elif method in SCALER_READS and "scaler" in self.code_of(receiver).lower():
            # torch.amp.GradScaler reads its device state on the host: the scale (`get_scale`,
            # `state_dict`) and whether gradients overflowed (`step`).
            where = Where(Place.DEVICE, Certainty.MEDIUM, f"GradScaler.{method}() {SCALER_READS[method]}")
            self._report(call, where, "reads the scaler's state on the GPU")
        elif method == "format" and isinstance(receiver, (cst.SimpleString, cst.ConcatenatedString)):
            for arg in call.args:
                where = self.where(arg.value)
                if where.on_device:
                    self._report(call, where, f"formats {self._named(arg.value, where)} as text on the host")
                    return

    def _check_host_numbers(self, call: cst.Call, values: list[cst.BaseExpression], role: str) -> None:
        """`range(t)`, `torch.arange(t)`, `x.repeat(t)`: the host needs each value as a Python number."""
        for value in values:
            where = self.where(value)
            if where.on_device and (where.computed or not where.from_module_output):
                # (A module returns activations; a number it returns beside them is a shape:
                # `x, (h, w) = self.patch_embed(x)`, then `x.reshape(b, h, w, -1)`. What a tensor
                # method computes from its output, `(logits > 0).sum()`, is a tensor.)
                self._report(call, where, f"needs the GPU scalar `{one_line(self.code_of(value))}` on the host as {role}")
                return

    # ---- formatting --------------------------------------------------------------------

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        where = self.where(node.expression)
        if where.on_device:
            self.report_where(
                node.expression,
                f"an f-string formats {self._named(node.expression, where)} as text on the host; "
                "the host waits for the GPU",
                where,
            )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo):
            return
        if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return
        values = [e.value for e in node.right.elements] if isinstance(node.right, cst.Tuple) else [node.right]
        for value in values:
            where = self.where(value)
            if where.on_device:
                self._report(node, where, f"formats {self._named(value, where)} as text on the host")
                return

    # ---- `x in t`, indexing, slicing ---------------------------------------------------

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `token in stop_tokens` with a GPU tensor on the left and a Python container on the right:
        # Python compares the tensor with each element, and each comparison is a bool of a GPU value.
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                self._check_membership(left, target)
            # (A set or a dict hashes a tensor by its identity: no comparison, no wait.)
            if isinstance(target.operator, (cst.In, cst.NotIn)) and (
                    isinstance(target.comparator, (cst.Tuple, cst.List)) or self._is_host_sequence(target.comparator)
                    or self._is_tuple_parameter(target.comparator)):
                where = self.where(left)
                if where.on_device:
                    text = one_line(self.code_of(left))
                    self.report_where(
                        node,
                        f"`in` compares the tensor `{text}`, which {tensor_phrase(where)}, with each element in "
                        "Python; the host waits for the GPU",
                        where,
                    )
            left = target.comparator

    def _check_membership(self, left: cst.BaseExpression, target: cst.ComparisonTarget) -> None:
        """`x in t` with `t` on the GPU searches the tensor from Python. (A string on the left means a
        dict or a string on the right: `"ids" in batch`.)"""
        if isinstance(left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return
        where = self.where(target.comparator)
        if where.on_device:
            text = one_line(self.code_of(target.comparator))
            self.report_where(
                target.comparator,
                f"`in` searches `{text}`, which {tensor_phrase(where)}, from Python; the host waits for the GPU",
                where,
            )

    def _is_tuple_parameter(self, expr: cst.BaseExpression) -> bool:
        """A parameter annotated as a tuple (`stop_tokens: tuple[int, ...]`)."""
        param = parameter(self.function, expr.value) if isinstance(expr, cst.Name) and self.function else None
        if param is None or param.annotation is None:
            return False
        head = param.annotation.annotation
        head = head.value if isinstance(head, cst.Subscript) else head
        return isinstance(head, cst.Name) and head.value in ("tuple", "Tuple")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self._report_slice_bound(node, bound):
                        return
        if id(node) in self._written:
            # A tensor written through a host index copies the index too; a Python scalar
            # written into one element is SYNC106's.
            written = self._written[id(node)]
            if written is None or not self.where(written).is_tensor:
                return
        indexed = self.where(node.value)
        if indexed.place is Place.HOST_TENSOR:
            self._check_host_index(node, "a host tensor", "which the host reads first")
            return
        if indexed.place is Place.HOST and not indexed.mapping and (indexed.items is not None or indexed.element is not None):
            # A list or tuple built where the code shows it (not any host value: `getattr(...)` may be a tensor).
            self._check_host_index(node, "a host sequence", "which Python reads as an int")
            return
        if not (indexed.on_device or indexed.place is Place.UNKNOWN):
            return
        for element in node.slice:
            index = element.slice
            if not (isinstance(index, cst.Index) and self._is_host_index(index.value)):
                continue
            if not indexed.on_device:
                # Only a tensor takes a tensor as its index; where it lives is unknown, and in an
                # nn.Module's methods (a vision tower's RoPE cache) it is most likely the GPU.
                if self.where(index.value).place is not Place.HOST_TENSOR:
                    return
                indexed = self._indexed_by_a_tensor(node.value)
            text = one_line(self.code_of(node))
            self.report_where(
                node,
                f"`{text}` indexes a GPU tensor with the host index `{one_line(self.code_of(index.value))}`: "
                "its blocking copy to the GPU waits for the GPU",
                indexed,
            )
            return

    def _check_host_index(self, node: cst.Subscript, indexed: str, read: str) -> None:
        """`alphas_cumprod[t]` with `alphas_cumprod` a host tensor and `t` a GPU tensor: a host tensor takes a
        GPU index only as a 0-d tensor or a mask, and reads it on the host (measured: waits; any other GPU index
        raises). `table[i]` with `table` a list, tuple or array on the host and `i` a GPU tensor (an element of
        `for i in gpu_tensor:`, `logits.argmax()`): Python asks the tensor for an int (`__index__`)."""
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and (where := self.where(index.value)).on_device:
                self.report_where(node, f"`{one_line(self.code_of(node))}` indexes {indexed} with the GPU tensor "
                                        f"`{one_line(self.code_of(index.value))}`, {read}; the host waits for the GPU", where)
                return

    def _indexed_by_a_tensor(self, value: cst.BaseExpression) -> Where:
        in_module = self.function is not None and self.is_module_class(self.class_of(self.function))
        text = one_line(self.code_of(value))
        if in_module:
            return Where(Place.DEVICE, Certainty.MEDIUM, f"`{text}` is indexed by a tensor, so it is one; in an nn.Module it likely lives on the GPU")
        return Where(Place.DEVICE, Certainty.LOW, f"`{text}` is indexed by a tensor, so it is one, of unknown device")

    def _report_slice_bound(self, node: cst.Subscript, bound: cst.BaseExpression) -> bool:
        where = self.where(bound)
        if not where.on_device:
            return False
        self.report_where(
            node,
            f"`{one_line(self.code_of(node))}` slices by the GPU scalar `{one_line(self.code_of(bound))}`; "
            "Python reads it on the host, which waits for the GPU",
            where,
        )
        return True

    def _is_host_index(self, index: cst.BaseExpression) -> bool:
        """A CPU integer tensor, a list or a numpy array: an index that must be copied to the GPU.

        A CPU boolean mask does not wait (measured): PyTorch takes its positions on the host."""
        where = self.where(index)
        if where.place is Place.HOST_TENSOR:
            return not self._is_bool(index) and not _named_like_a_mask(index)
        return where.place is Place.HOST and not where.is_none and self._is_host_sequence(index)

    def _is_host_sequence(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is syntactically a list or a numpy array (not a Python int)."""
        if isinstance(expr, (cst.List, cst.ListComp)):
            return True
        if isinstance(expr, cst.Call):
            qual = self.qualname(expr.func) or ""
            if qual.startswith("numpy.") and qual.rsplit(".", 1)[-1] in NUMPY_ARRAY_BUILDERS:
                return True
            if isinstance(expr.func, cst.Name) and expr.func.value in ("list", "sorted"):
                return True
            return method_call(expr, "tolist", "numpy") is not None
        if isinstance(expr, cst.Name) and expr.value not in seen:
            return self._name_is_sequence(expr.value, seen | {expr.value})
        return False

    def _name_is_sequence(self, name: str, seen: frozenset[str]) -> bool:
        """A parameter annotated as a sequence, or a name whose every assignment in scope is one."""
        scope = self.scope
        param = parameter(scope, name) if isinstance(scope, cst.FunctionDef) else None
        if param is not None:
            return param.annotation is not None and _is_sequence_annotation(param.annotation.annotation)
        values = self.assignments(scope).get(name, [])
        return bool(values) and all(value is not None and self._is_host_sequence(value, seen) for value in values)

    # ---- reporting ---------------------------------------------------------------------

    def report_where(self, node: cst.CSTNode, message: str, where: Where, fix=None) -> None:
        if where.certainty < Certainty.HIGH and self.host_code:
            return  # CPU kernels: a tensor of unknown device there is a host tensor
        super().report_where(node, message, where, fix)

    def _moved_off_an_unknown_device(self, receiver: cst.BaseExpression) -> bool:
        """`obj.field.cpu()` where nothing is known of `field`: code copies to the host what is not there.

        Modules (`model.cpu()`) are the exception, so only data-like names count.
        """
        if self.where(receiver).place is not Place.UNKNOWN or self.host_code:
            return False
        name = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", "")
        if not isinstance(name, str) or not name or name == "self":
            return False
        return not names_a_module(name)

    def _report_operand(self, node: cst.CSTNode, operand: cst.BaseExpression, what: str) -> None:
        where = self.where(operand)
        if where.on_device:
            self._report(node, where, what)

    def _report(self, node: cst.CSTNode, where: Where, what: str) -> None:
        self.report_where(node, f"`{one_line(self.code_of(node))}` {what}; the host waits for the GPU", where)

    def _named(self, value: cst.BaseExpression, where: Where) -> str:
        if where.certainty >= Certainty.HIGH:
            return f"the CUDA tensor `{one_line(self.code_of(value))}`"
        return f"the tensor `{one_line(self.code_of(value))}`"




def _named_like_a_mask(expr: cst.BaseExpression) -> bool:
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    return bool(MASK_NAME.search(name))


def _is_host_tensor_type(qual: str | None) -> bool:
    """`torch.FloatTensor`, `torch.BoolTensor`, ...: the legacy CPU tensor types."""
    return qual is not None and qual.startswith("torch.") and qual.count(".") == 1 and qual.endswith("Tensor")


def _to_meta(call: cst.Call) -> bool:
    """`.to("meta")`: a tensor without data, not a copy."""
    target = keyword_arg(call, "device") or next((a.value for a in call.args if a.keyword is None), None)
    return isinstance(target, cst.SimpleString) and target.evaluated_value == "meta"


def _is_sequence_annotation(annotation: cst.BaseExpression) -> bool:
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    last = head.attr.value if isinstance(head, cst.Attribute) else head.value if isinstance(head, cst.Name) else ""
    return last in SEQUENCE_ANNOTATIONS
