"""The one policy: what a user sees of a finding, decided from its evidence, in one place.

A finding's confidence estimates the chance that the host waits on a path that repeats. Two parts:

* What holds by definition: a line that runs once (set-up code, an error path, a `__main__` block)
  never repeats; a branch for another accelerator, or a class that prepares
  a model's inputs on the host, does not wait for a CUDA GPU in ordinary use. Those are low.
* What is measured: every other finding is looked up in `synclint.policy_table`, which
  `bench/calibrate.py` writes from labelled findings (a finding on a line that ran in a traced
  workload either synced or did not). A row is a kind of evidence with its count and how many
  synced; the most specific kind with enough examples decides: high at `HIGH_AT` or better with
  `ENOUGH_FOR_HIGH` examples, medium (the default view) at `MEDIUM_AT` or better, low otherwise.
  `MEDIUM_AT` is calibrated with the table: the kinds are taken from the most precise down for as
  long as the default view of the calibration packages stays at the precision bench/calibrate.py aims at.

Uncalibrated (an empty table, or `SYNCLINT_UNCALIBRATED=1` in the environment: what the tests of rules
run under, so that new labelled data does not change what they check), the device model's certainty is
the confidence, lowered by the same definitions, and capped at medium once every so many steps.
  A finding whose kinds all have too few examples says so and stays low.

Nothing else sets or changes a finding's confidence (tests/test_policy.py checks the code for it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from synclint.evidence import Evidence, Reach
from synclint.model import ENGINE_CODES, Confidence, Finding
from synclint.policy_table import MEDIUM_AT, ROWS

HIGH_AT = 0.95
# Examples a kind needs before its precision decides: with 12, a precision of 0.5 is known to within
# about +-0.28 (95%), too loose to tell a kind worth showing from one that is not, and a row of a dozen
# examples once hid a seed pattern (issue 43); with 20, to within about +-0.22. A kind with fewer backs
# off to a coarser one.
ENOUGH = 20
ENOUGH_FOR_HIGH = 30
UNCALIBRATED = "SYNCLINT_UNCALIBRATED"

# How often a line runs, as the policy groups the contexts: every step, every so many, or not known
# (test code runs as often as its tests; the view leaves it out unless asked). `init` runs once.
REPEATS = {"loop": "repeats", "step": "repeats", "interval": "interval", "code": "code", "test": "test"}


@dataclass(frozen=True)
class Decision:
    confidence: Confidence
    row: tuple[str, ...] | None  # the kind of evidence that decided it (None: by definition)
    examples: int = 0
    synced: int = 0

    @property
    def precision(self) -> float | None:
        return self.synced / self.examples if self.examples else None


def kinds(code: str, evidence: Evidence) -> list[tuple[str, ...]]:
    """The kinds of evidence a finding belongs to, the most specific first: the rows it is looked up by."""
    runs = REPEATS.get(evidence.runs, evidence.runs)
    value, basis = str(evidence.value), evidence.basis.value
    return [
        (code, value, basis, runs),
        (code, value, runs),
        (code, value),
        ("*", value, basis, runs),
        ("*", value, runs),
    ]


def decided_by_definition(evidence: Evidence | None) -> bool:
    """Whether no measurement can change the finding's confidence (see the module's docstring)."""
    return (evidence is None or evidence.reach is not Reach.CUDA
            or (evidence.wait and evidence.runs not in REPEATS))


def table() -> dict[tuple[str, ...], tuple[int, int]]:
    """The measured rows in force: none when uncalibrated."""
    return {} if os.environ.get(UNCALIBRATED) else ROWS


def decide(code: str, evidence: Evidence | None) -> Decision:
    if code in ENGINE_CODES or evidence is None:
        return Decision(Confidence.HIGH, None)  # a file synclint could not check: always shown
    if decided_by_definition(evidence):
        return Decision(Confidence.LOW, None)
    rows = table()
    if not rows:
        prior = Confidence(int(evidence.value))
        return Decision(min(prior, Confidence.MEDIUM) if evidence.runs == "interval" and evidence.wait else prior, None)
    for kind in kinds(code, evidence):
        examples, synced = rows.get(kind, (0, 0))
        if examples < ENOUGH:
            continue
        precision = synced / examples
        if precision >= HIGH_AT and examples >= ENOUGH_FOR_HIGH:
            return Decision(Confidence.HIGH, kind, examples, synced)
        if precision >= MEDIUM_AT:
            return Decision(Confidence.MEDIUM, kind, examples, synced)
        return Decision(Confidence.LOW, kind, examples, synced)
    return Decision(Confidence.LOW, None)


def confidence(code: str, evidence: Evidence | None) -> Confidence:
    """The confidence of a finding of rule `code` with this evidence."""
    return decide(code, evidence).confidence


def decided(finding: Finding) -> Finding:
    """`finding` at the confidence its evidence earns."""
    return replace(finding, confidence=confidence(finding.code, finding.evidence))


def resolve(finding: Finding, evidence: Evidence) -> Finding:
    """`finding` with evidence solved after the check (how often its function runs): its context,
    `because` and confidence follow from it."""
    return replace(finding, evidence=evidence, context=evidence.runs, because=evidence.because,
                   confidence=confidence(finding.code, evidence))
