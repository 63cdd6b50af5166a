"""Project-wide facts: which functions sync, what they return, what classes hold, across files.

A one-file linter cannot see that `meta.seq_lens_cpu` is a property, defined three modules
away, whose getter copies a device tensor to the host (vLLM PR #40654). So every checked
file also yields a `ModuleSummary` (built in `synclint.summaries` from the same traversal and
the same rules' reports that produce its findings, never by rules written twice):

* per function, method and property: the first place where it makes the host wait, the
  project functions it calls and the attributes of `self` it reads, what it returns (a
  device tensor, a host tensor) or which calls' results it returns;
* per class: its bases and what its methods store in `self.x`.

`ProjectIndex` joins the summaries and computes, to a fixpoint over the call graph
(recursion included), a `Chain` for every function that syncs, directly or through the
functions it calls, and the place each function's result lives. A file is then checked
with a `ProjectView`: only the facts about the names it uses from other files. A file whose
view is empty needs no second look (see `synclint.runner`).

Plain data only (no libcst): summaries travel between processes and live in the cache.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import os
import pickle
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from synclint.devices import Place, Where, join
from synclint.model import Confidence, pickled_by_fields


# ---- where a file sits in the project ----------------------------------------------------


def module_name(path: Path) -> tuple[str, str]:
    """The dotted module name of a file and the package its relative imports start from.

    Folders holding an `__init__.py` are packages: `vllm/v1/attention/backend.py` is
    `vllm.v1.attention.backend`, and `vllm/v1/__init__.py` is the package `vllm.v1`.
    """
    parent, name = os.path.split(os.path.abspath(path))
    folder = _package_of(parent)
    if name == "__init__.py":
        return folder, folder
    stem = name.rpartition(".")[0] or name
    return (f"{folder}.{stem}" if folder else stem), folder


@functools.lru_cache(maxsize=4096)
def _package_of(folder: str) -> str:
    """The dotted package a folder is ("" when it holds no `__init__.py`), one lookup per folder."""
    path = Path(folder)
    if not (path / "__init__.py").is_file() or not path.name.isidentifier() or path.parent == path:
        return ""
    parent = _package_of(str(path.parent))
    return f"{parent}.{path.name}" if parent else path.name


def package_root(path: Path) -> Path | None:
    """The outermost package folder holding `path` (the tree its imports resolve in), if any."""
    absolute = os.path.abspath(path)
    is_file = absolute.endswith((".py", ".pyi")) or not os.path.isdir(absolute)  # a source file takes no stat
    root = _package_root_of_folder(os.path.dirname(absolute) if is_file else absolute)
    return _as_path(root) if root is not None else None


@functools.lru_cache(maxsize=4096)
def _as_path(folder: str) -> Path:  # a Path per package root, not one per file
    return Path(folder)


@functools.lru_cache(maxsize=4096)
def _package_root_of_folder(folder: str) -> str | None:  # asked once per file of a package: once per folder
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    parent = os.path.dirname(folder)
    if parent == folder:
        return None
    return _package_root_of_folder(parent) or folder


@dataclass(frozen=True)
class ProjectFile:
    """What the engine needs to place one file in the project."""

    module: str = ""  # dotted name; "" for a file outside any package
    package: str = ""  # where its relative imports start
    view: "ProjectView | None" = None  # facts from the rest of the project
    host_fields: frozenset[str] = frozenset()  # names of data the project keeps on the CPU (see host_field_names)


# vLLM declares which multimodal inputs stay in host memory when they reach the model:
# `image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True)`, as a dict key
# (`"image_grid_thw": ...`), as an item (`fields["image_grid_thw"] = ...`), or as an item named by
# a loop over names (`for key in ("a", "b"): fields[key] = ...`).
_FIELD = re.compile(rb"""(?:\b(\w+)\s*=|["'](\w+)["']\s*:|\[\s*["'](\w+)["']\s*\]\s*=|\[\s*(\w+)\s*\]\s*=)"""
                    rb"""\s*MultiModalFieldConfig\.\w+\(((?:[^()]|\([^()]*\))*)\)""")
_NAMES_LOOP = re.compile(rb"""\bfor\s+(\w+)\s+in\s+[(\[]((?:\s*["']\w+["']\s*,?)+)\s*[)\]]\s*:""")
_STRING = re.compile(rb"""["'](\w+)["']""")
# The model's own step inputs, which a modality's field only shares a name with (`video_input_ids`).
_STEP_INPUTS = frozenset({"input_ids", "positions", "inputs_embeds", "embed_mask", "attention_mask"})
_KEEP_ON_CPU = re.compile(rb"\bkeep_on_cpu\s*=\s*True\b")
_MODALITY_PREFIX = re.compile(r"^(images?|videos?|audios?|vision)_(?=\w*_)")


def field_declarations(data: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """The multimodal fields a file declares kept on the CPU, and those it leaves to the
    device, each with the name the code gives it once the modality is known
    (`image_grid_thw` -> `grid_thw`; only where the rest is still specific: `image_sizes`
    does not make `sizes` a host name)."""
    host: set[str] = set()
    other: set[str] = set()
    if b"MultiModalFieldConfig" in data:
        for match in _FIELD.finditer(data):
            if match.group(4) is not None:  # `fields[key] = ...`: the names of the nearest loop over `key`
                loops = [m for m in _NAMES_LOOP.finditer(data, 0, match.start()) if m.group(1) == match.group(4)]
                declared = [n.decode() for n in _STRING.findall(loops[-1].group(2))] if loops else []
            else:
                declared = [(match.group(1) or match.group(2) or match.group(3)).decode()]
            for name in declared:
                names = {name, _MODALITY_PREFIX.sub("", name)} - _STEP_INPUTS
                (host if _KEEP_ON_CPU.search(match.group(5)) else other).update(names)
    return frozenset(host), frozenset(other)


_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)


def imported_modules(data: bytes, package: str) -> set[str]:
    """The modules a file's `from X import a, b` lines may name (`X`, `X.a`, `X.b`), relative
    imports resolved from `package` (a cheap look at the text: for declarations, not for calls)."""
    found: set[str] = set()
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode()
        level = len(module) - len(module.lstrip("."))
        if level:
            parts = package.split(".") if package else []
            if level - 1 >= len(parts):
                continue
            rest = module[level:]
            module = ".".join([*parts[: len(parts) - (level - 1)], *([rest] if rest else [])])
        found.add(module)
        for name in re.findall(rb"\w+", match.group(2)):
            found.add(f"{module}.{name.decode()}")
    return found


def host_field_names(declarations: Iterable[tuple[frozenset[str], frozenset[str]]]) -> frozenset[str]:
    """The fields that every declaration in the project keeps on the CPU."""
    host: set[str] = set()
    other: set[str] = set()
    for kept, left in declarations:
        host |= kept
        other |= left
    return frozenset(host - other)


# ---- what one file says about itself -----------------------------------------------------


@pickled_by_fields
@dataclass(frozen=True)
class SyncSite:
    """A place where a function makes the host wait, as a rule reported it."""

    code: str
    text: str  # the expression, on one line
    path: str
    row: int
    confidence: Confidence
    once: str | None = None  # the test of the memoizing `if` it sits under (`self._t is None`), if any


@pickled_by_fields
@dataclass
class FunctionSummary:
    qualname: str  # "pkg.mod.func", "pkg.mod.Class.method"
    path: str
    row: int
    is_property: bool = False
    deprecated: str | None = None  # the text of an @deprecated decorator
    sync: SyncSite | None = None  # the first place in its own body where it syncs
    calls: tuple[str, ...] = ()  # project functions it calls, in order ("pkg.mod.Class.m" for self.m())
    reads: tuple[str, ...] = ()  # attributes it reads that may be properties ("pkg.mod.Class.x")
    returns: Where | None = None  # where its result lives, when known from its own body
    returns_calls: tuple[str, ...] = ()  # the calls whose results it returns, when that is unknown
    params: tuple[str, ...] = ()  # the parameters a call fills by position (no `self`), then keyword-only ones
    positional: int = 0  # how many of `params` a call fills by position
    device_args: dict[str, dict[int | str, Where]] = field(default_factory=dict)  # callee -> GPU tensors it passes, by position or keyword
    weak_params: frozenset[str] = frozenset()  # parameters a caller's GPU tensor would make surer


@pickled_by_fields
@dataclass
class ClassSummary:
    qualname: str
    path: str
    row: int
    bases: tuple[str, ...]  # qualified names
    attrs: dict[str, Where] = field(default_factory=dict)  # self.x: device or host tensors
    fields: frozenset[str] = frozenset()  # attributes stored as plain data (not properties)


@pickled_by_fields
@dataclass(frozen=True)
class Needs:
    """The names a file uses that other files may define: what its view is made of."""

    calls: frozenset[str] = frozenset()  # qualified names of callees (and self-attribute reads)
    classes: frozenset[str] = frozenset()  # classes it derives from or annotates values with
    attributes: frozenset[str] = frozenset()  # attribute names read (for properties and base classes' attributes)
    # Of `calls`, those whose chain to a sync can reach a finding of the file (called in a loop
    # or a per-step method, or by a function of the file that is), and those whose result the
    # file uses (not `f(x)` alone on a line): the view carries only those facts of each.
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


# ---- what the project knows ----------------------------------------------------------------


@pickled_by_fields
@dataclass(frozen=True)
class Chain:
    """How calling a function makes the host wait: the functions down to the sync, then the sync."""

    steps: tuple[str, ...]  # qualified names, from the called function to the one that syncs
    site: SyncSite
    confidence: Confidence

    def describe(self, first: str = "") -> str:
        """`A -> B: `x.item()` at path:row`; `first` replaces the first step's name ("" drops it)."""
        names = [short_name(q) for q in self.steps]
        names[0] = first
        path = " -> ".join(n for n in names if n)
        return f"{path + ': ' if path else ''}`{self.site.text}` at {self.site.path}:{self.site.row}"

    def called_by(self, qualname: str) -> "Chain":
        return Chain((qualname, *self.steps), self.site, self.confidence)


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
class ProjectView:
    """The facts about names one file uses from the rest of the project (all of them non-trivial)."""

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
        """Changes when any fact in the view changes (the cache keys a second look by it)."""
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
        # Pickled without a memo: two equal views whose facts share objects differently (one
        # just solved, one unpickled from a kept index) must give the same digest.
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=4)
        pickler.fast = True
        pickler.dump(canonical)
        return hashlib.sha256(buffer.getvalue()).hexdigest()


EMPTY_VIEW = ProjectView()


def resolve_in(functions: dict[str, FunctionSummary], classes: dict[str, ClassSummary], qualname: str,
               resolved: dict[str, str | None]) -> str | None:
    """The function of `functions` a called name means: itself, or a method found through the
    class's bases in `classes` (`resolved` remembers the answers)."""
    if qualname in resolved:
        return resolved[qualname]
    resolved[qualname] = None  # a cycle of bases resolves to nothing
    found = None
    if qualname in functions:
        found = qualname
    else:
        owner, _, name = qualname.rpartition(".")
        cls = classes.get(owner)
        if cls is not None:
            for base in cls.bases:
                found = resolve_in(functions, classes, f"{base}.{name}", resolved)
                if found is not None:
                    break
    resolved[qualname] = found
    return found


class ProjectIndex:
    """The summaries of many modules, and what follows from them (`solve`)."""

    def __init__(self, summaries: Iterable[ModuleSummary], external: ProjectView | None = None) -> None:
        self.external = external or EMPTY_VIEW
        self.functions: dict[str, FunctionSummary] = {}
        self.classes: dict[str, ClassSummary] = {}
        self.host_keywords: dict[tuple[str, str], str] = {}  # (name, keyword) -> a call passing a host tensor
        on_device: set[tuple[str, str]] = set()
        for summary in summaries:
            self.functions.update(summary.functions)
            self.classes.update(summary.classes)
            for key, (example, device_seen) in summary.keyword_args.items():
                if device_seen:
                    on_device.add(key)
                elif example is not None and (key not in self.host_keywords or example < self.host_keywords[key]):
                    # The first by its text, not by the files' order: when another look at one
                    # file adds or drops an example, the others' views keep theirs.
                    self.host_keywords[key] = example
        for key in on_device:
            self.host_keywords.pop(key, None)
        self._resolved: dict[str, str | None] = {}
        self.chains: dict[str, Chain] = {}
        self.returns: dict[str, Where] = {}
        self._attrs: dict[str, dict[str, Where]] = {}
        self._properties: dict[str, list[PropertyFact]] | None = None
        self._fields: set[str] | None = None
        self._solve()
        self.device_params = self._solve_device_params()

    # ---- resolution ------------------------------------------------------------------

    def resolve(self, qualname: str) -> str | None:
        """The function a called name means: itself, or a method found through the class's bases."""
        return resolve_in(self.functions, self.classes, qualname, self._resolved)

    def fact(self, qualname: str) -> FunctionFact | None:
        """What calling `qualname` does, from this index or from the external view."""
        target = self.resolve(qualname)
        if target is None:
            return self.external.functions.get(qualname)
        func = self.functions[target]
        return FunctionFact(target, func.path, func.row, self.chains.get(target), self.returns.get(target),
                            func.is_property, func.deprecated)

    def class_attrs(self, qualname: str) -> dict[str, Where]:
        """`self.x` facts of a class, its bases' first (an attribute a subclass sets wins)."""
        if qualname in self._attrs:
            return self._attrs[qualname]
        external = self.external.class_attrs.get(qualname)
        if external is not None and qualname not in self.classes:
            return external
        attrs: dict[str, Where] = {}
        self._attrs[qualname] = attrs  # a cycle of bases sees a partial answer
        cls = self.classes.get(qualname)
        if cls is not None:
            for base in cls.bases:
                attrs.update(self.class_attrs(base))
            attrs.update(cls.attrs)
        return attrs

    def ancestors(self, qualname: str) -> list[str]:
        """The class and every base known here or in the view, nearest first."""
        seen: list[str] = []
        pending = [qualname]
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.append(name)
            cls = self.classes.get(name)
            pending.extend(cls.bases if cls is not None else self.external.class_bases.get(name, ()))
        return seen

    def is_known_class(self, qualname: str) -> bool:
        return qualname in self.classes or qualname in self.external.class_bases

    # ---- the fixpoint ------------------------------------------------------------------

    def _solve(self) -> None:
        callers: dict[str, list[str]] = {}
        pending: deque[str] = deque()
        for qual, func in self.functions.items():
            for callee in func.calls:
                target = self.resolve(callee)
                if target is not None:
                    callers.setdefault(target, []).append(qual)
                else:
                    self._seed_external(qual, callee, pending, properties_only=False)
            for read in func.reads:
                target = self.resolve(read)
                if target is not None and self.functions[target].is_property:
                    callers.setdefault(target, []).append(qual)
                elif target is None:
                    self._seed_external(qual, read, pending, properties_only=True)
            if func.sync is not None:
                self.chains[qual] = Chain((qual,), func.sync, func.sync.confidence)
                pending.append(qual)
        # Breadth first from the functions that sync: every caller gets the shortest chain.
        while pending:
            callee = pending.popleft()
            chain = self.chains[callee]
            for caller in callers.get(callee, ()):
                if caller not in self.chains:
                    self.chains[caller] = chain.called_by(caller)
                    pending.append(caller)
        self._solve_returns()

    def _seed_external(self, caller: str, callee: str, pending: deque[str], properties_only: bool) -> None:
        fact = self.external.functions.get(callee)
        if fact is None or fact.chain is None or (properties_only and not fact.is_property):
            return
        if caller not in self.chains:
            self.chains[caller] = fact.chain.called_by(caller)
            pending.append(caller)

    def _solve_returns(self) -> None:
        for qual, func in self.functions.items():
            if func.returns is not None:
                self.returns[qual] = func.returns
        symbolic = [(q, f) for q, f in self.functions.items() if f.returns is None and f.returns_calls]
        for _ in range(10):  # chains of helpers returning helpers' results; bounded
            changed = False
            for qual, func in symbolic:
                found = [self._returned(callee) for callee in func.returns_calls]
                if any(w is None for w in found):
                    continue  # one path returns something unknown: say nothing
                result = found[0]
                for other in found[1:]:
                    result = join(result, other)
                if result.place is not Place.UNKNOWN and self.returns.get(qual) != result:
                    self.returns[qual] = result
                    changed = True
            if not changed:
                break

    def _returned(self, callee: str) -> Where | None:
        target = self.resolve(callee)
        if target is not None:
            return self.returns.get(target)
        fact = self.external.functions.get(callee)
        return fact.returns if fact is not None else None

    # ---- properties -------------------------------------------------------------------

    def property_map(self) -> dict[str, list[PropertyFact]]:
        """Syncing properties defined in the indexed files, by name."""
        if self._properties is None:
            self._properties = {}
            for qual, func in self.functions.items():
                chain = self.chains.get(qual)
                if func.is_property and chain is not None:
                    owner, _, prop = qual.rpartition(".")
                    fact = PropertyFact(owner, prop, func.path, func.row, chain, func.deprecated)
                    self._properties.setdefault(prop, []).append(fact)
        return self._properties

    def syncing_properties(self, name: str) -> list[PropertyFact]:
        """The properties called `name`, here or in the view, whose getter makes the host wait."""
        return self.property_map().get(name, []) + list(self.external.properties.get(name, ()))

    def is_plain_field(self, name: str) -> bool:
        """Whether some class stores an attribute `name` as data: a read of `x.name` on a value
        of unknown class may be that field rather than a property."""
        return name in self._plain_fields() or name in self.external.fields

    def _plain_fields(self) -> set[str]:
        if self._fields is None:
            self._fields = set()
            for cls in self.classes.values():
                self._fields.update(cls.fields)
        return self._fields

    # ---- a smaller copy to keep -------------------------------------------------------------

    def snapshot(self, summaries: dict[str, ModuleSummary]) -> tuple["ProjectIndex", dict[str, ModuleSummary]]:
        """This solved index and the summaries, without what only solving needed (calls, reads)
        and with each file's needs cut to the names that carry a fact: what `view_for` reads.
        Used to start the next run over the same files (synclint.cache.ProjectSnapshot), or over
        some of them (synclint.cache.PackageState)."""
        kept = copy.copy(self)
        kept._properties, kept._fields = self.property_map(), self._plain_fields()
        # A function keeps what `fact` reads; one with nothing to tell (no chain, no returns) is
        # kept as a name only, which `resolve` still needs (a method overriding one that syncs).
        # Classes keep their bases and `self` tensors (their plain fields are in `_fields`).
        nothing = FunctionSummary("", "", 0)
        kept.functions = {q: FunctionSummary("", f.path, f.row, f.is_property, f.deprecated)
                          if q in self.chains or q in self.returns else nothing for q, f in self.functions.items()}
        kept.classes = {q: replace(c, fields=frozenset()) for q, c in self.classes.items()}
        kept._resolved, kept._attrs = {}, {}
        # The attribute names a view may ask about: syncing properties, and tensors classes keep in `self`.
        attributes = self.property_map().keys() | {name for cls in self.classes.values() for name in cls.attrs}
        meaningful = {name for name in {c for m in summaries.values() for c in m.needs.calls}
                      if (fact := self.fact(name)) is not None and (fact.chain is not None or fact.returns is not None)}
        small = {}
        for path, summary in summaries.items():
            wanted = summary.needs
            needs = replace(wanted, calls=wanted.calls & meaningful, attributes=wanted.attributes & attributes,
                            chain_calls=wanted.chain_calls & meaningful, value_calls=wanted.value_calls & meaningful)
            # view_for reads a summary's function names, and the keyword-only parameters.
            functions = {q: replace(nothing, params=f.params[f.positional:]) if len(f.params) > f.positional else nothing
                         for q, f in summary.functions.items()}
            small[path] = replace(summary, functions=functions, needs=needs)
        return kept, small

    def _solve_device_params(self) -> dict[str, dict[str, Where]]:
        """For each function, the parameters some caller fills with a GPU tensor (the surest one)."""
        found: dict[str, dict[str, Where]] = {}
        for caller in self.functions.values():
            for callee, args in caller.device_args.items():
                target = self.resolve(callee)
                if target is None:
                    continue
                func = self.functions[target]
                for key, where in args.items():
                    if isinstance(key, int):
                        name = func.params[key] if key < func.positional else None
                    else:
                        name = key if key in func.params else None
                    if name is None or name not in func.weak_params:
                        continue
                    known = found.setdefault(target, {}).get(name)
                    if known is None or where.confidence > known.confidence:
                        found[target][name] = where
        return found

    # ---- what one file needs ---------------------------------------------------------------

    def view_for(self, summary: ModuleSummary) -> ProjectView:
        """The non-trivial facts about the names `summary`'s file uses from other files."""
        needs = summary.needs
        properties: dict[str, tuple[PropertyFact, ...]] = {}
        fields = set()
        for name in sorted(needs.attributes & self.property_map().keys()):
            found = tuple(p for p in self.syncing_properties(name) if not p.path == summary.path)
            if found:
                properties[name] = found
                if self.is_plain_field(name):
                    fields.add(name)
        # A read of a syncing property counts as its function's sync only where no chain says
        # more (summaries.add_late_syncs): then every callee's chain matters.
        chain_calls = needs.calls if properties else needs.chain_calls
        own = summary.functions.keys() | summary.classes.keys()
        functions: dict[str, FunctionFact] = {}
        for name in sorted(needs.calls):
            if name in own:
                continue
            fact = self.fact(name)
            if fact is None or fact.qualname in summary.functions or fact.path == summary.path:
                continue  # its own function (as an index of an earlier run may still hold it)
            chain = fact.chain if name in chain_calls else None
            returns = fact.returns if fact.returns is not None and fact.returns.is_tensor and name in needs.value_calls else None
            if chain is not None or returns is not None:
                functions[name] = FunctionFact(fact.qualname, fact.path, fact.row, chain, returns,
                                               fact.is_property, fact.deprecated)
        class_attrs: dict[str, dict[str, Where]] = {}
        class_bases: dict[str, tuple[str, ...]] = {}
        for base in sorted(needs.classes):
            if base in summary.classes:
                continue
            # Only the attributes the file names: no other can change what it finds.
            attrs = {k: v for k, v in self.class_attrs(base).items() if v.is_tensor and k in needs.attributes}
            if attrs:
                class_attrs[base] = attrs
            for name in self.ancestors(base):
                cls = self.classes.get(name)
                if cls is not None and name not in summary.classes:
                    class_bases[name] = cls.bases
        device_params = {q: self.device_params[q] for q in sorted(summary.functions) if q in self.device_params}
        host_params: dict[str, dict[str, str]] = {}
        for q, func in sorted(summary.functions.items()):
            name = q.rpartition(".")[2]
            for param in func.params[func.positional:]:  # keyword-only
                example = self.host_keywords.get((name, param))
                if example is not None:
                    host_params.setdefault(q, {})[param] = f"every call naming it passes a host tensor, like {example}"
        if not (functions or class_attrs or properties or device_params or host_params):
            return EMPTY_VIEW
        return ProjectView(functions, class_attrs, class_bases, properties, frozenset(fields), device_params, host_params)


def short_name(qualname: str) -> str:
    """`pkg.mod.Class.method` -> `Class.method`; `pkg.mod.func` -> `func` (for messages)."""
    parts = qualname.split(".")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return ".".join(parts[-2:])
    return parts[-1]
