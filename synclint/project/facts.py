"""The plain data of project analysis: what one file says about itself, and what the index
tells a file about the rest of the project.

No libcst: these objects travel between processes and live in the cache. The device model
(`synclint.devices`) reads the facts of an `Answers`; nothing here reads the device model
but its value lattice.
"""

from __future__ import annotations

import functools
import hashlib
import io
import pickle
from dataclasses import dataclass, field

from synclint.devices.lattice import Where
from synclint.model import pickled_by_fields
from synclint.evidence import Certainty


@dataclass(frozen=True)
class ProjectFile:
    """What the engine needs to place one file in the project."""

    module: str = ""  # dotted name; "" for a file outside any package
    package: str = ""  # where its relative imports start
    answers: "Answers | None" = None  # the solved facts it uses from the rest of the project
    host_fields: frozenset[str] = frozenset()  # names of data the project keeps on the CPU (see host_field_names)




# ---- what one file says about itself -----------------------------------------------------


@pickled_by_fields
@dataclass(frozen=True)
class SyncSite:
    """A place where a function makes the host wait, as a rule reported it."""

    code: str
    text: str  # the expression, on one line
    path: str
    row: int
    certainty: Certainty
    once: str | None = None  # the test of the memoizing `if` it sits under (`self._t is None`), if any
    # What the value that syncs may come from beyond the file's own evidence: `call:pkg.mod.f`
    # (what a project function returns) and `param:x` (what callers pass its function's parameter
    # x). The index makes the site as sure as the surest of them it solves to a GPU tensor.
    depends: tuple[str, ...] = ()
    # The parameter of its function whose truth the `if` around it tests (`if strict:`), when it
    # syncs only on that branch: its name, its position among the positional parameters (None:
    # keyword-only), and whether a call that leaves it out leaves the branch off (a false default).
    flag: str | None = None
    flag_position: int | None = None
    flag_off_by_default: bool = False

    def rank(self) -> tuple[int, bool, int]:
        """Sorts the surest site first, then one that syncs whatever its flags, then the first in the file."""
        return -self.certainty, self.flag is not None, self.row


@pickled_by_fields
@dataclass
class FunctionSummary:
    qualname: str  # "pkg.mod.func", "pkg.mod.Class.method"
    path: str
    row: int
    is_property: bool = False
    deprecated: str | None = None  # the text of an @deprecated decorator
    sync: SyncSite | None = None  # the first place in its own body where it syncs
    syncs_if: tuple[SyncSite, ...] = ()  # other syncs below high that other facts may make surer (`SyncSite.depends`)
    calls: tuple[str, ...] = ()  # project functions it calls, in order ("pkg.mod.Class.m" for self.m())
    # Of `calls`, those it calls only from code that runs once per process (set-up by its name, a
    # `__main__` block): they are reached as once (synclint.project.how_often).
    calls_once: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()  # attributes it reads that may be properties ("pkg.mod.Class.x")
    returns: Where | None = None  # where its result lives, when known from its own body
    returns_calls: tuple[str, ...] = ()  # the calls whose results it returns, when that is unknown
    params: tuple[str, ...] = ()  # the parameters a call fills by position (no `self`), then keyword-only ones
    positional: int = 0  # how many of `params` a call fills by position
    device_args: dict[str, dict[int | str, Where]] = field(default_factory=dict)  # callee -> GPU tensors it passes, by position or keyword
    # callee -> by position or keyword, what the other arguments it passes may come from (as `SyncSite.depends`)
    passes: dict[str, dict[int | str, tuple[str, ...]]] = field(default_factory=dict)
    weak_params: frozenset[str] = frozenset()  # parameters a caller's GPU tensor would make surer
    relayed: frozenset[str] = frozenset()  # weak parameters it passes on to project functions (`passes`)
    # The call graph beyond `calls` (synclint.project.callgraph): methods of the objects kept in
    # containers and local variables, functions passed as arguments (`partial(f)`, `map(self._g, xs)`).
    dispatch: tuple[str, ...] = ()
    model_loop_calls: tuple[str, ...] = ()  # what it calls in a loop that runs a model (a training or decode loop)
    plain_loop_calls: tuple[str, ...] = ()  # what it calls in its other loops
    runs_model: bool = False  # its body runs a step of training or inference (`frequency.runs_model_call`)
    cached: bool = False  # `@lru_cache` and the like: its body runs once per distinct argument
    registered: bool = False  # a decorator may hand it to a registry that calls it (`frequency.is_registered`)


@pickled_by_fields
@dataclass
class ClassSummary:
    qualname: str
    path: str
    row: int
    bases: tuple[str, ...]  # qualified names
    attrs: dict[str, Where] = field(default_factory=dict)  # self.x: device or host tensors, and device specs
    fields: frozenset[str] = frozenset()  # attributes stored as plain data (not properties)


@pickled_by_fields
@dataclass(frozen=True)
class Needs:
    """The names a file uses that other files may define: what its answers are made of."""

    calls: frozenset[str] = frozenset()  # qualified names of callees (and self-attribute reads)
    classes: frozenset[str] = frozenset()  # classes it derives from or annotates values with
    attributes: frozenset[str] = frozenset()  # attribute names read (for properties and base classes' attributes)
    # Of `calls`, those whose chain to a sync can reach a finding of the file (called in a loop
    # or a per-step method, or by a function of the file that is), and those whose result the
    # file uses (not `f(x)` alone on a line): its answers carry only those facts of each.
    chain_calls: frozenset[str] = frozenset()
    value_calls: frozenset[str] = frozenset()


@pickled_by_fields
@dataclass
class ModuleSummary:
    module: str
    path: str
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    needs: Needs = field(default_factory=Needs)
    # (method or function name, keyword) -> what the file's calls pass there: an example of a
    # host tensor the code proves (or None), and whether one call passes a proven GPU tensor.
    keyword_args: dict[tuple[str, str], tuple[str | None, bool]] = field(default_factory=dict)
    # Where the module's code starts running (synclint.project.callgraph): what its top level calls
    # (once, at import or as a script; those in a loop that runs a model: every step), the functions
    # it hands to data loading (`collate_fn=`, `transform=`: they run on the host) and to hooks
    # (`register_forward_hook(f)`: every forward), and the private names its text uses other than
    # where it defines them (a private function no text uses never runs).
    top_calls: tuple[str, ...] = ()
    top_model_loop_calls: tuple[str, ...] = ()
    host_callbacks: tuple[str, ...] = ()
    hook_callbacks: tuple[str, ...] = ()
    private_names: frozenset[str] = frozenset()


# ---- what the project knows ----------------------------------------------------------------


@pickled_by_fields
@dataclass(frozen=True)
class Chain:
    """How calling a function makes the host wait: the functions down to the sync, then the sync."""

    steps: tuple[str, ...]  # qualified names, from the called function to the one that syncs
    site: SyncSite
    certainty: Certainty

    def describe(self, first: str = "") -> str:
        """`A -> B: `x.item()` at path:row`; `first` replaces the first step's name ("" drops it)."""
        names = [short_name(q) for q in self.steps]
        names[0] = first
        path = " -> ".join(n for n in names if n)
        return f"{path + ': ' if path else ''}`{self.site.text}` at {self.site.path}:{self.site.row}"

    def called_by(self, qualname: str) -> "Chain":
        return Chain((qualname, *self.steps), self.site, self.certainty)


@pickled_by_fields
@dataclass(frozen=True)
class FunctionFact:
    qualname: str  # the function a name resolved to
    path: str
    row: int
    chain: Chain | None = None
    returns: Where | None = None
    is_property: bool = False
    deprecated: str | None = None


@pickled_by_fields
@dataclass(frozen=True)
class PropertyFact:
    """A property whose getter makes the host wait."""

    owner: str  # the class's qualified name
    name: str
    path: str
    row: int
    chain: Chain
    deprecated: str | None = None


@dataclass(frozen=True)
class Answers:
    """The solved facts about names one file uses from the rest of the project (all of them non-trivial):
    what `ProjectIndex.answers_for` tells a file, solved once from summaries that depend on their files alone."""

    functions: dict[str, FunctionFact] = field(default_factory=dict)  # by the name the file asked
    class_attrs: dict[str, dict[str, Where]] = field(default_factory=dict)  # base class -> its attrs
    class_bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # every ancestor of the file's bases
    properties: dict[str, tuple[PropertyFact, ...]] = field(default_factory=dict)  # syncing, by name
    fields: frozenset[str] = frozenset()  # of the attribute names asked, those some class stores as data
    device_params: dict[str, dict[str, Where]] = field(default_factory=dict)  # own function -> GPU tensors its callers pass
    # own function -> its keyword-only parameters that every call in the project naming them
    # fills with a host tensor (vLLM's `embed_input_ids(..., *, is_multimodal=is_mm_embed)`), with why
    host_params: dict[str, dict[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.functions or self.class_attrs or self.properties or self.device_params or self.host_params)

    def digest(self) -> str:
        """Changes when any of the facts changes (the cache keys a second look by it)."""
        return self._digest

    @functools.cached_property
    def _digest(self) -> str:  # asked per file for each round and each cache key: computed once
        canonical = (
            sorted(self.functions.items()),
            sorted((k, sorted(v.items())) for k, v in self.class_attrs.items()),
            sorted(self.class_bases.items()),
            sorted(self.properties.items()),
            sorted(self.fields),
            sorted((k, sorted(v.items())) for k, v in self.device_params.items()),
            sorted((k, sorted(v.items())) for k, v in self.host_params.items()),
        )
        # Pickled without a memo: two equal answers whose facts share objects differently (one
        # just solved, one unpickled from a kept index) must give the same digest.
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=4)
        pickler.fast = True
        pickler.dump(canonical)
        return hashlib.sha256(buffer.getvalue()).hexdigest()


NO_ANSWERS = Answers()


def short_name(qualname: str) -> str:
    """`pkg.mod.Class.method` -> `Class.method`; `pkg.mod.func` -> `func` (for messages)."""
    parts = qualname.split(".")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return ".".join(parts[-2:])
    return parts[-1]
