"""SYNC105 sync-property."""

from __future__ import annotations

import libcst as cst

from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import one_line
from synclint.rule import Invalid, Option, Replacement, Rule, Site, Valid
from synclint.syntax import dotted_name

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

# Built once and kept: the first read pays, the others read the cache (low: hidden by default).
CACHED_ON_FIRST_READ = """\
import torch
from torch import nn


class Rotary(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self._inv_freq = None

    @property
    def inv_freq(self):
        if self._inv_freq is None:
            self._inv_freq = 1.0 / (10000 ** (torch.arange(0, self.dim, 2).float().cuda() / self.dim))
        return self._inv_freq

    def forward(self, x):
        return x * self.inv_freq
"""


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
    - project analysis: the properties, in any file of the checked packages, whose getter
      makes the host wait, directly (a finding of another rule in its body: `.cpu()`,
      `.item()`, a blocking `.to("cpu")`, ...) or through the functions and properties it
      calls, followed to a fixpoint. The message names the property, where it is defined,
      the chain down to the sync, and its `@deprecated` text if it has one. A read on
      `self`, or on a parameter annotated with a class, is matched to that class and its
      bases; a read on a value of unknown class is reported with the property's confidence,
      or with low confidence when some class of the project stores a plain field of that name.
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
        Valid(CACHED_ON_FIRST_READ),
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
        # A property named like a common method: `x.size(0)` calls a method of another object.
        Valid(
            "import torch\n\n\nclass Batch:\n    def __init__(self):\n"
            "        self.lens = torch.zeros(4, device='cuda')\n\n    @property\n    def size(self):\n"
            "        return int(self.lens.sum().item())\n\n\ndef f(x, mesh):\n"
            "    return x.size(0) + mesh.size()\n"
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
        # Names of properties defined here or known to sync elsewhere: reads of other names
        # cannot be reads of a syncing property.
        self._property_names = {
            stmt.name.value
            for cls in self.local_classes()
            for stmt in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ())
            if isinstance(stmt, cst.FunctionDef) and any(_is_plain_property(d) for d in stmt.decorators)
        } | self.answers.properties.keys()
        self._reads: list[tuple[cst.Attribute, str | None, Site]] = []  # judged in `finish`

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

    def visit_Call(self, node: cst.Call) -> None:
        # `x.size(...)` calls a method: a property is read, not called (a property that returns
        # a function is no sync when read). So a project's `size` property is not every `.size()`.
        if isinstance(node.func, cst.Attribute):
            self._stores.add(id(node.func))

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
        if configured is None and name not in self._property_names:
            return
        if isinstance(node.value, cst.Name) and self.local_class(node.value.value) is not None:
            return  # `Class.prop` is the property object itself
        receiver = self.receiver_class(node.value)
        if configured is not None:
            self._report_configured(node, name, configured, self._simple_names(receiver), one_line(self.code_of(node)))
        else:
            self._reads.append((node, receiver, self.site()))

    def _report_configured(
        self, node: cst.Attribute, name: str, entries: list[tuple[str | None, str]], owners: set[str] | None, text: str
    ) -> None:
        for owner, replacement in entries:
            if owner is None or (owners is not None and owner in owners):
                confidence = Certainty.HIGH
            elif owners is None:
                # The entry names a class and this value's class is unknown: another class may
                # have a plain field of that name (vLLM's InputBatch.num_computed_tokens_cpu).
                confidence = Certainty.LOW
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
            self.report(node, message, certainty=confidence, because=because, fix=fix)
            return

    def _simple_names(self, receiver: str | None) -> set[str] | None:
        """The receiver's class and its local bases, by simple name (as `sync-properties` names them)."""
        if receiver is None:
            return None
        names: set[str] = set()
        pending = [receiver.rsplit(".", 1)[-1]]
        while pending:
            name = pending.pop()
            if name in names:
                continue
            names.add(name)
            cls = self.local_class(name)
            if cls is not None:
                pending.extend(n.rsplit(".", 1)[-1] for b in cls.bases if (n := dotted_name(b.value)) is not None)
        return names

    # ---- properties found by the project index ----------------------------------------

    def finish(self) -> None:
        index = self.index
        if index is None:
            return
        for node, receiver, site in self._reads:
            name = node.attr.value
            found = index.syncing_properties(name)
            if not found:
                continue
            if receiver is not None and index.is_known_class(receiver):
                ancestors = index.ancestors(receiver)
                found = [prop for prop in found if prop.owner in ancestors]
                confidence_cap = Certainty.HIGH
            elif index.is_plain_field(name) or len({prop.owner for prop in found}) > 1:
                confidence_cap = Certainty.LOW  # may be another class's plain field
            else:
                confidence_cap = Certainty.HIGH
            if not found:
                continue
            prop = found[0]
            defined = f"{prop.owner.rsplit('.', 1)[-1]}.{name}"
            message = (
                f"`{one_line(self.code_of(node))}` reads the property `{defined}` ({prop.path}:{prop.row}),"
                f" whose getter makes the host wait for the GPU: {prop.chain.describe()}"
            )
            if prop.deprecated:
                message += f"; deprecated: {prop.deprecated}"
            because = f"{defined} is a property defined at {prop.path}:{prop.row}"
            self.report_at(site, node, message, certainty=min(prop.chain.certainty, confidence_cap), because=because)


def _configured_table(table: dict) -> dict[str, list[tuple[str | None, str]]]:
    """`{"Class.name": "repl", "name": ""}` -> name -> [(class or None, replacement)]."""
    entries: dict[str, list[tuple[str | None, str]]] = {}
    for key, replacement in table.items():
        owner, _, name = str(key).rpartition(".")
        usable = replacement if isinstance(replacement, str) and replacement.isidentifier() else ""
        entries.setdefault(name, []).append((owner or None, usable))
    return entries


def _is_plain_property(decorator: cst.Decorator) -> bool:
    return (dotted_name(decorator.decorator) or "").rsplit(".", 1)[-1] == "property"
