"""SYNC103 host-data-to-device."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import libcst as cst

from synclint.devices.lattice import HOST, Place, Where
from synclint.devices.torch_api import HOST_DATA_CONSTRUCTORS
from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import gpu_copy_target, one_line, with_keyword_arg, with_keyword_value
from synclint.rule import Invalid, Option, Replacement, Rule, Valid
from synclint.syntax import (
    dotted_name,
    find_all,
    is_literal_false,
    keyword_arg,
    keywords,
    method_call,
    parameter,
    positional_args,
)

# The signatures vLLM's `async_tensor_h2d` has had: (data, device, dtype=None) since 0.26,
# (data, dtype, target_device, pin_memory) before.
SIGNATURE_DATA_DEVICE_DTYPE = "data-device-dtype"
SIGNATURE_DATA_DTYPE_DEVICE_PIN = "data-dtype-device-pin"
HELPER_NAME = "async_tensor_h2d"
# Constructors whose data argument may already be a tensor (they then copy nothing or share it).
SHARING_CONSTRUCTORS = frozenset({"torch.as_tensor", "torch.asarray"})
# Keywords a fix knows how to carry over; any other (requires_grad, copy, ...) leaves the call unfixed.
MOVABLE_KEYWORDS = frozenset({"dtype", "device"})
# Builtins whose result is Python data that `torch.tensor(..., pin_memory=True)` accepts.
PYTHON_SEQUENCE_BUILTINS = frozenset({"list", "tuple", "range", "sorted"})
PYTHON_DATA_ANNOTATIONS = frozenset(
    "list List tuple Tuple Sequence MutableSequence Iterable int float bool complex range".split()
)
PINNED_FIX = "Build the tensor in pinned memory and copy it with `non_blocking=True`"
PAGEABLE_FIX = (
    "Copy with `non_blocking=True`; from pageable memory the copy still waits once it reaches 4 MB "
    "(pinned memory, e.g. through an async host-to-device helper, never waits)"
)
NUMBER_BUILTINS = ("int", "float", "bool")
BUILT_ON_DEVICE = (
    "`{}` builds a GPU tensor from host data with a blocking copy; the host waits for the GPU queue to drain"
)
COPIED_BLOCKING = (
    "`{}` copies a tensor just built from host data to the GPU without `non_blocking=True`; "
    "the host waits for the GPU queue to drain"
)
COPIED_PAGEABLE = (
    "`{}` copies from pageable host memory, which still waits for the GPU once the copy reaches 4 MB; "
    "pinning the source (`pin_memory=True`) is what makes the copy asynchronous"
)


class HostDataToDevice(Rule):
    code = "SYNC103"
    name = "host-data-to-device"
    summary = "A GPU tensor is built from Python or numpy data by a blocking copy, so the host waits for the GPU"
    # The constructors are named by a torch import (so the file says `torch`); `new_tensor` is a method.
    prefilter = ("torch", "new_tensor")
    options = {
        "async-h2d-helper": Option(
            str,
            "",
            'the project\'s asynchronous host-to-device helper, as "pkg.module:function" (e.g. '
            '"vllm.utils.torch_utils:async_tensor_h2d"); without it, a module that already imports a function '
            "named async_tensor_h2d uses that one",
        ),
        "async-h2d-signature": Option(
            str,
            SIGNATURE_DATA_DEVICE_DTYPE,
            f'how the helper is called: "{SIGNATURE_DATA_DEVICE_DTYPE}" (helper(data, device, dtype=...)) or '
            f'"{SIGNATURE_DATA_DTYPE_DEVICE_PIN}" (helper(data, dtype, device, pin_memory))',
        ),
    }
    docs = """
    ## What it does
    Flags GPU tensors built from host data by a blocking copy: `torch.tensor(data, device=dev)`,
    `torch.as_tensor(arr, device=dev)`, `torch.tensor(data).to(dev)`, `torch.from_numpy(a).cuda()`
    and `gpu_tensor.new_tensor(data)`, where `data` is a Python list or number or a numpy
    array. A scalar (`torch.tensor(0, device=dev)`) copies too, but is reported at medium
    confidence. At low confidence, it also flags `torch.tensor(data).to(dev, non_blocking=True)`
    without `pin_memory`: from pageable memory the copy still waits once it reaches 4 MB.

    Not flagged: tensors built on the host (`torch.tensor(data)`), factories that copy no data
    (`torch.zeros(n, device=dev)`), and `torch.as_tensor(t, device=dev)` of a tensor that is
    already on the GPU.

    ## Why is this bad?
    The data must cross from host memory to the GPU, and PyTorch does it with a blocking copy
    ordered after every kernel already queued: the host stops feeding the GPU until the queue
    drains (measured on an H100 with 20 ms of work queued: `torch.tensor(list, device=cuda)`,
    `torch.as_tensor(ndarray, device=cuda)`, `torch.from_numpy(a).cuda()` and
    `x.new_tensor(list)` each return after 20 ms). Built in pinned memory and copied with
    `non_blocking=True`, the same tensor is ready without the host waiting.

    ## Example
    ```python
    def isin_list(elements: torch.Tensor, test_elements_list: list[int]) -> torch.Tensor:
        test_elements = torch.tensor(test_elements_list, dtype=torch.int64, device=elements.device)
        return torch.isin(elements, test_elements)
    ```

    ## Use instead
    Build the tensor in pinned host memory and copy it asynchronously, or call the project's
    helper that does so (vLLM PR #42347 moved `isin_list` to `async_tensor_h2d`):
    ```python
    def isin_list(elements: torch.Tensor, test_elements_list: list[int]) -> torch.Tensor:
        test_elements = torch.tensor(
            test_elements_list, dtype=torch.int64, pin_memory=torch.cuda.is_available()
        ).to(elements.device, non_blocking=True)
        return torch.isin(elements, test_elements)
    ```

    ## Fix safety
    With `async-h2d-helper = "pkg.module:function"` set (and `async-h2d-signature` saying how
    it is called), or when the module already imports a function named `async_tensor_h2d`,
    the fix calls that helper, adding its import where needed; the newer signature
    (`helper(data, device, dtype=...)`) is given Python and numpy data, the older one
    (`helper(data, dtype, device, pin_memory)`) Python data only. Otherwise, Python data (a
    list, tuple or number, by its literal or annotation) is built in pinned memory:
    `torch.tensor(data, dtype=D, pin_memory=torch.cuda.is_available()).to(dev, non_blocking=True)`,
    pinning guarded so that a machine without CUDA still runs. Other data keeps its constructor
    and is copied with `non_blocking=True` from pageable memory (`torch.as_tensor(a).to(dev,
    non_blocking=True)`): torch raises on `torch.tensor(ndarray, pin_memory=True)`, and this
    copy still waits from 4 MB on, which the fix message says. All give the same values,
    dtype and device, so the fixes are safe, but one: `torch.from_numpy(a)` or
    `torch.as_tensor(a)` of an array that is not made in the expression may share memory with
    a pinned buffer (vLLM's `*_np` views) that the host overwrites before an asynchronous copy
    lands; that fix is unsafe. Calls with other keywords (`requires_grad=`, ...) and data that
    is already a tensor are left unfixed. A Python number (a literal, or `int()`/`float()`/`bool()`
    of one) needs no copy at all: it is filled in on the device by a kernel that takes it as an
    argument, `torch.zeros((), device=dev)` for a zero, `torch.ones` for a one and
    `torch.full((), v, device=dev)` for any other, with the dtype `torch.tensor` would give it
    (`dtype=torch.long` for an integer literal); passing the number straight to the operation
    that uses it often avoids the tensor altogether. No fix is offered where the data itself
    reads a GPU value (`torch.tensor(t.item(), device=dev)` in a loop over `t`): the read waits
    for the GPU once per element whatever the copy does (SYNC101 reports it).
    """

    VALID = [
        Valid("import torch\nids = [1, 2, 3]\nt = torch.tensor(ids)\n"),
        Valid("import torch\nt = torch.zeros(4, device='cuda')\n"),
        Valid("import torch\nt = torch.tensor([1, 2], device='cpu')\n"),
        # Pinned and non-blocking: the good pattern, and the fix's own output.
        Valid(
            "import torch\n\ndef f(ids: list[int], dev: torch.device):\n"
            "    return torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(dev, non_blocking=True)\n"
        ),
        # Already a GPU tensor: as_tensor copies nothing.
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = torch.as_tensor(x, device='cuda')\n"),
        # new_tensor of a host tensor stays on the host.
        Valid("import torch\nx = torch.ones(4)\ny = x.new_tensor([1.0, 2.0])\n"),
        # The helper itself builds on the host and copies asynchronously.
        Valid(
            "import torch\n\ndef async_tensor_h2d(data, device, dtype=None):\n"
            "    t = torch.tensor(data, dtype=dtype, pin_memory=True, device='cpu')\n"
            "    return t.to(device, non_blocking=True)\n"
        ),
    ]
    INVALID = [
        # vLLM's isin_list (PR #42347).
        Invalid(
            "import torch\n\ndef isin_list(input_ids: torch.Tensor, test_elements_list: list[int]) -> torch.Tensor:\n"
            "    test_elements = torch.tensor(test_elements_list, dtype=torch.int64, device=input_ids.device)\n"
            "    return torch.isin(input_ids, test_elements)\n",
            expected_fix="import torch\n\n"
            "def isin_list(input_ids: torch.Tensor, test_elements_list: list[int]) -> torch.Tensor:\n"
            "    test_elements = torch.tensor(test_elements_list, dtype=torch.int64, "
            "pin_memory=torch.cuda.is_available()).to(input_ids.device, non_blocking=True)\n"
            "    return torch.isin(input_ids, test_elements)\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch\nids = [3, 1, 2]\nidx = torch.tensor(ids).to('cuda')\n",
            expected_fix="import torch\nids = [3, 1, 2]\n"
            "idx = torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(\n"
            "    'cuda', non_blocking=True\n"
            ")\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import numpy as np\nimport torch\npos = np.arange(16)\nt = torch.from_numpy(pos).cuda()\n",
            # torch cannot pin a tensor made from numpy: the copy is made non-blocking from pageable memory.
            expected_fix="import numpy as np\nimport torch\npos = np.arange(16)\n"
            "t = torch.from_numpy(pos).cuda(non_blocking=True)\n",
        ),
        Invalid(
            "import numpy as np\nimport torch\n\ndef scale(logits: torch.Tensor, temperatures: np.ndarray):\n"
            "    return logits / torch.as_tensor(temperatures, device=logits.device)\n",
            expected_fix="import numpy as np\nimport torch\n\n"
            "def scale(logits: torch.Tensor, temperatures: np.ndarray):\n"
            "    return logits / torch.as_tensor(temperatures).to(logits.device, non_blocking=True)\n",
        ),
        # new_tensor keeps the receiver's dtype, so the fix spells it out.
        Invalid(
            "import torch\nlogits = torch.zeros(2, 8, device='cuda')\nbias = logits.new_tensor([0.5, 1.5])\n",
            expected_fix="import torch\nlogits = torch.zeros(2, 8, device='cuda')\n"
            "bias = torch.tensor(\n"
            "    [0.5, 1.5], dtype=logits.dtype, pin_memory=torch.cuda.is_available()\n"
            ").to(logits.device, non_blocking=True)\n",
        ),
        # A scalar: one tiny copy, still a wait.
        Invalid(
            "import torch\nzero = torch.tensor(0, device='cuda')\n",
            expected_fix="import torch\nzero = torch.zeros((), dtype=torch.long, device='cuda')\n",
            confidence=Confidence.MEDIUM,
        ),
        # The configured helper, newer signature; its import is added.
        Invalid(
            "import torch\n\ndef f(ids: list[int], dev: torch.device):\n"
            "    return torch.tensor(ids, dtype=torch.long, device=dev)\n",
            expected_fix="import torch\nfrom vllm.utils.torch_utils import async_tensor_h2d\n\n"
            "def f(ids: list[int], dev: torch.device):\n"
            "    return async_tensor_h2d(ids, dev, dtype=torch.long)\n",
            config={"async-h2d-helper": "vllm.utils.torch_utils:async_tensor_h2d"},
        ),
        # The helper the module already imports, older signature.
        Invalid(
            "import torch\nfrom vllm.utils import async_tensor_h2d\n\ndef f(ids: list[int], dev: torch.device):\n"
            "    return torch.tensor(ids).to(dev)\n",
            expected_fix="import torch\nfrom vllm.utils import async_tensor_h2d\n\n"
            "def f(ids: list[int], dev: torch.device):\n"
            "    return async_tensor_h2d(ids, None, dev, torch.cuda.is_available())\n",
            config={"async-h2d-signature": SIGNATURE_DATA_DTYPE_DEVICE_PIN},
        ),
        # Non-blocking from pageable memory: waits from 4 MB on (low confidence).
        Invalid(
            "import torch\n\ndef f(ids: list[int]):\n    return torch.tensor(ids).to('cuda', non_blocking=True)\n",
            expected_fix="import torch\n\ndef f(ids: list[int]):\n"
            "    return torch.tensor(ids, pin_memory=torch.cuda.is_available()).to(\n"
            "        'cuda', non_blocking=True\n"
            "    )\n",
            config={"min-confidence": "low"},
            confidence=Confidence.LOW,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if any(arg.star for arg in node.args):
            return
        qual = self.qualname(node.func)
        if qual in ("torch.tensor", "torch.as_tensor", "torch.asarray"):
            self._check_constructor(node, qual)
            return
        attr = method_call(node, "to", "cuda", "new_tensor")
        if attr is None:
            return
        if attr.attr.value == "new_tensor":
            self._check_new_tensor(node, attr.value)
        elif isinstance(attr.value, cst.Call) and self.qualname(attr.value.func) in HOST_DATA_CONSTRUCTORS:
            self._check_chain(node, attr, attr.value)

    # ---- the three shapes -----------------------------------------------------------

    def _check_constructor(self, call: cst.Call, qual: str) -> None:
        """`torch.tensor(data, device=dev)`, `torch.as_tensor(data, dtype, dev)`."""
        positional = positional_args(call)
        device_arg = keyword_arg(call, "device")
        if device_arg is None and qual == "torch.as_tensor" and len(positional) == 3:
            device_arg = positional[2]
        if device_arg is None or not positional:
            return
        target = self.placement(device_arg)
        origin = self._data_origin(positional[0], qual)
        if not target.on_device or origin is None:
            return
        fix = None
        if len(positional) == 1 and keywords(call) <= MOVABLE_KEYWORDS:
            on_host = _without_keyword(call, "device")
            plan = FixPlan(
                data=positional[0],
                pinned=self._to_device(self._with_pin(self._as_torch_tensor(on_host)), device_arg),
                pageable=self._to_device(on_host, device_arg),
                aliases_data=qual in SHARING_CONSTRUCTORS,
                helper_args=(positional[0], device_arg, keyword_arg(call, "dtype")),
            )
            fix = self._fix(call, origin, plan)
        self._report(call, BUILT_ON_DEVICE, origin, self.where(call), fix)

    def _check_chain(self, call: cst.Call, attr: cst.Attribute, built: cst.Call) -> None:
        """`torch.tensor(data).to(dev)`, `torch.from_numpy(a).cuda()`."""
        built_device = keyword_arg(built, "device")
        if built_device is not None and not self.placement(built_device).on_host:
            return  # built on the GPU already: `_check_constructor` reports it
        built_positional = positional_args(built)
        origin = self._data_origin(built_positional[0], self.qualname(built.func) or "") if built_positional else None
        target = gpu_copy_target(self, call)
        if origin is None or target is None:
            return
        flag = keyword_arg(call, "non_blocking")
        pin = keyword_arg(built, "pin_memory")
        pinned = pin is not None and not is_literal_false(pin)
        fixable = len(built_positional) == 1 and keywords(built) <= {"dtype", "device", "pin_memory"}
        data = built_positional[0]
        pinned_chain = None
        if fixable:
            built_pinned = self._with_pin(self._as_torch_tensor(built))
            pinned_chain = with_keyword_value(
                call.with_changes(func=attr.with_changes(value=built_pinned)), "non_blocking", cst.Name("True")
            )
        if flag is None or is_literal_false(flag):
            fix = None
            if pinned_chain is not None and pinned:  # fixable, and pinned already: only the flag is missing
                fix = self._replacement(call, pinned_chain, Applicability.SAFE, "Add `non_blocking=True`")
            elif fixable:
                # The helper replaces `torch.tensor(data, dtype=D).to(dev)` when nothing else is said.
                device_arg = keyword_arg(call, "device") or next(iter(positional_args(call)), None)
                fits_helper = (
                    device_arg is not None
                    and attr.attr.value == "to"
                    and len(positional_args(call)) <= 1
                    and keywords(call) <= {"device", "non_blocking"}
                    and built_device is None
                    and pin is None
                )
                plan = FixPlan(
                    data=data,
                    pinned=pinned_chain,
                    pageable=with_keyword_value(call, "non_blocking", cst.Name("True")),
                    # `torch.tensor(a)` copies; `from_numpy(a)` and `as_tensor(a)` copy from `a`'s own memory.
                    aliases_data=self.qualname(built.func) != "torch.tensor",
                    helper_args=(data, device_arg, keyword_arg(built, "dtype")) if fits_helper else None,
                )
                fix = self._fix(call, origin, plan)
            self._report(call, COPIED_BLOCKING, origin, target, fix)
        elif isinstance(flag, cst.Name) and flag.value == "True" and not pinned:
            fix = None
            if fixable:  # only Python data can be pinned by `torch.tensor(..., pin_memory=...)`
                fix = self._fix(call, origin, FixPlan(data, pinned_chain, None, False, None))
            self._report(call, COPIED_PAGEABLE, origin.weaker(Certainty.LOW), target, fix)

    def _check_new_tensor(self, call: cst.Call, receiver: cst.BaseExpression) -> None:
        """`gpu_tensor.new_tensor(data)`: a new tensor on the receiver's device, with its dtype."""
        positional = positional_args(call)
        device_arg = keyword_arg(call, "device")
        target = self.placement(device_arg) if device_arg is not None else self.where(receiver)
        origin = self._data_origin(positional[0], "torch.tensor") if len(positional) == 1 else None
        if not target.on_device or origin is None:
            return
        fix = None
        dtype = keyword_arg(call, "dtype")
        named_once = dtype is not None and device_arg is not None
        if keywords(call) <= MOVABLE_KEYWORDS and (named_once or dotted_name(receiver) is not None):
            dtype = dtype or cst.Attribute(value=receiver, attr=cst.Name("dtype"))
            device_arg = device_arg or cst.Attribute(value=receiver, attr=cst.Name("device"))
            built = cst.Call(func=self._torch_tensor_func()[0], args=[cst.Arg(positional[0])])
            built = with_keyword_arg(built, "dtype", dtype)
            plan = FixPlan(
                data=positional[0],
                pinned=self._to_device(self._with_pin(built), device_arg),
                pageable=self._to_device(built, device_arg),
                aliases_data=False,
                helper_args=(positional[0], device_arg, dtype),
            )
            fix = self._fix(call, origin, plan)
        self._report(call, BUILT_ON_DEVICE, origin, target, fix)

    # ---- what the data is -----------------------------------------------------------

    def _data_origin(self, data: cst.BaseExpression, constructor: str) -> Where | None:
        """Where the data lives, with the finding's confidence cap; None when no host data crosses."""
        if isinstance(data, (cst.List, cst.Tuple)) and not data.elements:
            return None  # nothing to copy
        where = HOST if _is_python_list(data) else self.where(data)
        if constructor == "torch.from_numpy":
            return Where(Place.HOST, Certainty.HIGH, "torch.from_numpy() reads a numpy array")
        if where.is_none or where.on_device:
            return None
        if where.place is Place.HOST and constructor in SHARING_CONSTRUCTORS and self._is_local_object(data):
            # An object of the project's own class may expose GPU memory (`__cuda_array_interface__`).
            return Where(Place.UNKNOWN, Certainty.LOW, None)
        if where.place is Place.HOST:
            cap = Certainty.MEDIUM if _is_scalar(data) else Certainty.HIGH
            return Where(Place.HOST, cap, where.because)
        if where.place is Place.HOST_TENSOR:
            return where
        # Unknown type: torch.tensor is for Python data; as_tensor/asarray are often given tensors.
        cap = Certainty.LOW if constructor in SHARING_CONSTRUCTORS else Certainty.MEDIUM
        return Where(Place.UNKNOWN, cap, None)

    def _is_local_object(self, data: cst.BaseExpression) -> bool:
        """`SomeClass(...)` for a class defined in this module."""
        func = data.func if isinstance(data, cst.Call) else None
        return isinstance(func, cst.Name) and self.local_class(func.value) is not None

    def _report(self, call: cst.Call, message: str, origin: Where, target: Where, fix: Replacement | None) -> None:
        message = message.format(one_line(self.code_of(call)))
        because = "; ".join(part for part in (origin.because, target.because) if part)
        self.report_where(call, message, Where(Place.DEVICE, min(origin.certainty, target.certainty), because), fix)

    # ---- fixes ----------------------------------------------------------------------

    def _fix(self, call: cst.Call, origin: Where, plan: "FixPlan") -> Replacement | None:
        """The project's helper where it has one that takes this data, else the tensor built in
        pinned memory (Python data only: torch cannot pin a tensor made from numpy), else a
        non-blocking copy from pageable memory."""
        if origin.place is Place.HOST_TENSOR:
            return None  # torch.tensor(tensor) warns and cannot pin; the older helpers take lists only
        if self._reads_the_device(plan.data):
            return None  # the data's own read waits for the GPU where the copy did: no fix removes that wait
        if plan.helper_args is not None and _is_scalar(plan.data):
            return self._scalar_fix(call, *plan.helper_args)
        kind = self._data_kind(plan.data)
        helper = self._helper(kind) if plan.helper_args is not None else None
        if helper is not None and plan.helper_args is not None:
            return self._helper_fix(call, helper, *plan.helper_args)
        if kind is DataKind.PYTHON and plan.pinned is not None:
            return self._replacement(call, plan.pinned, Applicability.SAFE, PINNED_FIX)
        if plan.pageable is None:
            return None
        if plan.aliases_data and not (kind is DataKind.PYTHON or isinstance(plan.data, cst.Call)):
            data_text = one_line(self.code_of(plan.data), 40)
            unsafe = f"; unsafe: `{data_text}` may share memory with a pinned buffer that the host overwrites"
            return self._replacement(call, plan.pageable, Applicability.UNSAFE, PAGEABLE_FIX + unsafe)
        return self._replacement(call, plan.pageable, Applicability.SAFE, PAGEABLE_FIX)

    def _reads_the_device(self, data: cst.BaseExpression) -> bool:
        """Whether the data reads a GPU value on the host (`t.item()`, `float(t)`, `t.tolist()`)."""
        for node in find_all(data, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist") and not node.args:
                receiver = func.value
            elif isinstance(func, cst.Name) and func.value in NUMBER_BUILTINS and len(node.args) == 1:
                receiver = node.args[0].value
            else:
                continue
            if self.where(receiver).on_device:
                return True
        return False

    def _scalar_fix(self, call: cst.Call, data: cst.BaseExpression, device_arg, dtype) -> Replacement:
        """A Python number is filled in on the device by a kernel that takes it as an argument:
        `torch.zeros((), device=d)` for a zero, `torch.ones` for a one, `torch.full((), v, device=d)`
        for any other, with the dtype `torch.tensor` would give it (`full` infers the same)."""
        torch_name, imports = self._torch_module()
        literal = data.value if isinstance(data, (cst.Integer, cst.Float, cst.Name)) else None
        number = {"0": 0, "0.0": 0, "0.": 0, "False": 0, "1": 1, "1.0": 1, "1.": 1, "True": 1}.get(literal or "")
        args = [cst.Arg(cst.Tuple([]))]
        if number is None:
            factory = "full"
            args.append(cst.Arg(data))
        else:
            factory = "zeros" if number == 0 else "ones"
            if dtype is None and not isinstance(data, cst.Float):
                dtype = cst.parse_expression(f"{torch_name}.{'bool' if isinstance(data, cst.Name) else 'long'}")
        fixed = cst.Call(func=cst.parse_expression(f"{torch_name}.{factory}"), args=args)
        if dtype is not None:
            fixed = with_keyword_arg(fixed, "dtype", dtype)
        fixed = with_keyword_arg(fixed, "device", device_arg)
        code = one_line(self.code_of(fixed), 60)
        return Replacement(call, fixed, Applicability.SAFE, f"Fill the number in on the device: `{code}` copies nothing",
                           imports=imports)

    def _helper_fix(self, call, helper: tuple[str, list[str]], data, device_arg, dtype) -> Replacement:
        name, imports = helper
        if self.option("async-h2d-signature") == SIGNATURE_DATA_DTYPE_DEVICE_PIN:  # helper(data, dtype, device, pin)
            pin, pin_imports = self._pin_flag()
            args = [cst.Arg(data), cst.Arg(dtype or cst.Name("None")), cst.Arg(device_arg), cst.Arg(pin)]
            fixed = cst.Call(func=cst.Name(name), args=args)
            imports = [*imports, *pin_imports]
        else:  # helper(data, device, dtype=None)
            fixed = cst.Call(func=cst.Name(name), args=[cst.Arg(data), cst.Arg(device_arg)])
            if dtype is not None:
                fixed = with_keyword_arg(fixed, "dtype", dtype)
        message = f"Use `{name}` (pinned memory, non-blocking copy)"
        return Replacement(call, fixed, Applicability.SAFE, message, imports=imports)

    def _replacement(self, call: cst.Call, fixed: cst.Call, applicability: Applicability, message: str) -> Replacement:
        torch_name, imports = self._torch_module()
        needed = imports if f"{torch_name}." in self.code_of(fixed) else []  # `from torch import as_tensor` alone
        return Replacement(call, fixed, applicability, message, imports=needed)

    def _data_kind(self, data: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> "DataKind":
        """Whether the data is Python data (lists, tuples, numbers), a numpy array, or unknown."""
        if _is_python_list(data) or _is_scalar(data):
            return DataKind.PYTHON
        if isinstance(data, cst.Call):
            qual = self.qualname(data.func) or ""
            if isinstance(data.func, cst.Name) and data.func.value in PYTHON_SEQUENCE_BUILTINS:
                return DataKind.PYTHON
            return DataKind.NUMPY if qual.startswith("numpy.") else DataKind.UNKNOWN
        if not isinstance(data, cst.Name) or data.value in seen:
            return DataKind.UNKNOWN
        scope = self.scope
        param = parameter(scope, data.value) if isinstance(scope, cst.FunctionDef) else None
        if param is not None:
            return self._annotated_kind(param.annotation.annotation) if param.annotation else DataKind.UNKNOWN
        values = self.assignments(scope).get(data.value) or [None]
        kinds = {self._data_kind(v, seen | {data.value}) if v is not None else DataKind.UNKNOWN for v in values}
        return kinds.pop() if len(kinds) == 1 else DataKind.UNKNOWN

    def _annotated_kind(self, annotation: cst.BaseExpression) -> "DataKind":
        if isinstance(annotation, cst.BinaryOperation):  # X | None
            kinds = {self._annotated_kind(side) for side in (annotation.left, annotation.right)}
            kinds.discard(DataKind.NONE)
            return kinds.pop() if len(kinds) == 1 else DataKind.UNKNOWN
        head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
        qual = self.qualname(head) or dotted_name(head) or ""
        last = qual.rsplit(".", 1)[-1]
        if last == "None":
            return DataKind.NONE
        if last in PYTHON_DATA_ANNOTATIONS:
            return DataKind.PYTHON
        return DataKind.NUMPY if qual.startswith("numpy.") or last in ("ndarray", "NDArray") else DataKind.UNKNOWN

    def _as_torch_tensor(self, built: cst.Call) -> cst.Call:
        """`torch.as_tensor(data, ...)` and the like as `torch.tensor(data, ...)`, which can pin."""
        return built.with_changes(func=self._torch_tensor_func(built.func)[0])

    def _with_pin(self, built: cst.Call) -> cst.Call:
        pin, _ = self._pin_flag()
        existing = keyword_arg(built, "pin_memory")
        if existing is not None and not is_literal_false(existing):
            return built
        return with_keyword_value(built, "pin_memory", pin)

    def _to_device(self, built: cst.Call, device_arg: cst.BaseExpression) -> cst.Call:
        moved = cst.Call(func=cst.Attribute(value=built, attr=cst.Name("to")), args=[cst.Arg(device_arg)])
        return with_keyword_arg(moved, "non_blocking", cst.Name("True"))

    def _torch_module(self) -> tuple[str, list[str]]:
        """The name this module imports torch as, and the import to add when it does not."""
        for local, qual in self.import_aliases().items():
            if qual == "torch":
                return local, []
        return "torch", ["import torch"]

    def _torch_tensor_func(self, func: cst.BaseExpression | None = None) -> tuple[cst.BaseExpression, list[str]]:
        """`torch.tensor` spelled as the module spells torch (reusing `func`'s `torch.` when it has one)."""
        if isinstance(func, cst.Attribute) and self.qualname(func.value) == "torch":
            return func.with_changes(attr=cst.Name("tensor")), []
        name, imports = self._torch_module()
        return cst.Attribute(value=cst.Name(name), attr=cst.Name("tensor")), imports

    def _pin_flag(self) -> tuple[cst.BaseExpression, list[str]]:
        """`torch.cuda.is_available()`: pin only where CUDA is, so a CPU-only machine still runs."""
        name, imports = self._torch_module()
        return cst.parse_expression(f"{name}.cuda.is_available()"), imports

    def _helper(self, kind: DataKind) -> tuple[str, list[str]] | None:
        """The async host-to-device helper to call (its local name, imports to add), if the project
        has one that takes this kind of data: the newer signature takes numpy arrays too, the older
        pins with `torch.tensor`, which cannot pin a numpy array."""
        signature = self.option("async-h2d-signature")
        takes = {SIGNATURE_DATA_DEVICE_DTYPE: (DataKind.PYTHON, DataKind.NUMPY), SIGNATURE_DATA_DTYPE_DEVICE_PIN: (
            DataKind.PYTHON,)}.get(signature, ())
        if kind not in takes:
            return None
        configured = self.option("async-h2d-helper")
        module, _, name = configured.partition(":")
        name = name or HELPER_NAME
        if configured and not (module and name.isidentifier()):
            return None
        enclosing = {func.name.value for func in self.functions_around()}
        if name in enclosing:
            return None  # inside the helper itself
        for local, (source, imported) in _module_imports(self.module).items():
            if imported == name and (not configured or source == module):
                return local, []
        if self.local_function(name) is not None:
            return name, []
        return (name, [f"from {module} import {name}"]) if configured else None



def _module_imports(module: cst.Module) -> dict[str, tuple[str, str]]:
    """Names imported by `from X import name [as local]` at the top of the module (relative ones too):
    local name -> (X, name)."""
    found: dict[str, tuple[str, str]] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
                continue
            source = "." * len(small.relative) + ((dotted_name(small.module) or "") if small.module else "")
            for alias in small.names:
                name = dotted_name(alias.name) or ""
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                found[local] = (source, name)
    return found


class DataKind(enum.Enum):
    PYTHON = "python"
    NUMPY = "numpy"
    NONE = "none"
    UNKNOWN = "unknown"


@dataclass
class FixPlan:
    """The rewrites a finding can offer; `_fix` picks the one that fits the data."""

    data: cst.BaseExpression
    pinned: cst.Call | None  # built in pinned memory and copied non-blocking (Python data only)
    pageable: cst.Call | None  # copied non-blocking from pageable memory
    aliases_data: bool  # the pageable copy reads the data's own memory (`from_numpy(a)`, `as_tensor(a)`)
    helper_args: tuple | None  # (data, device, dtype) when the call says no more than the helper takes


def _without_keyword(call: cst.Call, name: str) -> cst.Call:
    """`call` without its `name=` argument; a dropped last argument hands over its closing layout."""
    args = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == name)]
    if args and args[-1] is not call.args[-1]:
        last = call.args[-1]
        args[-1] = args[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    return call.with_changes(args=args)








def _is_python_list(expr: cst.BaseExpression) -> bool:
    """A list or tuple display or comprehension, or one repeated or concatenated (`[0] * n`)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Add)):
        return _is_python_list(expr.left) or _is_python_list(expr.right)
    return isinstance(expr, (cst.List, cst.Tuple, cst.ListComp))


def _is_scalar(expr: cst.BaseExpression) -> bool:
    """A Python number: a literal, a negated literal, True/False, or int()/float()/bool() of something."""
    if isinstance(expr, cst.UnaryOperation):
        return _is_scalar(expr.expression)
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in NUMBER_BUILTINS
