"""SYNC111 unsynchronized-device-to-host."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from synclint.devices.lattice import Place, Where, is_host_guess
from synclint.model import Confidence
from synclint.evidence import Certainty
from synclint.patterns import one_line
from synclint.rule import Invalid, Rule, Valid
from synclint.syntax import dotted_name, is_literal_true, keyword_arg, method_call

# Tensor (and numpy) methods that compute on the host from the tensor's memory.
READ_METHODS = frozenset(
    "tolist item clone sum max min mean argmax argmin any all nonzero cumsum sort unique eq ne gt lt ge le "
    "float int long double half bool tobytes copy".split()
)
# Builtins that read their argument's values (`list(y)`, `zip(y, ...)` only take views of its rows).
READ_BUILTINS = frozenset("int float bool complex sorted sum max min any all print repr str format".split())
# Methods (and attributes) whose result shares the tensor's memory: reading it reads the copy's target.
VIEW_METHODS = frozenset("numpy view view_as reshape flatten squeeze unsqueeze narrow select t contiguous detach copy_".split())
VIEW_ATTRIBUTES = frozenset("T mT data".split())
# Calls after which an earlier copy has landed: explicit waits, and a project's sync helpers.
WAIT_METHODS = frozenset({"synchronize", "wait", "query"})
SYNC_HELPER = re.compile(r"(^|_)sync")
# Blocking reads of a device tensor: they drain the stream, so an earlier copy on it has landed.
BLOCKING_READS = frozenset({"item", "tolist", "cpu"})


@dataclass
class PendingCopy:
    """A non-blocking device-to-host copy that the host has not waited for yet."""

    names: set[str]  # dotted names that see the copy's host memory: the target and its views
    copy_code: str
    where: Where  # the copy's source on the device, capped by how sure the target is host memory


class UnsynchronizedDeviceToHost(Rule):
    code = "SYNC111"
    name = "unsynchronized-device-to-host"
    summary = "A non-blocking device-to-host copy is read on the host before anything waits for it"
    prefilter = ("non_blocking",)
    syncs = False  # the copy does not wait: that is the bug this rule finds
    docs = """
    ## What it does
    Flags the host reading the result of a non-blocking device-to-host copy,
    `y = x.to("cpu", non_blocking=True)` or `host.copy_(x, non_blocking=True)` with `x` on the
    GPU, later in the same function with nothing in between that waits for the copy. A read
    is `y.tolist()`, `y.item()`, `y.sum()` and other host computations, `int(y[i])`,
    `print(y)`, a comprehension over `y`, reading a row taken by `for row in y`, `y + 1`, `y == 0`, testing `y[i]` in an `if`, an f-string,
    and the same on views of `y` (`y[:n]`, `y.numpy()`, `a = y.numpy(); a[0]`; for vLLM's
    `CpuGpuBuffer`, `buf.np` after a copy into `buf.cpu`). What waits: `event.synchronize()`,
    `stream.synchronize()`, `torch.cuda.synchronize()`, `.wait()`, `.query()`, a call to a
    `*sync*` helper, and a blocking read of a GPU tensor (`.item()`, `.tolist()`, `.cpu()`,
    `.to("cpu")`, `int(t)`), which drains the stream. The finding is on the read; the message names the copy.

    Not flagged: blocking copies; copies whose result is returned, stored or passed on (the
    reader decides when to wait; vLLM records an event and synchronizes it a step later);
    reads in another function; host-to-host and host-to-device copies.

    ## Why is this bad?
    This is a correctness bug, not a slowdown. A non-blocking copy to the host returns at once
    (measured: `x.to('cpu', non_blocking=True)` returned after 159 us with 20 ms of GPU work
    queued) and the data lands only when the GPU reaches the copy. Reading the buffer before
    then gives stale or partly written values, silently, and only under load.

    ## Example
    ```python
    sampled_cpu = sampled_token_ids.to("cpu", non_blocking=True)
    return sampled_cpu.tolist()
    ```

    ## Use instead
    Record an event after the copy and synchronize it just before the read, ideally a step
    later so the wait costs nothing:
    ```python
    sampled_cpu = sampled_token_ids.to("cpu", non_blocking=True)
    copy_done = torch.cuda.Event()
    copy_done.record()
    ...  # queue more GPU work
    copy_done.synchronize()
    return sampled_cpu.tolist()
    ```
    Or, where the value is needed now, make the copy blocking (`.cpu()`).

    ## Fix safety
    No fix. Where to wait is a design decision: a blocking copy is correct but gives up the
    overlap the author wanted, and an event placed by a tool could sit on the wrong stream.
    Never "fix" this by dropping `non_blocking` elsewhere or by adding it to other copies.
    """

    VALID = [
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu')\nvals = y.tolist()\n"),
        Valid(
            "import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu', non_blocking=True)\n"
            "torch.cuda.synchronize()\nvals = y.tolist()\n"
        ),
        Valid(
            "import torch\n\ndef copy_out(x: torch.Tensor):\n    done = torch.cuda.Event()\n"
            "    y = x.to('cpu', non_blocking=True)\n    done.record()\n    done.synchronize()\n"
            "    return y.tolist()\n"
        ),
        Valid(
            "import torch\n\ndef start_copy(x: torch.Tensor):\n    y = x.to('cpu', non_blocking=True)\n"
            "    n = y.shape[0]\n    return y, n\n"
        ),
        Valid(
            "import torch\ncpu_ids = torch.zeros(4, dtype=torch.long)\n"
            "gpu_ids = cpu_ids.to('cuda', non_blocking=True)\nprint(cpu_ids.tolist())\n"
        ),
        Valid(
            "import torch\n\ndef f(x: torch.Tensor, n: torch.Tensor):\n    y = x.to('cpu', non_blocking=True)\n"
            "    total = n.item()\n    return y[:total].tolist()\n"
        ),
        Valid(
            "import torch\n\ndef f(x: torch.Tensor):\n    y = x.to('cpu', non_blocking=True)\n"
            "    y = x.cpu()\n    return y.tolist()\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\nclass Sampler(torch.nn.Module):\n    def sampled_ids_to_lists(self, sampled_token_ids: torch.Tensor):\n"
            "        sampled_cpu = sampled_token_ids.to('cpu', non_blocking=True)\n        return sampled_cpu.tolist()\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\nhost = torch.empty(4, pin_memory=True)\n"
            "host.copy_(x, non_blocking=True)\nfor v in host[:2]:\n    print(v)\n",
            count=1,
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\nx = torch.ones(4, device='cuda')\narr = x.to('cpu', non_blocking=True).numpy()\n"
            "first = int(arr[0])\n"
        ),
        Invalid("import torch\nx = torch.ones(4, device='cuda')\ntotal = x.to('cpu', non_blocking=True).sum()\n"),
        Invalid(
            "import torch\n\nclass Runner(torch.nn.Module):\n    def __init__(self):\n"
            "        self.counts = CpuGpuBuffer(8, device='cuda')\n\n"
            "    def step(self, counts: torch.Tensor):\n"
            "        self.counts.cpu[:4].copy_(counts, non_blocking=True)\n"
            "        if self.counts.np[0] > 0:\n            pass\n",
            confidence=Confidence.MEDIUM,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._pending: list[list[PendingCopy]] = [[]]  # per enclosing function, innermost last

    # ---- scopes --------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pending.append([])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._pending.pop()

    # ---- copies, views and rebinding -------------------------------------------------

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._bind([t.target for t in original_node.targets], original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            self._bind([original_node.target], original_node.value)

    def _bind(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        names = {name for name in map(dotted_name, targets) if name is not None}
        pending = self._pending[-1]
        for earlier in pending:  # a rebound name no longer sees the copy's memory
            earlier.names -= names
        pending[:] = [copy for copy in pending if copy.names]
        if not names:
            return
        source = self._nonblocking_to_host(_memory_root(value))
        if source is not None:  # `y = x.to("cpu", non_blocking=True)`, or a view of it
            pending.append(PendingCopy(_with_buffer_views(names), one_line(self.code_of(value)), source))
            return
        copy = self._pending_copy_of(value)
        if copy is not None:  # `a = y.numpy()`, `row = y[i]`: a view of the copy's memory
            copy.names |= _with_buffer_views(names)

    def leave_Call(self, original_node: cst.Call) -> None:
        found = self._nonblocking_copy_into_host(original_node)
        if found is not None:
            target, where = found
            pending = PendingCopy(_with_buffer_views({target}), one_line(self.code_of(original_node)), where)
            self._pending[-1].append(pending)

    def _nonblocking_to_host(self, call: cst.BaseExpression) -> Where | None:
        """For `x.to(<host>, non_blocking=True)` with `x` on the GPU: where `x` lives."""
        func = method_call(call, "to")
        if func is None or not isinstance(call, cst.Call) or not is_literal_true(keyword_arg(call, "non_blocking")):
            return None
        source = self.where(func.value)
        if not source.on_device or self.where(call).place is not Place.HOST_TENSOR:
            return None
        return source

    def _nonblocking_copy_into_host(self, call: cst.Call) -> tuple[str, Where] | None:
        """For `host[...].copy_(x, non_blocking=True)` with `x` on the GPU: `host`'s name and where `x` lives."""
        func = method_call(call, "copy_")
        if func is None or not call.args or not is_literal_true(keyword_arg(call, "non_blocking")):
            return None
        source = self.where(call.args[0].value)
        if not source.on_device:
            return None
        target = self.where(func.value)
        name = dotted_name(_memory_root(func.value))
        # A host tensor, or host memory by its name (`counts_cpu`); a proven host value such
        # as a list of tensors says nothing about the tensor inside it.
        # (A host guess, an element of a container whose elements are not known, says nothing either.)
        host_memory = target.place is Place.HOST_TENSOR or (
            target.place is Place.HOST and target.certainty < Certainty.HIGH and not is_host_guess(target))
        if name is None or not host_memory:
            return None
        return name, source.weaker(target.certainty)

    # ---- waits -------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        if self._waits(node):
            self._pending[-1].clear()
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS:
            self._check_read(func.value, node)
        elif isinstance(func, cst.Name) and func.value in READ_BUILTINS:
            for arg in node.args:
                self._check_read(arg.value, node)
        elif (self.qualname(func) or "").startswith("numpy."):
            for arg in node.args:
                if arg.keyword is None:
                    self._check_read(arg.value, node)

    def _waits(self, call: cst.Call) -> bool:
        """Whether the host has waited for earlier copies once `call` returns."""
        if not self._pending[-1]:
            return False
        func = call.func
        last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if last in WAIT_METHODS or SYNC_HELPER.search(last):
            return True
        if isinstance(func, cst.Attribute) and last in BLOCKING_READS:
            return self.where(func.value).on_device
        if isinstance(func, cst.Attribute) and last == "to" and not is_literal_true(keyword_arg(call, "non_blocking")):
            return self.where(func.value).on_device and self.where(call).place is Place.HOST_TENSOR
        if isinstance(func, cst.Name) and last in ("int", "float", "bool") and len(call.args) == 1:
            return self.where(call.args[0].value).on_device
        return False

    # ---- reads -------------------------------------------------------------------------

    def visit_For(self, node: cst.For) -> None:
        # `for row in y:` takes views of y's rows; reading a row in the body reads the copy.
        target = dotted_name(node.target)
        if target is None:
            return
        root = _memory_root(node.iter)
        inline = self._nonblocking_to_host(root) if isinstance(root, cst.Call) else None
        if inline is not None:
            self._pending[-1].append(PendingCopy({target}, one_line(self.code_of(root)), inline))
            return
        copy = self._pending_copy_of(node.iter)
        if copy is not None:
            copy.names.add(target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._check_read(node.iter, node.iter)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check_read(node.left, node.left)
        self._check_read(node.right, node.right)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if any(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in node.comparisons):
            return
        self._check_read(node.left, node.left)
        for target in node.comparisons:
            self._check_read(target.comparator, target.comparator)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        self._check_read(node.expression, node.expression)

    def visit_If(self, node: cst.If) -> None:
        self._check_read(node.test, node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check_read(node.test, node.test)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_read(node.target, node.target)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self._check_read(node.expression, node.expression)

    def _check_read(self, operand: cst.BaseExpression, read: cst.CSTNode) -> None:
        root = _memory_root(operand)
        inline = self._nonblocking_to_host(root) if isinstance(root, cst.Call) else None
        if inline is not None:  # `x.to("cpu", non_blocking=True).tolist()`
            self._report(read, None, one_line(self.code_of(root)), inline)
            return
        if not self._pending[-1]:
            return
        name = dotted_name(root)
        copy = self._pending_copy_named(name)
        if copy is not None:
            self._pending[-1].remove(copy)  # one finding per copy
            self._report(read, name, copy.copy_code, copy.where)

    def _report(self, read: cst.CSTNode, name: str | None, copy_code: str, where: Where) -> None:
        text = one_line(self.code_of(read))
        if name is None:
            subject = f"`{text}` reads the result of the non-blocking copy `{copy_code}` on the host"
        else:
            subject = f"`{text}` reads `{name}` on the host" if text != name else f"`{text}` is read on the host"
            subject += f" while the non-blocking copy `{copy_code}` may still be in flight"
        message = f"{subject}; nothing waits for the copy in between, so the host can see stale data"
        self.report_where(read, message, where)

    def _pending_copy_of(self, value: cst.BaseExpression) -> PendingCopy | None:
        return self._pending_copy_named(dotted_name(_memory_root(value)))

    def _pending_copy_named(self, name: str | None) -> PendingCopy | None:
        if name is None:
            return None
        for copy in self._pending[-1]:
            if name in copy.names:
                return copy
        return None


def _memory_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The expression whose memory `expr` reads: `y` for `y[:n]`, `y.numpy()`, `y.T`."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in VIEW_ATTRIBUTES:
            expr = expr.value
        elif (func := method_call(expr, *VIEW_METHODS)) is not None:
            expr = func.value
        else:
            return expr


def _with_buffer_views(names: set[str]) -> set[str]:
    """vLLM's CpuGpuBuffer: `buf.np` is a numpy view of `buf.cpu`'s memory."""
    return names | {name[: -len(".cpu")] + ".np" for name in names if name.endswith(".cpu")}

