"""The values of the device model and how they join: where a value lives, how sure, and why.

No libcst here: these values travel in project summaries between processes and in the cache.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from synclint.model import pickled_by_fields
from synclint.evidence import Basis, Certainty


class Place(str, enum.Enum):
    # A tensor on the accelerator: proven (high), likely (medium: model code, a program that puts
    # its model on the GPU), or a tensor of unknown device (low).
    DEVICE = "device"
    HOST_TENSOR = "host-tensor"  # a torch tensor in host memory
    HOST = "host"  # numpy arrays, Python numbers, lists, None, objects that are not tensors
    # An nn.Module (a model, a layer, a loss module): no tensor itself, but calling it gives tensors,
    # and its parameters are tensors. Its confidence says how sure it is on the accelerator.
    MODULE = "module"
    UNKNOWN = "unknown"


# How the device model explains what calling an nn.Module returned (`Evaluator.module_output`).
MODULE_OUTPUT = "is a module's output"
MODULE_RUN = "runs a module on the GPU"


@pickled_by_fields
@dataclass(frozen=True)
class Where:
    place: Place
    certainty: Certainty
    because: str | None = None
    is_none: bool = False  # the literal None: joins as "nothing here"
    # A tuple or list built here: where each of its positions lives (`return ids, count`), and
    # where the elements appended to a list live (`parts.append(t)` before `torch.cat(parts)`).
    items: tuple["Where", ...] | None = None
    element: "Where | None" = None
    mapping: bool = False  # a dict: `element` is where its values live; iterating it gives its keys
    # A device spec (`"cuda"`, `"cpu"`, `torch.device("cuda:0")`, `f"cuda:{rank}"`): a host value that
    # names a place; `spec` is where a tensor made on it or moved to it lives. Joined over branches
    # (`"cuda" if c else "cpu"` is the GPU on one path: a copy to it may block).
    spec: "Where | None" = None
    # A dict display with constant string keys (`{"loss": loss, "n": n}`): `items` holds its values, by these keys.
    keys: tuple[str, ...] | None = None
    # A dict with more keys than `keys` (a tokenizer's output after `inputs["ids"] = ids.to(d)`): the
    # values of the others live where `element` says.
    more_keys: bool = False
    # Computed from a tensor by a tensor method (`out.sum()`, `logits.argmax(-1)`): a tensor, never one of
    # the Python numbers a module may return beside its activations.
    computed: bool = False
    basis: Basis = Basis.OTHER  # what the verdict rests on, when the policy weighs it apart
    one_path: bool = False  # on the GPU on one path of a branch only (its `because` says so once)

    @property
    def on_device(self) -> bool:
        return self.place is Place.DEVICE

    @property
    def on_host(self) -> bool:
        return self.place in (Place.HOST, Place.HOST_TENSOR)

    @property
    def is_tensor(self) -> bool:
        return self.place in (Place.DEVICE, Place.HOST_TENSOR)

    @property
    def is_module(self) -> bool:
        return self.place is Place.MODULE

    @property
    def from_module_output(self) -> bool:
        """Whether the evidence is that a module call returned it (activations, or what a
        module returns beside them: a shape, a cache)."""
        return self.basis is Basis.MODULE_OUTPUT

    def weaker(self, cap: Certainty) -> "Where":
        spec = self.spec.weaker(cap) if self.spec is not None else None
        return replace(self, certainty=min(self.certainty, cap), spec=spec)

    def value_of(self, key: str) -> "Where | None":
        """Where the value under `key` of this dict lives, when it was built where we can see it."""
        if self.keys is None or self.items is None or key not in self.keys:
            return None
        return self.items[self.keys.index(key)]

    def item(self, position: int) -> "Where | None":
        """Where position `position` of this tuple lives, when it was built where we can see it."""
        if self.keys is not None or self.items is None or not -len(self.items) <= position < len(self.items):
            return None
        return self.items[position]


# Names in scope and where their values live (the flow walker keeps one before each statement).
Env = dict[str, Where]

UNKNOWN = Where(Place.UNKNOWN, Certainty.LOW)
HOST = Where(Place.HOST, Certainty.HIGH)
NONE = Where(Place.HOST, Certainty.HIGH, is_none=True)


def guess_host(because: str) -> Where:
    """A host value that nothing proves: an element of a container whose elements are not known, a
    method's result of a host value. What only a tensor can do (`x.backward()`, `x.grad`) overrules it."""
    return Where(Place.HOST, Certainty.LOW, because)


def is_host_guess(where: Where) -> bool:
    """A host value that only a guess makes host (`guess_host`): not a literal, numpy, `.item()`, a
    container built here, nor a host value by its name (medium)."""
    return (where.place is Place.HOST and where.certainty is Certainty.LOW and not where.is_none
            and where.items is None and where.element is None and not where.mapping and where.spec is None)


def device(because: str, confidence: Certainty = Certainty.HIGH) -> Where:
    return Where(Place.DEVICE, confidence, because)


def host_tensor(because: str | None = None) -> Where:
    return Where(Place.HOST_TENSOR, Certainty.HIGH, because)


def join(a: Where, b: Where) -> Where:
    """The value is `a` on one path and `b` on another."""
    if a.is_none or b.is_none:
        other = b if a.is_none else a
        if other.spec is not None:  # `"cuda" if c else None`: None is the default device (the CPU) or no move
            return replace(other, spec=join_spec(other.spec, None))
        return other
    if a.place is b.place:
        joined = a if a.certainty <= b.certainty else b
        if a.place is Place.HOST and (a.items or b.items or a.element or b.element):
            same_keys = a.keys == b.keys
            joined = replace(joined, items=_join_items(a.items, b.items) if same_keys else None,
                             keys=a.keys if same_keys else None, element=join_element(a.element, b.element),
                             more_keys=same_keys and (a.more_keys or b.more_keys))
        if a.spec is not None or b.spec is not None:
            joined = replace(joined, spec=join_spec(a.spec, b.spec))
        return joined
    if a.place is Place.UNKNOWN or b.place is Place.UNKNOWN:
        known = b if a.place is Place.UNKNOWN else a
        weaker = known.weaker(Certainty.MEDIUM)
        if known.spec is not None:  # `d if d is not None else "cpu"`, `d` unknown: the host on one path only
            weaker = replace(weaker, spec=join_spec(known.spec, None))
        return weaker
    if Place.DEVICE in (a.place, b.place):
        dev = a if a.on_device else b
        return _one_path(dev)
    return host_tensor() if Place.HOST_TENSOR in (a.place, b.place) else HOST


def join_spec(a: Where | None, b: Where | None) -> Where | None:
    """The place a device spec names when it is `a` on one path and `b` on another (None: a spec
    that says nothing, or no spec). The GPU on one path is the GPU, not surely (a copy to it may
    block); the host is the host only on every path."""
    if a is None or b is None or a.place is Place.UNKNOWN or b.place is Place.UNKNOWN:
        known = b if a is None or a.place is Place.UNKNOWN else a
        if known is not None and known.on_device:
            return _one_path(known)
        return None
    if a.on_device and b.on_device:
        return a if a.certainty <= b.certainty else b
    if a.on_device or b.on_device:
        return _one_path(a if a.on_device else b)
    return join(a, b)


def _one_path(dev: Where) -> Where:
    """A GPU value on one path of a branch: likely, at most, and said once."""
    because = dev.because + " on one path" if dev.because is not None and not dev.one_path else dev.because
    return Where(Place.DEVICE, min(dev.certainty, Certainty.MEDIUM), because, basis=dev.basis, one_path=True)


def _join_items(a: tuple[Where, ...] | None, b: tuple[Where, ...] | None) -> tuple[Where, ...] | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(join(x, y) for x, y in zip(a, b))


def join_element(a: Where | None, b: Where | None) -> Where | None:
    """An empty list on one path and a list of host tensors on the other holds host tensors."""
    if a is None or b is None:
        return a or b
    return join(a, b)


def join_all(items: Iterable[Where]) -> Where:
    result: Where | None = None
    for item in items:
        result = item if result is None else join(result, item)
    return result if result is not None else UNKNOWN


def combine(operands: Sequence[Where]) -> Where:
    """The result of arithmetic or comparison between operands: a device tensor wins, unless
    only a guess says so and an operand is surely a host tensor: torch refuses to mix a CUDA
    tensor with a CPU tensor that has dimensions (`mask & (ids.cpu() == k)` is a CPU mask),
    so the guess is what is wrong."""
    devices = [w for w in operands if w.on_device]
    host = next((w for w in operands if w.place is Place.HOST_TENSOR and w.certainty is Certainty.HIGH), None)
    if devices and host is not None and all(w.certainty < Certainty.HIGH for w in devices):
        return host_tensor(host.because)
    if devices:
        return min(devices, key=lambda w: w.certainty)
    hosts = [w for w in operands if w.place is Place.HOST_TENSOR]
    if hosts:
        surest = max(hosts, key=lambda w: w.certainty)
        return host_tensor() if surest.certainty is Certainty.HIGH else surest
    if operands and all(w.place is Place.HOST for w in operands):
        return HOST
    return UNKNOWN


def is_sure_host(where: Where) -> bool:
    """A host tensor the code proves, not one path's guess (`return torch.tensor([])` beside
    something unknown): made on the CPU, or a host tensor for a reason about the value itself."""
    return where.place is Place.HOST_TENSOR and (
        where.certainty is Certainty.HIGH or where.basis in (Basis.NAME, Basis.USE))
