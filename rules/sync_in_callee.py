"""SYNC112 sync-in-callee."""

from __future__ import annotations

import libcst as cst

from synclint.model import Confidence
from synclint.evidence import Certainty
from synclint.patterns import one_line
from synclint.project.facts import SyncSite, short_name
from synclint.rule import Invalid, Rule, Site, Valid
from synclint.syntax import keyword_arg

HELPER_IN_LOOP = """\
import torch


def count_hits(mask, device: torch.device) -> int:
    hits = mask.to(device, non_blocking=True).sum()
    return int(hits.item())


def total_hits(masks, device):
    total = 0
    for mask in masks:
        total += count_hits(mask, device)
    return total
"""

HOST_HELPER = """\
import numpy as np
import torch


def count_hits(mask: np.ndarray) -> int:
    return int(mask.sum())


def total_hits(masks):
    return sum(count_hits(mask) for mask in masks)
"""

UNKNOWN_DEVICE = """\
import torch


def count_hits(mask: torch.Tensor) -> int:
    return int(mask.sum().item())


def total_hits(masks):
    return sum(count_hits(mask) for mask in masks)
"""

CHAIN_FROM_STEP = """\
import torch


class Sampler:
    def __init__(self, device):
        self.penalties = torch.zeros(16, device=device)

    def _max_penalty(self):
        return self.penalties.max().item()

    def _prepare(self):
        return self._max_penalty() > 1.0

    def forward(self, logits):
        if self._prepare():
            logits = logits / 2
        return logits
"""


class SyncInCallee(Rule):
    code = "SYNC112"
    name = "sync-in-callee"
    summary = "A call, in a loop or a per-step method, to a function that makes the host wait"
    prefilter = ("torch",)
    syncs = False  # the sync is counted where it happens; the project index follows it to callers
    docs = """
    ## What it does
    Flags calls, inside a loop or in a per-step method (`forward`, `step`,
    `execute_model`, ...), to a function of the checked project that makes the host wait
    for the GPU: directly (another rule's finding in its body) or through the functions
    it calls in turn, in this file or in another. The message names the chain, from the
    called function down to the sync: `_prepare -> _max_penalty: `self.penalties.max().item()`
    at sampler.py:9`.

    Certainty: high when the sync is in another file and on a value proven to be on the
    device (a buffer made with `device=`, `.cuda()`, ...). Low, and hidden by default
    (`--min-confidence low` shows them), when it is on a tensor of unknown device, such as a
    helper's parameter annotated `torch.Tensor`, since callers often pass host tensors there;
    and when the sync is in the same file, where it is reported itself, so that the call adds
    how often it runs, not where.

    Calls are resolved without running the code: module-level functions (local or
    imported from the same top-level package, relative imports included), `self.m()`
    and `cls.m()` through the class's bases in any file, `super().m()`, and `param.m()`
    for a parameter annotated with a project class. A sync silenced by `# noqa` or
    inside `with gpu_sync_allowed():` does not travel to callers. Set
    `project-analysis = false` to check each file alone.

    ## Why is this bad?
    The helper looks harmless at the call site; inside it, `.item()` or a blocking copy
    waits for every kernel queued so far. Called once per loop iteration or once per
    model step, the wait is paid every time, and nothing at the call site says so.

    ## Example
    ```python
    def count_hits(mask: torch.Tensor) -> int:
        return int(mask.sum().item())

    for mask in masks:
        total += count_hits(mask)  # one sync per mask
    ```

    ## Use instead
    Keep the values on the device and read the host once, after the loop:
    ```python
    hits = torch.stack([mask.sum() for mask in masks])
    total = int(hits.sum().item())  # one sync
    ```

    ## Fix safety
    There is no automatic fix: what to do depends on why the callee needs a host value.
    """

    VALID = [
        Valid(HELPER_IN_LOOP.replace("    for mask in masks:\n        total += count_hits(mask, device)\n",
                                     "    total += count_hits(masks[0], device)\n")),  # once, outside a loop
        Valid(HOST_HELPER),  # the helper works on numpy
        Valid(UNKNOWN_DEVICE),  # a tensor of unknown device: low confidence, hidden by default
        Valid(HELPER_IN_LOOP.replace("    return int(hits.item())", "    return int(hits.item())  # noqa: SYNC107")),
        Valid(HELPER_IN_LOOP, config={"project-analysis": False}),
    ]
    INVALID = [
        Invalid(HELPER_IN_LOOP, count=1, confidence=Confidence.LOW, min_confidence=Confidence.LOW),
        Invalid(CHAIN_FROM_STEP, count=1, confidence=Confidence.LOW, min_confidence=Confidence.LOW),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._calls: list[tuple[cst.Call, str, Site]] = []  # judged in `finish`

    def visit_Call(self, node: cst.Call) -> None:
        if self.context() not in ("loop", "step", "interval"):
            return
        callee = self.callee(node.func)
        if callee is not None:
            self._calls.append((node, callee, self.site()))

    def finish(self) -> None:
        index = self.index
        if index is None:
            return
        for node, callee, site in self._calls:
            fact = index.fact(callee)
            if fact is None or fact.chain is None or fact.is_property:
                continue
            scope = site.scope
            if isinstance(scope, cst.FunctionDef) and self.function_qualname(scope) in fact.chain.steps:
                continue  # recursion: the caller's own sync is reported where it is
            where = {"loop": "in a loop", "step": "in a per-step method"}.get(site.context, "every so many steps")
            message = (
                f"`{one_line(self.code_of(node.func))}(...)` {where} calls a function that makes the host wait"
                f" for the GPU: {fact.chain.describe(short_name(fact.chain.steps[0]))}"
            )
            because = f"{fact.chain.site.code} at {fact.chain.site.path}:{fact.chain.site.row}"
            if fact.chain.site.once is not None:
                # `if self._t is None: self._t = x.to(d)`: the first call pays, the others read a cache.
                because += f", only the first time: under `if {one_line(fact.chain.site.once, 60)}:`"
            # A sync on a tensor of unknown device inside a helper (a parameter annotated
            # torch.Tensor) depends on what callers pass: judged on vLLM 0.33.0, 24 of 38 such
            # calls were host tensors or branches the arguments rule out. Only a sync on a value
            # proven on the device travels at its confidence; the others are low (hidden by default).
            confidence = Certainty.HIGH if fact.chain.certainty is Certainty.HIGH else Certainty.LOW
            flag = fact.chain.site.flag
            if flag is not None:
                # `def check(x, strict=False): if strict: ...sync...`: the call syncs only on that branch.
                state = _flag_state(node, fact.chain.site) if len(fact.chain.steps) == 1 else None
                if state is False:
                    continue
                if state is None:
                    confidence = min(confidence, Certainty.MEDIUM)
                    because += f"; only when `{flag}` is true in {short_name(fact.chain.steps[-1])}()"
            if fact.chain.site.path == self.ctx.relpath:
                # The wait is reported where it happens, in this file: the call adds how often, not where.
                confidence = Certainty.LOW
                because += "; that line is reported itself, in this file"
            self.report_at(site, node, message, certainty=confidence, because=because)


def _flag_state(call: cst.Call, site: SyncSite) -> bool | None:
    """Whether `call` turns on the branch its callee syncs on (`SyncSite.flag`): True or False when
    it passes a literal or leaves a false default, None when that depends on a value."""
    if any(arg.star for arg in call.args):
        return None
    given = keyword_arg(call, site.flag) if site.flag is not None else None
    positional = [arg.value for arg in call.args if arg.keyword is None]
    if given is None and site.flag_position is not None and site.flag_position < len(positional):
        given = positional[site.flag_position]
    if given is None:
        return False if site.flag_off_by_default else None
    if isinstance(given, cst.Name) and given.value in ("True", "False", "None"):
        return given.value == "True"
    if isinstance(given, cst.Integer):
        return given.evaluated_value != 0
    return None
