"""SYNC105 sync-property."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from synclint.devices import Place, dotted_name
from synclint.model import Applicability, Confidence
from synclint.patterns import method_call, one_line, parameter
from synclint.rule import Invalid, Option, Replacement, Rule, Valid
from synclint.traversal import walk

# Tensor methods that copy a tensor's data to the host and wait for it.
HOST_COPY_METHODS = ("cpu", "item", "tolist", "numpy")

SEED_BEFORE = """\
from dataclasses import dataclass

import torch


@dataclass
class CommonAttentionMetadata:
    seq_lens: torch.Tensor
    _seq_lens_cpu: torch.Tensor | None = None

    @property
    def seq_lens_cpu(self) -> torch.Tensor:
        if self._seq_lens_cpu is None:
            self._seq_lens_cpu = self.seq_lens.to("cpu")
        return self._seq_lens_cpu


def max_seq_len(meta: CommonAttentionMetadata) -> int:
    return int(meta.seq_lens_cpu.max())
"""
CONFIGURED_BEFORE = """\
import torch


def split_decodes(common_attn_metadata, decode_threshold):
    seq_lens = common_attn_metadata.seq_lens_cpu
    return seq_lens <= decode_threshold
"""
CONFIGURED_AFTER = CONFIGURED_BEFORE.replace(".seq_lens_cpu", ".seq_lens_cpu_upper_bound")
UPPER_BOUND = {"sync-properties": {"seq_lens_cpu": "seq_lens_cpu_upper_bound"}}


@dataclass(frozen=True)
class SyncingProperty:
    """A property defined in this file whose getter copies device data to the host."""

    owner: str  # the class that defines it
    name: str
    copy: str  # the expression that copies, or the syncing property it reads
    confidence: Confidence
    because: str | None


class SyncProperty(Rule):
    code = "SYNC105"
    name = "sync-property"
    summary = "Reading a property that copies device data to the host makes the host wait for the GPU"
    prefilter = ("torch",)
    options = {
        "sync-properties": Option(
            dict,
            {},
            "Properties known to copy device data to the host: a table from `name` or `Class.name` to "
            'the attribute to read instead ("" for none), e.g. { seq_lens_cpu = "seq_lens_cpu_upper_bound" }',
        )
    }
    docs = """
    ## What it does
    Flags reads of an attribute that looks like a plain field but is a property whose getter
    copies device data to the host. Two sources say which properties do:
    - the `sync-properties` table, from `name` or `Class.name` to the attribute to read
      instead (`""` for none); a `Class.name` entry matches reads on `self` in that class
      (and its subclasses) and on parameters annotated with it, and, with low confidence
      (hidden by default), reads on values of unknown class;
    - the properties defined in the same file whose getter calls `.cpu()`, `.item()`,
      `.tolist()`, `.numpy()` or a blocking `.to("cpu")` on a value not known to be on the
      host, or reads such a property of `self`.
    Assignments to the attribute and the property's own definition are not flagged. Files
    that never mention `torch` are not checked.

    ## Why is this bad?
    The read looks free but copies a device tensor to the host, which waits for every
    kernel queued before it. vLLM's `CommonAttentionMetadata.seq_lens_cpu` did
    `self.seq_lens.to("cpu")` whenever no host copy had been provided, and attention
    backends read it on every step (vLLM PR #40654 replaced the reads with a host-side
    upper bound the scheduler already knew).

    ## Example
    ```python
    # sync-properties = { seq_lens_cpu = "seq_lens_cpu_upper_bound" }
    max_seq_len = int(common_attn_metadata.seq_lens_cpu.max())
    ```

    ## Use instead
    Read a value the host already has:
    ```python
    max_seq_len = int(common_attn_metadata.seq_lens_cpu_upper_bound.max())
    ```

    ## Fix safety
    Where the table gives a replacement, the attribute is renamed to it, as an unsafe fix:
    the replacement is whatever the project configured (`seq_lens_cpu_upper_bound` is an
    upper bound, exact only when no speculative tokens were rejected), so behaviour may
    change. Properties found by analysis and entries without a replacement have no fix.
    """

    VALID = [
        Valid(CONFIGURED_BEFORE),  # nothing is configured
        Valid("import torch\n\n\ndef f(meta, x):\n    meta.seq_lens_cpu = x.cpu()\n    del meta.seq_lens_cpu\n", config=UPPER_BOUND),
        Valid(
            "import torch\n\n\nclass Other:\n    pass\n\n\ndef f(meta: Other):\n    return meta.seq_lens_cpu\n",
            config={"sync-properties": {"Meta.seq_lens_cpu": ""}},
        ),
        Valid(
            "import numpy as np\nimport torch\n\n\nclass Batch:\n    def __init__(self):\n"
            "        self.lens = np.zeros(4)\n\n    @property\n    def max_len(self):\n"
            "        return self.lens.max().item()\n\n\ndef f(batch: Batch):\n    return batch.max_len\n"
        ),
        Valid(
            "import torch\n\n\nclass Batch:\n    def __init__(self):\n"
            "        self.lens = torch.zeros(4, device='cuda')\n\n    @property\n    def lens_cpu(self):\n"
            "        return self.lens.to('cpu', non_blocking=True)\n\n\ndef f(batch: Batch):\n"
            "    return batch.lens_cpu\n"
        ),
    ]
    INVALID = [
        Invalid(SEED_BEFORE, count=1, confidence=Confidence.MEDIUM),
        Invalid(CONFIGURED_BEFORE, expected_fix=CONFIGURED_AFTER, config=UPPER_BOUND, confidence=Confidence.HIGH),
        Invalid(
            "import torch\n\n\ndef f(meta: CommonAttentionMetadata | None):\n    return meta.num_computed_tokens_cpu[0]\n",
            config={"sync-properties": {"CommonAttentionMetadata.num_computed_tokens_cpu": ""}},
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\n\n\nclass Batch:\n    def __init__(self):\n"
            "        self.lens = torch.zeros(4, device='cuda')\n\n    @property\n    def lens_cpu(self):\n"
            "        return self.lens.cpu()\n\n    @property\n    def total(self):\n"
            "        return int(self.lens_cpu.sum())\n\n\ndef f(batch: Batch):\n    return batch.total\n",
            count=2,
            confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # Attributes being assigned or deleted: writes, not reads.
        self._stores: set[int] = set()
        self._configured = _configured_table(self.option("sync-properties"))
        self._discovered: dict[str, list[SyncingProperty]] | None = None

    # ---- where attributes are written, not read -------------------------------------

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._mark_stores(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark_stores(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mark_stores(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._mark_stores(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._mark_stores(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._mark_stores(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._mark_stores(node.name)

    def _mark_stores(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            self._stores.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._mark_stores(element.value)
        elif isinstance(target, cst.StarredElement):
            self._mark_stores(target.value)

    # ---- reads ------------------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> None:
        name = node.attr.value
        if id(node) in self._stores:
            return
        configured = self._configured.get(name)
        discovered = self.discovered().get(name) if configured is None else None
        if configured is None and not discovered:
            return
        if isinstance(node.value, cst.Name) and node.value.value in self.ctx.devices.classes:
            return  # `Class.prop` is the property object itself
        owners = self._receiver_classes(node.value)
        text = one_line(self.code_of(node))
        if configured is not None:
            self._report_configured(node, name, configured, owners, text)
            return
        assert discovered is not None
        for prop in discovered:
            if owners is None or prop.owner in owners:
                message = (
                    f"`{text}` reads the property `{prop.owner}.{name}`, whose getter runs `{prop.copy}`;"
                    " the host waits for the GPU"
                )
                self.report(node, message, confidence=prop.confidence, because=prop.because)
                return

    def _report_configured(
        self, node: cst.Attribute, name: str, entries: list[tuple[str | None, str]], owners: set[str] | None, text: str
    ) -> None:
        for owner, replacement in entries:
            if owner is None or (owners is not None and owner in owners):
                confidence = Confidence.HIGH
            elif owners is None:
                # The entry names a class and this value's class is unknown: another class may
                # have a plain field of that name (vLLM's InputBatch.num_computed_tokens_cpu).
                confidence = Confidence.LOW
            else:
                continue
            where = f"{owner}.{name}" if owner else name
            fix = None
            if replacement:
                fix = Replacement(node.attr, cst.Name(replacement), Applicability.UNSAFE, f"Read `{replacement}` instead")
            message = (
                f"`{text}` reads `{where}`, configured in `sync-properties` as a property that copies"
                " device data to the host; the host waits for the GPU"
            )
            because = f"{where} is listed in `sync-properties`"
            self.report(node, message, confidence=confidence, because=because, fix=fix)
            return

    def _receiver_classes(self, value: cst.BaseExpression) -> set[str] | None:
        """The classes (with their local bases) the value is known to be an instance of, else None."""
        if not isinstance(value, cst.Name):
            return None
        func = self.ctx.current_function()
        if value.value == "self":
            cls = self.ctx.devices.self_class(func)
            return self._with_bases(cls.name.value) if cls is not None else None
        param = parameter(func, value.value) if func is not None else None
        if param is None or param.annotation is None:
            return None
        name = _annotated_class(param.annotation.annotation)
        return self._with_bases(name) if name is not None else None

    def _with_bases(self, class_name: str) -> set[str]:
        names: set[str] = set()
        pending = [class_name]
        while pending:
            name = pending.pop()
            if name in names:
                continue
            names.add(name)
            cls = self.ctx.devices.classes.get(name)
            if cls is not None:
                pending.extend(n.rsplit(".", 1)[-1] for b in cls.bases if (n := dotted_name(b.value)) is not None)
        return names

    # ---- properties of this file whose getter syncs ----------------------------------

    def discovered(self) -> dict[str, list[SyncingProperty]]:
        if self._discovered is None:
            self._discovered = {}
            for prop in _syncing_properties(self.ctx.devices):
                self._discovered.setdefault(prop.name, []).append(prop)
        return self._discovered


def _configured_table(table: dict) -> dict[str, list[tuple[str | None, str]]]:
    """`{"Class.name": "repl", "name": ""}` -> name -> [(class or None, replacement)]."""
    entries: dict[str, list[tuple[str | None, str]]] = {}
    for key, replacement in table.items():
        owner, _, name = str(key).rpartition(".")
        usable = replacement if isinstance(replacement, str) and replacement.isidentifier() else ""
        entries.setdefault(name, []).append((owner or None, usable))
    return entries


def _annotated_class(annotation: cst.BaseExpression) -> str | None:
    """`Meta`, `mod.Meta`, `Meta | None`, `Optional[Meta]`, `"Meta"` -> "Meta"."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return text.rsplit(".", 1)[-1] if isinstance(text, str) and text.replace(".", "").isidentifier() else None
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        names = {_annotated_class(annotation.left), _annotated_class(annotation.right)} - {None, "None"}
        return names.pop() if len(names) == 1 else None
    if isinstance(annotation, cst.Subscript) and (dotted_name(annotation.value) or "").endswith("Optional"):
        inner = annotation.slice[0].slice
        return _annotated_class(inner.value) if isinstance(inner, cst.Index) else None
    name = dotted_name(annotation)
    return name.rsplit(".", 1)[-1] if name is not None else None


def _syncing_properties(devices) -> list[SyncingProperty]:
    """The properties of this module's classes whose getter copies device data to the host.

    A getter syncs when it calls a host-copy method on a value that the device model does
    not know to be on the host, or reads a syncing property of `self` (to a fixpoint).
    """
    getters: list[tuple[cst.ClassDef, cst.FunctionDef]] = []
    for cls in devices.classes.values():
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.FunctionDef) and any(_is_plain_property(d) for d in stmt.decorators):
                getters.append((cls, stmt))
    syncing: dict[tuple[str, str], SyncingProperty] = {}
    for cls, getter in getters:
        found = _HostCopyFinder(devices, getter).first()
        if found is not None:
            copy, where = found
            confidence = where.confidence if where.on_device else Confidence.LOW
            key = (cls.name.value, getter.name.value)
            syncing[key] = SyncingProperty(key[0], key[1], copy, confidence, where.because)
    changed = True
    while changed:
        changed = False
        for cls, getter in getters:
            key = (cls.name.value, getter.name.value)
            if key in syncing:
                continue
            for read in _self_reads(getter):
                inner = syncing.get((key[0], read))
                if inner is not None:
                    syncing[key] = SyncingProperty(
                        key[0], key[1], f"self.{read}", inner.confidence, f"{inner.owner}.{read} runs `{inner.copy}`"
                    )
                    changed = True
                    break
    return list(syncing.values())


def _is_plain_property(decorator: cst.Decorator) -> bool:
    return (dotted_name(decorator.decorator) or "").rsplit(".", 1)[-1] == "property"


def _self_reads(func: cst.FunctionDef) -> list[str]:
    reads: list[str] = []

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                reads.append(node.attr.value)

    walk(func.body, Reads())
    return reads


class _HostCopyFinder(cst.CSTVisitor):
    """The first host copy in a getter's body, with where its source lives."""

    walks_trivia = False  # looks at statements and calls only

    def __init__(self, devices, getter: cst.FunctionDef) -> None:
        super().__init__()
        self.devices = devices
        self.getter = getter
        self.statements: list[cst.CSTNode] = []
        self.found = None

    def first(self):
        walk(self.getter.body, self)
        return self.found

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.found is not None or isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False  # a nested function's body does not run when the property is read
        if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            self.statements.append(node)
        if isinstance(node, cst.Call) and self.statements:
            source = _host_copy_source(node)
            if source is not None:
                where = self.devices.where(source, self.getter, self.statements[-1])
                if where.place is Place.DEVICE or where.place is Place.UNKNOWN:
                    self.found = (one_line(cst.Module(body=()).code_for_node(node)), where)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.statements and self.statements[-1] is original_node:
            self.statements.pop()


def _host_copy_source(call: cst.Call) -> cst.BaseExpression | None:
    """The tensor that `call` copies to the host and waits for, else None."""
    method = method_call(call, *HOST_COPY_METHODS, "to")
    if method is None:
        return None
    if method.attr.value != "to":
        return method.value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "non_blocking":
            if not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
                return None  # does not wait (and is SYNC111's concern)
    targets = [a.value for a in call.args if a.keyword is None][:1]
    targets += [a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"]
    for target in targets:
        if "cpu" in cst.Module(body=()).code_for_node(target).lower():
            return method.value
    return None
