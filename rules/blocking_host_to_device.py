"""SYNC102 blocking-host-to-device."""

from __future__ import annotations

import libcst as cst

from synclint.devices.lattice import Place, Where
from synclint.devices.torch_api import HOST_DATA_CONSTRUCTORS
from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import gpu_copy_target, one_line, with_keyword_arg, with_keyword_value
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import dotted_name, is_literal_false, keyword_arg, keywords, method_call, parameter, positional_args
from synclint.traversal import walk

# Tensor methods whose result may share memory with the tensor they are called on (views,
# no-op conversions, in-place ops return their receiver too): a copy from such a result
# reads the receiver's buffer.
ALIASING_METHODS = frozenset(
    "view view_as reshape reshape_as contiguous flatten unflatten squeeze unsqueeze permute transpose t "
    "narrow select expand expand_as as_strided detach unfold movedim moveaxis swapaxes swapdims "
    "to type type_as cpu cuda float half double bfloat16 int long short bool byte char pin_memory "
    "split chunk unbind tensor_split".split()
)
# torch functions that return a view of (or the very memory of) their argument.
ALIASING_FUNCTIONS = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.frombuffer"})
PAGEABLE_WAIT = "pageable copies of 4 MB and more still wait"
# Factories whose values do not depend on the device they are made on: `factory(..., device=d)`
# makes on the device what `factory(...).to(d)` makes on the host and copies (random ones draw
# from another generator; `linspace` and a fractional `arange` round differently on the GPU).
DEVICE_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.eye", "torch.arange"})
# A variable's value that refers back to the variable itself (`x = x.view(-1)`): no origin of its own.
SAME_ORIGIN = ("same", "")


class BlockingHostToDevice(Rule):
    code = "SYNC102"
    name = "blocking-host-to-device"
    summary = "A host tensor is copied to the GPU without non_blocking=True, so the host waits for the GPU"
    prefilter = (".to(", ".cuda(", ".copy_(", ".type_as(")
    docs = """
    ## What it does
    Flags copies of host tensors to the GPU that make the host wait: `x.to(device)`,
    `x.cuda()` and `gpu_dst.copy_(x)` without `non_blocking=True` (or with
    `non_blocking=False`), where `x` is a host tensor (a `torch.arange(n)` built without
    `device=`, a `torch.from_numpy(a)`, a `*_cpu` buffer), and `x.type_as(gpu)`, which copies
    `x` to the other tensor's device (no fix: it takes no `non_blocking`). At medium confidence, it also flags
    moving a tensor of unknown device to the GPU: a parameter annotated `torch.Tensor` (Gemma4's
    `is_multimodal`), or the result of a function of the same module known only by its
    `-> torch.Tensor`. At low confidence: an argument of `forward` (an activation, usually on
    the GPU already), such a move that also sets the dtype (usually normalizing an input), a
    value of unknown type, and a `non_blocking=True` copy whose source is a fresh tensor in
    pageable (unpinned) memory: it still waits once the copy reaches 4 MB.

    Not flagged: device-to-host copies (`.cpu()`, `.to("cpu")`: SYNC107 and SYNC111 look at
    those), dtype-only conversions (`.to(torch.float16)`), `x.to(x.device)`, moves of tensors
    this code put on the device (`torch.full(..., device=d)`, an `nn.Parameter`, a `*_gpu`
    name), copies between tensors of unknown device, and `torch.tensor(data).to(device)`
    chains, which SYNC103 reports.

    ## Why is this bad?
    A blocking host-to-device copy is ordered after every kernel already queued on the
    stream, and the host does not return until it is done: the host stops feeding the GPU
    until the queue drains (measured on an H100 with 20 ms of work queued: `pageable.to(cuda)`
    and `pinned.to(cuda)` return after 20 ms; with `non_blocking=True`, after 0.15 ms). From
    pageable memory, `non_blocking=True` returned at once up to 2 MB but waited from 4 MB on;
    from pinned memory it never waited (64 MB: 0.18 ms).

    ## Example
    ```python
    if is_multimodal is not None:
        is_multimodal = is_multimodal.to(input_ids.device)
        ple_input_ids = torch.where(is_multimodal, torch.zeros_like(input_ids), input_ids)
    ```

    ## Use instead
    Copy with `non_blocking=True`, from pinned memory for large tensors (vLLM PR #39234 did
    this for Gemma4's `embed_input_ids`, PR #42347 for the multimodal encoders):
    ```python
    if is_multimodal is not None:
        ple_input_ids = torch.where(
            is_multimodal.to(input_ids.device, non_blocking=True),
            torch.zeros_like(input_ids),
            input_ids,
        )
    ```

    ## Fix safety
    The fix adds `non_blocking=True` (or turns `non_blocking=False` into `True`). It is safe
    when the source is a fresh host tensor made in the same function (a call's result, or a
    local variable assigned only such values, not pinned): PyTorch stages pageable memory
    before the call returns, and nothing else holds a pinned temporary, so the copied values
    are the same. It is unsafe when the source may be a pinned buffer that the host
    overwrites before the asynchronous copy lands (a `self.x` attribute, a `.cpu` / `*_cpu`
    buffer, a parameter), and when the source is not proven to be on the host (were it a GPU
    tensor sent to a CPU device, the copy would become an unwaited device-to-host copy).
    Unless the source is known to be pinned, the fix message says that the copy stops
    waiting only from pinned memory (pageable copies of 4 MB and more still wait).
    A factory whose values do not depend on the device (`zeros`, `ones`, `full`, `empty`,
    `eye`, an `arange` without a step), moved by a call that names only the device, is made
    on the device instead, which copies nothing: `torch.ones(n, dtype=torch.bool).to(dev)`
    becomes `torch.ones(n, dtype=torch.bool, device=dev)` and `torch.arange(n).cuda()`
    `torch.arange(n, device="cuda")` (safe: the same values, dtype and device).
    """

    VALID = [
        # Device to host: never flagged, never given non_blocking.
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu')\nz = x.cpu()\n"),
        # A dtype-only conversion copies nothing between devices.
        Valid("import torch\nx = torch.ones(4)\ny = x.to(torch.float16)\nz = x.to(dtype=torch.bfloat16)\n"),
        # Already on the device: `.to(x.device)` is no copy.
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = torch.ones(4, device='cuda')\nz = x.to(y.device)\n"),
        # Non-blocking from a pinned or long-lived buffer: nothing waits.
        Valid("import torch\nbuf = torch.zeros(8, pin_memory=True)\nd = buf.to('cuda', non_blocking=True)\n"),
        Valid(
            "import torch\n\ndef stage(dst_gpu: torch.Tensor, src_cpu: torch.Tensor, n: int):\n"
            "    dst_gpu[:n].copy_(src_cpu[:n], non_blocking=True)\n"
        ),
        # SYNC103's chain: a tensor built from Python data and moved.
        Valid("import torch\n\ndef f(ids: list[int], dev):\n    return torch.tensor(ids).to(dev)\n"),
        # A GPU tensor's name says where it is.
        Valid("import torch\n\ndef f(x_gpu: torch.Tensor, device):\n    return x_gpu.to(device)\n"),
        # An unknown non_blocking flag may be True.
        Valid("import torch\nx = torch.ones(4)\ny = x.to('cuda', non_blocking=flag)\n"),
        # A copy between GPU tensors.
        Valid("import torch\na = torch.ones(4, device='cuda')\nb = torch.ones(4, device='cuda')\nb.copy_(a)\n"),
    ]
    INVALID = [
        # Gemma4's `embed_input_ids` (vLLM PR #39234): a tensor of unknown device, moved.
        Invalid(
            "import torch\n\ndef embed(input_ids: torch.Tensor, is_multimodal: torch.Tensor):\n"
            "    mask = is_multimodal.to(input_ids.device)\n"
            "    return torch.where(mask, torch.zeros_like(input_ids), input_ids)\n",
            expected_fix="import torch\n\ndef embed(input_ids: torch.Tensor, is_multimodal: torch.Tensor):\n"
            "    mask = is_multimodal.to(input_ids.device, non_blocking=True)\n"
            "    return torch.where(mask, torch.zeros_like(input_ids), input_ids)\n",
            confidence=Confidence.MEDIUM,
        ),
        # A fresh host tensor: proven, and the fix is safe.
        Invalid(
            "import torch\n\ndef positions(n: int, device: torch.device):\n"
            "    pos = torch.arange(n).view(-1, 1).expand(-1, 4)\n"
            "    return pos.to(device)\n",
            expected_fix="import torch\n\ndef positions(n: int, device: torch.device):\n"
            "    pos = torch.arange(n).view(-1, 1).expand(-1, 4)\n"
            "    return pos.to(device, non_blocking=True)\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\nlens = torch.randint(1, 9, (8,))\nlens = lens.cuda()\n",
            expected_fix="import torch\nlens = torch.randint(1, 9, (8,))\nlens = lens.cuda(non_blocking=True)\n",
        ),
        # Into a persistent GPU buffer from a host staging buffer.
        Invalid(
            "import torch\n\nclass Model(torch.nn.Module):\n    def stage(self, dst_gpu: torch.Tensor, src_cpu: torch.Tensor, n: int):\n"
            "        dst_gpu[:n].copy_(src_cpu[:n])\n",
            expected_fix="import torch\n\nclass Model(torch.nn.Module):\n    def stage(self, dst_gpu: torch.Tensor, src_cpu: torch.Tensor, n: int):\n"
            "        dst_gpu[:n].copy_(src_cpu[:n], non_blocking=True)\n",
        ),
        # An explicit non_blocking=False is the same wait.
        Invalid(
            "import torch\nmask = torch.ones(8, dtype=torch.bool)\nm = mask.to(device='cuda', non_blocking=False)\n",
            expected_fix="import torch\nmask = torch.ones(8, dtype=torch.bool)\n"
            "m = mask.to(device='cuda', non_blocking=True)\n",
        ),
        # Non-blocking, but from fresh pageable memory: waits from 4 MB on (low confidence).
        Invalid(
            "import torch\n\ndef f(n: int):\n    idx = torch.arange(n)\n    return idx.to('cuda', non_blocking=True)\n",
            config={"min-confidence": "low"},
            confidence=Confidence.LOW,
        ),
        # `x.type_as(gpu)` moves a host tensor to the other's device: blocking, and it takes no `non_blocking`.
        Invalid(
            "import torch\n\ndef orthogonality(k: int):\n    ss = torch.rand(k, k, device='cuda')\n"
            "    return ss - torch.eye(k).type_as(ss)\n",
            confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        attr = method_call(node, "to", "cuda", "copy_", "type_as")
        if attr is None or any(arg.star for arg in node.args):
            return
        if attr.attr.value == "copy_":
            self._check_copy_into(node, attr.value)
        elif attr.attr.value == "type_as":
            self._check_type_as(node, attr.value)
        else:
            self._check_move(node, attr)

    # ---- the two shapes of a host-to-device copy ------------------------------------

    def _check_move(self, call: cst.Call, attr: cst.Attribute) -> None:
        """`src.to(device)` and `src.cuda()`."""
        source = attr.value
        if isinstance(source, cst.Call) and self.qualname(source.func) in HOST_DATA_CONSTRUCTORS:
            return
        target = gpu_copy_target(self, call)
        if target is None:
            return
        first = keyword_arg(call, "device") or next((arg.value for arg in call.args if arg.keyword is None), None)
        if first is not None and self._is_own_device(source, first):
            return  # x.to(x.device): no copy
        self._check_copy(call, source, target)

    def _check_copy_into(self, call: cst.Call, destination: cst.BaseExpression) -> None:
        """`gpu_dst.copy_(src)`."""
        positional = [arg.value for arg in call.args if arg.keyword is None]
        if len(positional) != 1:
            return  # copy_(src, non_blocking) positionally, or an unusual call
        target = self.where(destination)
        if self._named_for(destination, host=True):
            return  # `x_cpu.copy_(...)`: the name says where it is, whatever it was assigned from
        source = positional[0]
        origin = self.where(source)
        # Copies between tensors are common (CUDA graph input buffers): only a source proven to be
        # on the host counts, or, at low confidence, a value of unknown type copied into a proven GPU tensor.
        if target.on_device and (
            origin.place is Place.HOST_TENSOR
            or (origin.place is Place.UNKNOWN and target.certainty >= Certainty.HIGH)
        ):
            self._check_copy(call, source, target)

    def _check_type_as(self, call: cst.Call, source: cst.BaseExpression) -> None:
        """`host.type_as(gpu)`: the host tensor is copied to the other tensor's device, and the copy
        blocks (measured on an H200: `torch.eye(64).type_as(gpu)` returned after the queued work)."""
        if len(call.args) != 1 or call.args[0].keyword is not None:
            return
        origin, target = self.where(source), self.where(call.args[0].value)
        if origin.place is not Place.HOST_TENSOR or not target.on_device:
            return
        other = one_line(self.code_of(call.args[0].value), 40)
        because = "; ".join(part for part in (origin.because, target.because) if part)
        self.report_where(
            call.func.attr if isinstance(call.func, cst.Attribute) else call,
            f"`{one_line(self.code_of(call))}` copies a host tensor to the GPU of `{other}`, a blocking copy; "
            f"make it there (`device={other}.device, dtype={other}.dtype`)",
            Where(Place.DEVICE, min(origin.certainty, target.certainty), because),
        )

    def _check_copy(self, call: cst.Call, source: cst.BaseExpression, target: Where) -> None:
        flag = keyword_arg(call, "non_blocking")
        if flag is None or is_literal_false(flag):
            self._report_blocking(call, source, target)
        elif isinstance(flag, cst.Name) and flag.value == "True" and self._is_fresh_pageable(source):
            text = one_line(self.code_of(call))
            self.report(
                call,
                f"`{text}` copies from pageable host memory, which still waits for the GPU once the copy "
                "reaches 4 MB; pinning the source (`pin_memory=True`) is what makes the copy asynchronous",
                certainty=Certainty.LOW,
                because=f"{one_line(self.code_of(source))} is a fresh host tensor that is not pinned",
            )

    def _report_blocking(self, call: cst.Call, source: cst.BaseExpression, target: Where) -> None:
        origin = self.where(source)
        text = one_line(self.code_of(call))
        source_text = one_line(self.code_of(source), 40)
        certainty: Certainty | None  # (None: not a copy to report)
        if origin.place is Place.HOST_TENSOR:
            certainty = origin.certainty
            message = f"`{text}` copies a host tensor to the GPU without `non_blocking=True`;"
        else:
            certainty = self._unknown_device_confidence(call, source, origin)
            if certainty is None:
                return
            message = f"`{text}` copies `{source_text}` to the GPU without `non_blocking=True`; if it is on the host,"
        message += " the host waits for the GPU queue to drain"
        because = "; ".join(part for part in (origin.because, target.because) if part)
        where = Where(Place.DEVICE, min(certainty, target.certainty), because)
        # Reported at the method's name: in a chain over several lines, that is the line that copies.
        method = call.func.attr if isinstance(call.func, cst.Attribute) else call
        self.report_where(method, message, where, fix=self._fix(call, source, origin))

    # ---- the fix --------------------------------------------------------------------

    def _fix(self, call: cst.Call, source: cst.BaseExpression, origin: Where) -> Replacement:
        built = self._built_on_the_device(call, source)
        if built is not None:
            code = one_line(self.code_of(built), 60)
            return Replacement(call, built, Applicability.SAFE, f"Make it on the device: `{code}` copies nothing")
        fixed = with_keyword_value(call, "non_blocking", cst.Name("True"))
        source_text = one_line(self.code_of(source), 40)
        message = "Add `non_blocking=True`"
        if not self._is_pinned(source):
            message += f"; the copy stops waiting only if `{source_text}` is in pinned memory ({PAGEABLE_WAIT})"
        if origin.place is not Place.HOST_TENSOR:
            applicability = Applicability.UNSAFE
            message += (
                f"; unsafe: `{source_text}` is not proven to be on the host, and a GPU tensor sent to a CPU device "
                "would no longer be waited for"
            )
        elif not self._is_fresh(source):
            applicability = Applicability.UNSAFE
            message += (
                f"; unsafe: `{source_text}` may be a pinned buffer that the host overwrites before the copy lands"
            )
        else:
            applicability = Applicability.SAFE
        return Replacement(call, fixed, applicability, message)

    def _built_on_the_device(self, call: cst.Call, source: cst.BaseExpression) -> cst.Call | None:
        """`torch.ones(n).to(dev)` as `torch.ones(n, device=dev)`, `torch.arange(n).cuda()` as
        `torch.arange(n, device="cuda")`: the lightest rewrite, for a factory whose values do not
        depend on the device, moved by a call that names the device and nothing else."""
        if not isinstance(source, cst.Call) or self.qualname(source.func) not in DEVICE_FACTORIES:
            return None
        if any(arg.star for arg in source.args) or keywords(source) - {"dtype", "requires_grad", "layout"}:
            return None  # device=, pin_memory=, out=: not a plain host factory
        if self.qualname(source.func) == "torch.arange" and len(positional_args(source)) > 2:
            return None  # a step: a fractional one rounds differently on the GPU
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
        if method == "cuda":
            if call.args:
                return None
            device: cst.BaseExpression = cst.SimpleString('"cuda"')
        elif len(call.args) == 1 and (call.args[0].keyword is None or call.args[0].keyword.value == "device"):
            device = call.args[0].value
            if not _names_a_device(device):
                return None  # `.to(other)` also takes `other`'s dtype
        else:
            return None
        return with_keyword_arg(source, "device", device)

    # ---- where the source comes from ------------------------------------------------

    def _is_fresh(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is a tensor that nothing else holds: a call's new result, or a local
        variable assigned only such values and never pinned (a pinned local may be a reused
        staging buffer)."""
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)):
            return True
        if isinstance(expr, cst.Subscript):
            return self._is_fresh(expr.value, seen)
        if isinstance(expr, cst.Call):
            func = expr.func
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            if isinstance(func, cst.Attribute) and method is not None and (method in ALIASING_METHODS or method.endswith("_")):
                return self._is_fresh(func.value, seen)  # a view or an in-place result: its receiver's memory
            if self.qualname(func) in ALIASING_FUNCTIONS:
                return bool(expr.args) and self._is_fresh(expr.args[0].value, seen)
            return True
        if isinstance(expr, cst.Name):
            values = self._assigned_values(expr.value)
            if expr.value in seen or values is None:
                return False
            return all(
                value is not None and not self._is_pinned(value) and self._is_fresh(value, seen | {expr.value})
                for value in values
            )
        return False

    def _is_fresh_pageable(self, expr: cst.BaseExpression) -> bool:
        """A fresh host tensor that is provably not pinned (a factory call without `pin_memory`)."""
        return self.where(expr).place is Place.HOST_TENSOR and self._is_fresh(expr) and not self._is_pinned(expr)

    def _is_pinned(self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> bool:
        """Whether `expr` is known to be in pinned memory (`pin_memory=True`, `.pin_memory()`)."""
        if isinstance(expr, cst.Subscript):
            return self._is_pinned(expr.value, seen)
        if isinstance(expr, cst.Call):
            pin = keyword_arg(expr, "pin_memory")
            if pin is not None:
                return not is_literal_false(pin)
            return method_call(expr, "pin_memory") is not None
        if isinstance(expr, cst.Name) and expr.value not in seen:
            values = self._assigned_values(expr.value) or []
            return bool(values) and all(
                value is not None and self._is_pinned(value, seen | {expr.value}) for value in values
            )
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.class_of(self.function)
            assigned = self.attribute_assignments(cls).get(expr.attr.value, []) if cls is not None else []
            return bool(assigned) and all(self._is_pinned(value, seen) for value in assigned)
        return False

    def _assigned_values(self, name: str) -> list[cst.BaseExpression | None] | None:
        """The values assigned to a name of the current function (or module body); None for a
        parameter or a name assigned nowhere in it."""
        scope = self.scope
        if isinstance(scope, cst.FunctionDef) and parameter(scope, name) is not None:
            return None
        return self._assignments_in(scope).get(name)

    def _assignments_in(self, scope: cst.Module | cst.FunctionDef) -> dict[str, list[cst.BaseExpression | None]]:
        return self.assignments(scope)

    def _unknown_device_confidence(
        self, call: cst.Call, source: cst.BaseExpression, origin: Where
    ) -> Certainty | None:
        """How likely a copy of a value that is not proven to be on the host is a host-to-device copy.

        Medium: a tensor of unknown device that the code chose to move to the GPU: a parameter
        annotated `torch.Tensor` (Gemma4's `is_multimodal`), the result of a function of this
        module known only by its `-> torch.Tensor`, or a value computed from one. Low: an
        activation passed to `forward` (usually on the GPU already), a call that also sets the
        dtype (mostly normalizing an input that may already be on the device), or a value of
        unknown type or of a type the model could not see into.
        None: a tensor placed on the device by this code (a factory with `device=`, an
        `nn.Parameter`, a result of `.to(device)`), or whose name says it is on the device.
        """
        if not origin.on_device:
            # Unknown, or a "host value" that has `.to`: not numpy or a list, so a tensor or an object
            # the model could not see into (a tuple's element, a module).
            return Certainty.LOW
        if origin.certainty >= Certainty.HIGH or self._named_for(source, host=False):
            return None
        func = self.function
        tensor_origin = self._unknown_tensor_origin(source)
        if func is None or tensor_origin is None:
            return None
        if keyword_arg(call, "dtype") is not None or (len(call.args) > 1 and call.args[1].keyword is None):
            return Certainty.LOW
        kind, name = tensor_origin
        if kind == "result":
            return Certainty.MEDIUM
        if name in self.device_params(func):
            return None  # a caller passes a GPU tensor here: moving it is no copy
        initial = self.where_on_entry(func, name)
        if initial is None:
            initial = origin  # nothing known on entry; the code shows a tensor (`isinstance(x, torch.Tensor)`)
        if initial is None or not initial.on_device or initial.certainty >= Certainty.HIGH:
            return None
        return Certainty.LOW if func.name.value == "forward" else Certainty.MEDIUM

    def _unknown_tensor_origin(
        self, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()
    ) -> tuple[str, str] | None:
        """Where `expr` comes from, through indexing, tensor methods, arithmetic and local
        variables, when that is one thing: ("parameter", name) for a parameter of the current
        function, ("result", name) for a call of a function of this module whose result is
        known only by its annotation."""
        func = self.function
        while True:
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, cst.BinaryOperation):
                expr = expr.left
            elif isinstance(expr, cst.UnaryOperation):
                expr = expr.expression
            elif isinstance(expr, cst.Call):
                helper = self.resolve(expr.func)
                if helper is not None:
                    return ("result", helper.name.value) if self._known_by_annotation(helper) else None
                if not isinstance(expr.func, cst.Attribute):
                    return None
                expr = expr.func.value
            else:
                break
        if not isinstance(expr, cst.Name) or func is None:
            return None
        name = expr.value
        is_parameter = parameter(func, name) is not None
        if name in seen:
            return ("parameter", name) if is_parameter else SAME_ORIGIN
        # Every value the name can hold must come from the same origin (`x = x.view(...)` keeps it).
        values = self._assignments_in(func).get(name, [])
        origins: set[tuple[str, str] | None] = {("parameter", name)} if is_parameter else set()
        origins |= {self._unknown_tensor_origin(v, seen | {name}) if v is not None else None for v in values}
        origins.discard(SAME_ORIGIN)
        return origins.pop() if len(origins) == 1 else None

    def _known_by_annotation(self, helper: cst.FunctionDef) -> bool:
        """Whether all the model knows of a local function's result is its `-> torch.Tensor`,
        and the function puts nothing on a device itself (no `device=`, `.to(...)`, `.cuda()`)."""
        returned = self.returns_of(helper)
        bodies = self.returned_values(helper)
        return (
            returned.on_device
            and returned.certainty < Certainty.HIGH
            and all(where.place is Place.UNKNOWN for where in bodies)
            and not _places_on_a_device(helper)
        )

    def _is_own_device(self, source: cst.BaseExpression, device_arg: cst.BaseExpression) -> bool:
        """Whether `device_arg` is `source.device`, directly or through a local variable."""
        own = self.code_of(source) + ".device"
        if isinstance(device_arg, cst.Name):
            values = self._assigned_values(device_arg.value) or [None]
            return all(value is not None and self.code_of(value) == own for value in values)
        return self.code_of(device_arg) == own

    def _named_for(self, expr: cst.BaseExpression, host: bool) -> bool:
        """Whether the value's own name says it is on the host (`x_cpu`, `buf.cpu`) or on the
        device (`x_gpu`, `buf.gpu`)."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Attribute):
            name = expr.attr.value
        elif isinstance(expr, cst.Name):
            name = expr.value
        else:
            return False
        by_name = self.classify_name(name)
        if host:
            return name == "cpu" or (by_name is not None and by_name.on_host)
        return name == "gpu" or (by_name is not None and by_name.on_device)



def _names_a_device(expr: cst.BaseExpression) -> bool:
    """A string, `torch.device(...)`, or a name that says it is a device (`device`, `x.device`, `dev`)."""
    if isinstance(expr, cst.SimpleString):
        return True
    if isinstance(expr, cst.Call):
        return dotted_name(expr.func) in ("torch.device", "device")
    name = dotted_name(expr) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return last.endswith("device") or last in ("dev", "gpu", "cuda")


def _places_on_a_device(func: cst.FunctionDef) -> bool:
    """Whether `func` builds or moves tensors onto some device (`device=`, `.to(...)`, `.cuda()`)."""

    class Finder(cst.CSTVisitor):
        found = False

        def visit_Call(self, node: cst.Call) -> None:
            if keyword_arg(node, "device") is not None or method_call(node, "to", "cuda") is not None:
                self.found = True

    finder = Finder()
    walk(func, finder)
    return finder.found

