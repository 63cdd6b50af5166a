"""Evidence: the facts that decide what a user sees of a finding, as data.

A rule reports a node with the evidence it has: how sure the device model is that the value is a
GPU tensor (`Certainty`), what that rests on (`Basis`), how often the line runs (its context, solved
over the call graph after the check) and whether ordinary use reaches a CUDA GPU there (`Reach`).
`synclint.policy` alone turns evidence into a confidence; `because` is rendered from the facts'
words, and nothing reads those words back.

No libcst here: evidence travels in findings between processes and in the cache.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from synclint.model import Level, pickled_by_fields


class Certainty(Level):
    """How sure the device model is that a value is a GPU tensor (a fact about the value, not the
    finding's confidence): high, made on or moved to the GPU where the code shows it; medium, a tensor
    likely on the GPU (model code, a module's output); low, a tensor of unknown device or a value of
    unknown type."""

    LOW = 1
    MEDIUM = 2
    HIGH = 3


class Basis(str, enum.Enum):
    """What the device model's verdict on a value rests on, when it is one of the kinds the policy
    weighs apart (OTHER: the code the value came from, read as it is)."""

    OTHER = "other"
    MODULE_OUTPUT = "module-output"  # what an nn.Module returned, or computed from it
    MODULE_STATE = "module-state"  # an nn.Module's parameters and buffers
    NAME = "name"  # a name alone says so (`*_gpu`, `loss`, `counts_cpu`)
    USE = "use"  # how the code uses it (what only a host tensor or a tensor can do)
    ANNOTATION = "annotation"  # a parameter annotated as a tensor (or an argument of `forward`): callers decide
    CALLER = "caller"  # what the project's callers pass a parameter
    # Made on or moved to a device the code names (`device=dev`, `.to(dev)`): where the name comes from
    # decides it. A variable or parameter (`dev`) is whatever callers or configuration make it, the host
    # as often as not; a value's own device (`x.device`) is where that value already lives.
    SPEC_NAME = "device-variable"
    SPEC_OF_VALUE = "device-of-value"


class Reach(str, enum.Enum):
    """Whether ordinary use of the code reaches a CUDA GPU where the finding is."""

    CUDA = "cuda"
    ACCELERATOR = "accelerator"  # a branch for another accelerator (NPU, XPU, MPS, TPU)
    HOST_SIDE = "host-side"  # a class that prepares a model's inputs on the host (a multimodal processor)


@pickled_by_fields
@dataclass(frozen=True)
class Evidence:
    """Everything that decides a finding's confidence (`synclint.policy.confidence`)."""

    value: Certainty  # how sure it is that the host waits on a GPU value here (the model and the rule's pattern)
    runs: str  # how often the line runs: a context of `synclint.config.CONTEXTS` (`init`: once)
    basis: Basis = Basis.OTHER
    reach: Reach = Reach.CUDA
    facts: tuple[str, ...] = ()  # each fact in words, in the order found: rendered as `because`
    # Whether the finding is the host waiting where it is (False: a bug whatever how often it runs, host
    # work that grows with the output, or a call whose wait is counted where it happens).
    wait: bool = True
    # The loops around the line, as the file shows them: "model" (one runs a model: a training,
    # generation or decode loop), "plain" (it repeats as often as its function runs), "" (none).
    loop: str = ""

    @property
    def because(self) -> str | None:
        return "; ".join(self.facts) if self.facts else None

    def with_fact(self, fact: str | None, **changes) -> "Evidence":
        """This evidence with one more fact (in words) and the fields it changes."""
        facts = self.facts + (fact,) if fact else self.facts
        return replace(self, facts=facts, **changes)

    def as_json(self) -> dict:
        return {"certainty": str(self.value), "basis": self.basis.value, "runs": self.runs, "reach": self.reach.value,
                "wait": self.wait}
