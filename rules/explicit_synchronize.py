"""SYNC110 explicit-synchronize."""

from __future__ import annotations

import re

import libcst as cst

from synclint.devices.conventions import SYNC_HELPER_NAME
from synclint.model import Confidence
from synclint.evidence import Certainty
from synclint.patterns import one_line
from synclint.rule import Invalid, Rule, Valid
from synclint.syntax import dotted_name, parameter
from synclint.traversal import walk

# Modules whose `synchronize()` waits for everything queued on the device.
DEVICE_MODULES = frozenset({"torch.cuda", "torch.accelerator", "torch.xpu", "torch.mps", "torch.npu"})
OTHER_DEVICE_MODULES = frozenset({"xpu", "mps", "npu"})
# What builds a stream or an event: the classes, and the functions that return the current one.
# A helper this short (statements nested in its blocks included) whose body synchronizes
# the device exists to synchronize.
MAX_HELPER_STATEMENTS = 3
STREAM_MAKERS = frozenset({"Stream", "ExternalStream", "current_stream", "default_stream"})
EVENT_MAKERS = frozenset({"Event"})


class ExplicitSynchronize(Rule):
    code = "SYNC110"
    name = "explicit-synchronize"
    summary = "An explicit synchronize makes the host wait for the GPU"
    prefilter = ("synchronize", re.compile(r"(?:device|cuda|gpu|accelerator)_?sync|sync_?(?:device|cuda|gpu|accelerator)"))
    docs = """
    ## What it does
    Flags explicit waits for the device: `torch.cuda.synchronize()` (with or without a
    device), `torch.accelerator.synchronize()` (and the `xpu`, `mps`, `npu` ones),
    `torch.cuda.current_stream().synchronize()`, `stream.synchronize()`, `event.synchronize()`
    and the unbound `torch.cuda.Stream.synchronize(s)` / `torch.cuda.Event.synchronize(e)`.
    A `.synchronize()` on another receiver is flagged only when the receiver is built as a
    stream or event (`torch.cuda.Stream(...)`, `torch.cuda.Event(...)`, `current_stream()`,
    in this function or, for `self.x`, in any method of the class), or, with medium
    confidence, when its name says so (`copy_stream`, `self.transfer_event`). A call of a
    helper of at most three statements (nested ones included), defined in the same module, that synchronizes the
    device (`self._sync_device()`, vLLM PR #39113's site) is flagged where it is called too:
    high confidence for a function that always synchronizes, medium for a method (a subclass
    elsewhere may override it) or a conditional synchronize. So is a call of a name bound to a
    device-wide synchronize, in the function or at the module's level (`synchronize =
    torch.cuda.synchronize if cuda else lambda: None`, then `synchronize()` every step): high
    when every value bound to it is one, medium when one branch is something else. Helpers from
    other modules (`current_platform.synchronize()`) are not flagged.

    ## Why is this bad?
    The host stops until the GPU has drained the queue (or the stream, or the work before
    the event), so it cannot queue the next step meanwhile. Measured on an H100 with 20 ms of
    work queued: `torch.cuda.synchronize()` and `event.synchronize()` each returned after 20 ms.
    `torch.cuda.set_sync_debug_mode("warn")` does not report either of them, so these waits
    are invisible to the runtime check and only a static check finds them. vLLM PR #39113
    removed a redundant device synchronize from the pooling model runner: +3.7% throughput.

    ## Example
    ```python
    pooled_cpu = pooled.to("cpu")  # a blocking copy: it already waited
    torch.cuda.synchronize()  # a second full wait, every step
    ```

    ## Use instead
    Drop a synchronize that another wait already covers. Where the host must wait, wait for
    as little as possible, as late as possible: record an event after the work it needs and
    call `event.synchronize()` just before the read, ideally a step later. Order GPU work
    between streams with `stream.wait_event(event)` / `stream.wait_stream(other)` and keep
    tensors used on another stream alive with `tensor.record_stream(stream)`; none of these
    block the host.
    ```python
    pooled_cpu = pooled.to("cpu")
    ```

    ## Fix safety
    No fix. A synchronize often guards correctness: a non-blocking copy read on the host,
    memory handed to another process or library, timing. Removing it can make the host read
    data that has not landed; only the author knows which wait is redundant.
    """

    VALID = [
        Valid("import torch\nx = torch.ones(4, device='cuda')\ny = x.to('cpu')\n"),
        Valid("import torch\nstream = torch.cuda.Stream()\nstream.wait_stream(torch.cuda.current_stream())\n"),
        Valid("from vllm.platforms import current_platform\ncurrent_platform.synchronize()\n"),
        Valid("import torch\n\ndef step(lock):\n    lock.synchronize()\n"),
        Valid("import torch\nevent = torch.cuda.Event()\ndone = event.query()\n"),
    ]
    INVALID = [
        Invalid("import torch\ntorch.cuda.synchronize()\n", confidence=Confidence.HIGH),
        Invalid("import torch\n\ndef sync(device):\n    torch.cuda.synchronize(device)\n"),
        Invalid("import torch\ntorch.accelerator.synchronize()\n"),
        Invalid("from torch import cuda\ncuda.current_stream().synchronize()\n", confidence=Confidence.HIGH),
        Invalid(
            "import torch\n\ndef copy_out(x):\n    done = torch.cuda.Event()\n    y = x.to('cpu', non_blocking=True)\n"
            "    done.record()\n    done.synchronize()\n    return y\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\n\nclass Runner:\n    def __init__(self):\n        self.copy_done = torch.cuda.Event()\n\n"
            "    def get_output(self):\n        self.copy_done.synchronize()\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\n\nclass Runner:\n    def get_output(self):\n        self.transfer_event.synchronize()\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid("import torch\ns = torch.cuda.Stream()\ntorch.cuda.Stream.synchronize(s)\n"),
        Invalid(
            "import torch\n\nclass Runner:\n    def _sync_device(self) -> None:\n"
            "        torch.accelerator.synchronize()\n\n    def pool(self, pooled):\n"
            "        out = pooled.to('cpu')\n        self._sync_device()\n        return out\n",
            count=2,
        ),
        Invalid(  # another accelerator's branch is low (hidden by default); the CUDA one beside it is not
            "import torch\n\ndef wait(x: torch.Tensor):\n    if x.device.type == 'xpu':\n        torch.xpu.synchronize()\n"
            "    else:\n        torch.cuda.synchronize()\n",
            count=1, confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._helpers: dict[int, tuple[str, bool] | None] = {}  # helper function -> its synchronize

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "synchronize"):
            self._check_helper_call(node)
            return
        code = one_line(self.code_of(node))
        qual = self.qualname(func)
        if qual is not None:
            owner = qual.rsplit(".", 1)[0]
            if owner in DEVICE_MODULES:
                message = (
                    f"`{code}` blocks the host until all work queued on the device finishes; "
                    "`set_sync_debug_mode` does not flag it"
                )
                platform = owner.rsplit(".", 1)[-1]
                if platform in OTHER_DEVICE_MODULES:
                    # The host waits for that accelerator, not for a CUDA GPU.
                    self.report(node, message, certainty=Certainty.LOW, because=f"{platform.upper()} code, not CUDA")
                else:
                    self.report(node, message, certainty=Certainty.HIGH,
                                because=f"{qual}() is the device-wide synchronize")
            elif owner.startswith("torch.") and owner.rsplit(".", 1)[-1] in STREAM_MAKERS | EVENT_MAKERS:
                kind = "event" if owner.endswith("Event") else "stream"
                self.report(node, _message(code, kind), certainty=Certainty.HIGH,
                            because=f"{qual}() waits for {_a(kind)}")
            return  # some other module's function: a project's own helper
        found = self._receiver_kind(func.value)
        if found is not None:
            kind, confidence, because = found
            self.report(node, _message(code, kind), certainty=confidence, because=because)

    def _check_helper_call(self, node: cst.Call) -> None:
        """A call of a small local helper whose job is a device-wide synchronize (`self._sync_device()`)."""
        helper = self.resolve(node.func)
        if helper is None:
            if not self._check_alias(node):
                self._check_named_helper(node)
            return
        if id(helper) not in self._helpers:
            self._helpers[id(helper)] = self._helper_sync(helper)
        found = self._helpers[id(helper)]
        if found is None:
            return
        inner, unconditional = found
        is_method = isinstance(node.func, cst.Attribute)  # a subclass elsewhere may override it
        confidence = Certainty.HIGH if unconditional and not is_method else Certainty.MEDIUM
        message = (
            f"`{one_line(self.code_of(node))}` calls `{inner}`, which blocks the host until all work "
            "queued on the device finishes"
        )
        self.report(node, message, certainty=confidence, because=f"{helper.name.value}() calls {inner}")

    def _check_alias(self, node: cst.Call) -> bool:
        """A call of a name bound to a device-wide synchronize, here or at the module's level:
        `synchronize = torch.cuda.synchronize if cuda else lambda: None` (high when every value
        bound to it is one, else medium). Whether it reported."""
        if not isinstance(node.func, cst.Name):
            return False
        name = node.func.value
        values = self.assignments().get(name) or (self.assignments(self.ctx.module).get(name) if self.function else None)
        if not values:
            return False
        found: list[str] = []
        always = True
        for value in values:
            if value is None:  # bound by a loop, an import, ...: not always a synchronize
                always = False
                continue
            branches = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
            syncs = [q for b in branches if (q := self.qualname(b) or "").rsplit(".", 1)[0] in DEVICE_MODULES
                     and q.endswith(".synchronize")]
            found += syncs
            always = always and len(syncs) == len(branches)
        if not found:
            return False
        message = (f"`{one_line(self.code_of(node))}` calls `{found[0]}`, which blocks the host until all work "
                   "queued on the device finishes")
        first = next(v for v in values if v is not None)
        self.report(node, message, certainty=Certainty.HIGH if always else Certainty.MEDIUM,
                    because=f"{name} = {one_line(self.code_of(first), 100)}")
        return True

    def _check_named_helper(self, node: cst.Call) -> None:
        """A call of an imported helper named for a device-wide wait (`device_synchronize()`):
        its body is in another file, its name says what it does."""
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else (
            node.func.value if isinstance(node.func, cst.Name) else "")
        qual = self.qualname(node.func) or name
        if not SYNC_HELPER_NAME.match(name) or qual.startswith("torch."):
            return
        message = (
            f"`{one_line(self.code_of(node))}` calls `{qual}`, which by its name blocks the host until all work "
            "queued on the device finishes"
        )
        self.report(node, message, certainty=Certainty.MEDIUM, because=f"{name}() is named for a device-wide wait")

    def _helper_sync(self, helper: cst.FunctionDef) -> tuple[str, bool] | None:
        """The device-wide synchronize a helper of at most 3 statements makes, and whether always."""
        body = list(helper.body.body) if isinstance(helper.body, cst.IndentedBlock) else []
        if body and _is_docstring(body[0]):
            body = body[1:]
        if not body or sum(_statement_count(statement) for statement in body) > MAX_HELPER_STATEMENTS:
            return None
        straight_line = True  # no branch, return or raise before this statement
        for statement in body:
            straight_line = straight_line and isinstance(statement, cst.SimpleStatementLine)
            for call in _calls_in(statement):
                if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "synchronize"):
                    continue
                owner = (self.qualname(call.func) or "").rsplit(".", 1)[0]
                if owner in DEVICE_MODULES:
                    return one_line(self.code_of(call)), straight_line
            if isinstance(statement, cst.SimpleStatementLine) and any(
                isinstance(small, (cst.Return, cst.Raise)) for small in statement.body
            ):
                straight_line = False
        return None

    def _receiver_kind(self, receiver: cst.BaseExpression) -> tuple[str, Certainty, str] | None:
        """Whether `receiver` is a stream or an event, how sure, and why."""
        made = self._maker_kind(receiver)
        if made is not None:
            return made, Certainty.HIGH, f"{one_line(self.code_of(receiver))} makes {_a(made)}"
        name = dotted_name(receiver)
        for value in self._bound_values(receiver):
            made = self._maker_kind(value)
            if made is not None:
                return made, Certainty.HIGH, f"{name} = {one_line(self.code_of(value))}"
        annotated = self._annotated_kind(receiver)
        if annotated is not None:
            return annotated, Certainty.HIGH, f"{name} is annotated as {_a(annotated)}"
        while isinstance(receiver, cst.Subscript):  # self.events[i]: judge the container's name
            receiver = receiver.value
        last = (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()
        for kind in ("event", "stream"):
            if kind in last:
                return kind, Certainty.MEDIUM, f"{last} is {_a(kind)} by its name"
        return None

    def _maker_kind(self, value: cst.BaseExpression) -> str | None:
        """`stream` or `event` when `value` builds one (`torch.cuda.Event()`, `current_stream()`)."""
        if isinstance(value, cst.IfExp):
            return self._maker_kind(value.body) or self._maker_kind(value.orelse)
        if not isinstance(value, cst.Call):
            return None
        qual = self.qualname(value.func) or ""
        last = qual.rsplit(".", 1)[-1]
        if not qual.startswith("torch."):
            return None
        if last in EVENT_MAKERS:
            return "event"
        if last in STREAM_MAKERS:
            return "stream"
        return None

    def _bound_values(self, receiver: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What a local name, or `self.x` in any method of the class, was assigned."""
        scope = self.scope
        if isinstance(receiver, cst.Name):
            return [v for v in self.assignments(scope).get(receiver.value, []) if v is not None]
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            cls = self.class_of(self.function)
            if cls is None:
                return []
            return self.attribute_assignments(cls).get(receiver.attr.value, [])
        return []

    def _annotated_kind(self, receiver: cst.BaseExpression) -> str | None:
        """`stream` or `event` for a parameter annotated `torch.cuda.Stream`, `torch.Event`, ..."""
        func = self.function
        if func is None or not isinstance(receiver, cst.Name):
            return None
        param = parameter(func, receiver.value)
        if param is None or param.annotation is None:
            return None
        annotation = param.annotation.annotation
        if isinstance(annotation, cst.BinaryOperation):  # Event | None
            annotation = annotation.left
        qual = self.qualname(annotation) or ""
        last = qual.rsplit(".", 1)[-1]
        if qual.startswith("torch.") and last in EVENT_MAKERS:
            return "event"
        if qual.startswith("torch.") and last in ("Stream", "ExternalStream"):
            return "stream"
        return None


def _message(code: str, kind: str) -> str:
    if kind == "event":
        return (
            f"`{code}` blocks the host until the work recorded before the event finishes; "
            "`set_sync_debug_mode` does not flag it"
        )
    return f"`{code}` blocks the host until all work queued on the stream finishes"


def _a(kind: str) -> str:
    return f"an {kind}" if kind == "event" else f"a {kind}"


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _statement_count(statement: cst.CSTNode) -> int:
    """How many statements `statement` is, counting those nested in its blocks."""
    counter = _StatementCounter()
    walk(statement, counter)
    return counter.count


class _StatementCounter(cst.CSTVisitor):
    walks_trivia = False  # counts statements only

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            self.count += 1
        return True


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls in `node`, outside nested functions, classes and lambdas."""
    calls: list[cst.Call] = []

    class Collector(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            calls.append(node)

    walk(node, Collector())
    return calls
