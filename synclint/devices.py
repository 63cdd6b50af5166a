"""Where values live: a CUDA tensor, a host tensor, a host value, or unknown.

Rules never guess from names themselves; they ask `DeviceModel.where(expr, ...)`.
The model is a small abstract interpreter of our own over libcst nodes, built lazily:

* import aliases give qualified names (`T.zeros` -> `torch.zeros`) without libcst's
  scope analysis, which costs several parses per file;
* each function (and the module body) is walked once, in order, the first time a rule
  asks about an expression inside it; the environment before every statement is kept,
  so `where` is flow-sensitive over straight-line code, and branches and loops join;
* facts about `self.x` are gathered from every method of the class (and its bases in
  the same module), and a local helper's return value is the join of its returns;
* name conventions (`*_cpu`, `*_np`, `.gpu`, ...) fill the gaps, with lower confidence.
"""

from __future__ import annotations

import enum
import fnmatch
import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst

from synclint.model import Confidence, pickled_by_fields
from synclint.traversal import walk

if TYPE_CHECKING:
    from synclint.project import ProjectFile


class Place(str, enum.Enum):
    DEVICE = "device"  # a tensor on the accelerator (or, with medium confidence, a tensor of unknown device)
    HOST_TENSOR = "host-tensor"  # a torch tensor in host memory
    HOST = "host"  # numpy arrays, Python numbers, lists, None, objects that are not tensors
    UNKNOWN = "unknown"


@pickled_by_fields
@dataclass(frozen=True)
class Where:
    place: Place
    confidence: Confidence
    because: str | None = None
    is_none: bool = False  # the literal None: joins as "nothing here"
    # A tuple or list built here: where each of its positions lives (`return ids, count`), and
    # where the elements appended to a list live (`parts.append(t)` before `torch.cat(parts)`).
    items: tuple["Where", ...] | None = None
    element: "Where | None" = None

    @property
    def on_device(self) -> bool:
        return self.place is Place.DEVICE

    @property
    def on_host(self) -> bool:
        return self.place in (Place.HOST, Place.HOST_TENSOR)

    @property
    def is_tensor(self) -> bool:
        return self.place in (Place.DEVICE, Place.HOST_TENSOR)

    def weaker(self, cap: Confidence) -> "Where":
        return Where(self.place, min(self.confidence, cap), self.because, self.is_none, self.items, self.element)

    def item(self, position: int) -> "Where | None":
        """Where position `position` of this tuple lives, when it was built where we can see it."""
        if self.items is None or not -len(self.items) <= position < len(self.items):
            return None
        return self.items[position]


UNKNOWN = Where(Place.UNKNOWN, Confidence.LOW)
HOST = Where(Place.HOST, Confidence.HIGH)
NONE = Where(Place.HOST, Confidence.HIGH, is_none=True)


def device(because: str, confidence: Confidence = Confidence.HIGH) -> Where:
    return Where(Place.DEVICE, confidence, because)


def host_tensor(because: str | None = None) -> Where:
    return Where(Place.HOST_TENSOR, Confidence.HIGH, because)


def join(a: Where, b: Where) -> Where:
    """The value is `a` on one path and `b` on another."""
    if a.is_none:
        return b
    if b.is_none:
        return a
    if a.place is b.place:
        joined = a if a.confidence <= b.confidence else b
        if a.place is Place.HOST and (a.items or b.items or a.element or b.element):
            joined = replace(joined, items=_join_items(a.items, b.items), element=_join_element(a.element, b.element))
        return joined
    if a.place is Place.UNKNOWN or b.place is Place.UNKNOWN:
        known = b if a.place is Place.UNKNOWN else a
        return known.weaker(Confidence.MEDIUM)
    if Place.DEVICE in (a.place, b.place):
        dev = a if a.on_device else b
        return Where(Place.DEVICE, Confidence.MEDIUM, (dev.because or "") + " on one path" if dev.because else None)
    return host_tensor() if Place.HOST_TENSOR in (a.place, b.place) else HOST


def _join_items(a: tuple[Where, ...] | None, b: tuple[Where, ...] | None) -> tuple[Where, ...] | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(join(x, y) for x, y in zip(a, b))


def _join_element(a: Where | None, b: Where | None) -> Where | None:
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
    host = next((w for w in operands if w.place is Place.HOST_TENSOR and w.confidence is Confidence.HIGH), None)
    if devices and host is not None and all(w.confidence < Confidence.HIGH for w in devices):
        return host_tensor(host.because)
    if devices:
        return min(devices, key=lambda w: w.confidence)
    hosts = [w for w in operands if w.place is Place.HOST_TENSOR]
    if hosts:
        surest = max(hosts, key=lambda w: w.confidence)
        return host_tensor() if surest.confidence is Confidence.HIGH else surest
    if operands and all(w.place is Place.HOST for w in operands):
        return HOST
    return UNKNOWN


# --------------------------------------------------------------------------------------
# What torch and numpy calls return
# --------------------------------------------------------------------------------------

TORCH_FACTORIES = frozenset(
    "tensor as_tensor asarray zeros ones empty full rand randn randint randperm arange range "
    "linspace logspace eye empty_strided tril_indices triu_indices normal".split()
)
# Factories that copy data from the host: wherever they put the tensor, the data crosses.
DATA_FACTORIES = frozenset("tensor as_tensor asarray".split())
TORCH_LIKE_FACTORIES = frozenset(
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split()
)
# Tensor methods whose result is a host value whatever the tensor's device.
HOST_RESULT_METHODS = frozenset(
    "size dim numel nelement element_size is_contiguous data_ptr stride get_device "
    "storage_offset is_floating_point is_complex is_pinned type tolist item numpy nbytes untyped_storage "
    "storage equal allclose".split()
)
# torch functions whose result is a Python value, not a tensor (equal/allclose sync inside: SYNC109).
HOST_RESULT_FUNCTIONS = frozenset(
    "is_tensor is_storage is_floating_point is_complex is_nonzero is_grad_enabled is_inference_mode_enabled "
    "numel typename get_default_dtype get_default_device equal allclose result_type promote_types can_cast "
    "is_autocast_enabled compiled_with_cxx11_abi".split()
)
HOST_ATTRIBUTES = frozenset("shape dtype device ndim is_cuda is_cpu requires_grad layout itemsize nbytes".split())
# `values`/`indices`: the fields of what max, min, sort, topk, ... return.
SAME_PLACE_ATTRIBUTES = frozenset("T mT H mH data real imag grad values indices".split())
# Builtins whose result is a host value.
HOST_BUILTINS = frozenset(
    "len int float bool str repr range list tuple dict set frozenset sorted isinstance issubclass "
    "hasattr getattr callable id hash type print enumerate zip abs round divmod format ord chr any all".split()
)
# torch functions that take a sequence of tensors (`torch.cat(tensors)`).
SEQUENCE_OPERATIONS = frozenset(
    "cat concat concatenate stack hstack vstack dstack column_stack row_stack block_diag cartesian_prod "
    "broadcast_tensors meshgrid".split()
)
NEW_TENSOR_METHODS = frozenset("new_tensor new_zeros new_ones new_empty new_full".split())


@dataclass(frozen=True)
class NameConventions:
    """Name patterns that projects use for where a value lives (fnmatch, on the last name)."""

    host: tuple[str, ...] = ("*_cpu", "*_cpu_*", "*_np", "*_host", "*_numpy", "*_per_gpu", "cpu", "np", "host", "host_*", "pinned_*", "*_pinned")
    device: tuple[str, ...] = ("*_gpu", "*_cuda")
    host_fields: frozenset[str] = frozenset()  # multimodal inputs the project keeps on the CPU

    def classify(self, name: str) -> Where | None:
        if name in self.host_fields:
            return Where(Place.HOST_TENSOR, Confidence.MEDIUM,
                         f"{name} is a multimodal input the project declares with keep_on_cpu=True")
        if _any_of(self.host).match(name):
            return Where(Place.HOST, Confidence.MEDIUM, f"{name} is a host value by its name")
        if _any_of(self.device).match(name):
            if _FLAG_NAME.match(name):
                # `_is_cuda`, `use_gpu`, `has_cuda`: a yes/no answer about the device, not a tensor on it.
                return Where(Place.HOST, Confidence.MEDIUM, f"{name} is a flag by its name")
            return device(f"{name} is on the device by its name", Confidence.MEDIUM)
        return None


# Names that read as a yes/no question (`is_cuda`, `_use_gpu`, `has_cuda`, `on_gpu`): flags.
_FLAG_NAME = re.compile(r"_*(?:is|has|have|use|uses|using|can|should|enable|enabled|supports?|allow|on|run_on|needs?)_")


@functools.lru_cache(maxsize=None)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regular expression for `fnmatchcase(name, p) for p in patterns` (asked of every name)."""
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns) or "(?!)")


# Files whose code runs on the host, by their path: CPU kernels (`cpu_mla.py`, `ops/cpu/`) and
# multimodal processors (`transformers_utils/processors/`, `*processing*.py`, `mm_preprocess.py`),
# which prepare model inputs on the CPU. There a tensor of unknown device is a host tensor.
HOST_CODE_PATH = re.compile(r"(^|[/_])cpu([/_.]|$)|(^|/)processors?/|(^|/)[^/]*(processing|preprocess)[^/]*\.py$")


def is_host_code_path(relpath: str) -> bool:
    return bool(HOST_CODE_PATH.search(relpath))


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names and attributes, else None."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


class ImportTable:
    """Maps local names to the qualified names they were imported as."""

    def __init__(self, package: str = "") -> None:
        self.aliases: dict[str, str] = {}
        self.package = package  # where relative imports start ("" outside a package)

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
            return
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted_name(node.module) if node.module is not None else ""
        if module is None:
            return
        if node.relative:
            module = self._absolute(len(node.relative), module)
            if module is None:
                return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def _absolute(self, level: int, module: str) -> str | None:
        """`from ..x import y` in package `a.b.c` -> `a.b.x` (None when it climbs out)."""
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts) or not parts:
            return None
        base = parts[: len(parts) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        name = dotted_name(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full


# --------------------------------------------------------------------------------------
# Flow facts per function
# --------------------------------------------------------------------------------------

Env = dict[str, Where]
Scope = cst.Module | cst.FunctionDef


@dataclass
class FunctionFacts:
    """The environment before each statement of one function (or of the module body)."""

    env_before: dict[int, Env] = field(default_factory=dict)
    returns: list[Where] = field(default_factory=list)
    self_attrs: dict[str, Where] = field(default_factory=dict)
    loop_depth_of: dict[int, int] = field(default_factory=dict)
    final_env: Env = field(default_factory=dict)
    # Parameters that the function's own code says nothing sure of (unknown, or a tensor of
    # unknown device outside an nn.Module): what a caller passing a GPU tensor would settle.
    weak_params: set[str] = field(default_factory=set)
    # `self.x: torch.Tensor | None = None` with no assignment after it in this method: a
    # declaration, which an assignment in another method overrides (synclint reads no `None`
    # as a tensor's device).
    declared_attrs: set[str] = field(default_factory=set)


class DeviceModel:
    """Answers where a value lives, for one module."""

    def __init__(
        self,
        module: cst.Module,
        conventions: NameConventions | None = None,
        host_code: bool = False,
        project: "ProjectFile | None" = None,
    ) -> None:
        from synclint.project import EMPTY_VIEW, ProjectFile

        self.module = module
        self.host_code = host_code  # the file runs on the host (is_host_code_path)
        self.conventions = conventions or NameConventions()
        self.project = project or ProjectFile()
        self.view = self.project.view or EMPTY_VIEW  # facts from the project's other files
        self.imports = ImportTable(self.project.package)
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        self.parents: dict[int, cst.ClassDef] = {}  # id(method) -> its class
        self.enclosing: dict[int, cst.FunctionDef] = {}  # id(nested function) -> enclosing function
        self._facts: dict[int, FunctionFacts] = {}
        self._class_attrs: dict[int, dict[str, Where]] = {}
        self._returns: dict[int, Where] = {}
        self._in_progress: set[int] = set()
        self._qualnames: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._callees: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._calls_by_name: dict[str, list[cst.Call]] | None = None
        self._local_values: dict[int, dict[str, list[cst.BaseExpression]]] = {}
        # Parameters of private functions that every call in this module fills with a host
        # value: id(function) -> name -> why (see _settle_host_params).
        self.host_params: dict[int, dict[str, str]] = {}
        self._settled = False
        self._private: dict[str, list[cst.FunctionDef]] = {}  # private functions and methods by name
        self._builds_module: dict[int, bool] = {}  # id(function) -> whether it runs only to build an nn.Module
        self._private_calls: dict[str, list[tuple[cst.Call, Scope, cst.CSTNode]]] | None = None
        self._index(module.body, None, None)

    # ---- indexing ------------------------------------------------------------------

    def _index(
        self,
        body: Sequence[cst.BaseStatement | cst.BaseSmallStatement],
        cls: cst.ClassDef | None,
        func: cst.FunctionDef | None,
    ) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    # Imports anywhere count: vLLM imports torch inside functions too.
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self.imports.add(small)
            elif isinstance(stmt, cst.FunctionDef):
                if stmt.name.value.startswith("_") and not stmt.name.value.endswith("__"):
                    self._private.setdefault(stmt.name.value, []).append(stmt)
                if cls is not None:
                    self.parents[id(stmt)] = cls
                elif func is not None:
                    self.enclosing[id(stmt)] = func
                else:
                    self.functions[stmt.name.value] = stmt
                self._index(_block(stmt.body), None, stmt)
            elif isinstance(stmt, cst.ClassDef):
                if cls is None and func is None:
                    self.classes[stmt.name.value] = stmt
                self._index(_block(stmt.body), stmt, None)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                for block in _child_blocks(stmt):
                    self._index(block, cls, func)

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name `expr` spells, remembered per node (every rule asks it of every
        call); the node is kept with its answer so that its id cannot be reused meanwhile."""
        known = self._qualnames.get(id(expr))
        if known is not None and known[0] is expr:
            return known[1]
        qual = self.imports.qualify(expr)
        self._qualnames[id(expr)] = (expr, qual)
        return qual

    def class_of(self, func: cst.FunctionDef | None) -> cst.ClassDef | None:
        return self.parents.get(id(func)) if func is not None else None

    def self_class(self, func: cst.FunctionDef | None) -> cst.ClassDef | None:
        """The class whose `self` `func` sees: its own, or that of the method it is nested in."""
        while func is not None:
            cls = self.class_of(func)
            if cls is not None:
                return cls
            func = self.enclosing.get(id(func))
        return None

    # ---- the question rules ask ----------------------------------------------------

    def where(self, expr: cst.BaseExpression, scope: Scope | None, stmt: cst.CSTNode | None) -> Where:
        """Where `expr` lives, evaluated just before statement `stmt` of `scope`."""
        evaluator = self._evaluator(scope, stmt)
        found = evaluator.eval(expr)
        cpu_path = evaluator.env.get(CPU_PATH)
        if cpu_path is not None and found.on_device and found.confidence is Confidence.MEDIUM:
            # A guess of the GPU on the CPU side of a dispatch (`if x.is_cuda: return kernel(x)`).
            return Where(found.place, Confidence.LOW, f"{found.because}; but {cpu_path.because}",
                         found.is_none, found.items, found.element)
        return found

    def to_target(self, call: cst.Call, scope: Scope | None, stmt: cst.CSTNode | None) -> Where | None:
        """Where `<tensor>.to(...)` puts its result; None when it keeps the device (a dtype) or says nothing known."""
        return self._evaluator(scope, stmt)._to_target(call)

    def placement(self, arg: cst.BaseExpression, scope: Scope | None, stmt: cst.CSTNode | None) -> Where:
        """What a `device=` argument means (a host tensor for "cpu"), evaluated just before `stmt`."""
        return self._evaluator(scope, stmt).device_of(arg)

    def _evaluator(self, scope: Scope | None, stmt: cst.CSTNode | None) -> "Evaluator":
        env: Env = {}
        if scope is not None and stmt is not None:
            env = self.facts(scope).env_before.get(id(stmt), {})
        return Evaluator(self, scope, env)

    def loop_depth(self, scope: Scope, stmt: cst.CSTNode) -> int:
        return self.facts(scope).loop_depth_of.get(id(stmt), 0)

    # ---- lazily computed facts -----------------------------------------------------

    def facts(self, scope: Scope) -> FunctionFacts:
        key = id(scope)
        cached = self._facts.get(key)
        if cached is not None:
            return cached
        if not self._settled:
            self._settled = True
            self._settle_host_params()
        cls = self.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
        if cls is not None and id(cls) not in self._class_attrs:
            # Gather the class's attributes first, walking its methods in body order, so
            # that what a method sees of `self.x` does not depend on which method a rule
            # happened to ask about first.
            self.class_attrs(cls)
            cached = self._facts.get(key)
            if cached is not None:
                return cached
        facts = FunctionFacts()
        self._facts[key] = facts  # visible (partially) to recursive questions
        if isinstance(scope, cst.Module):
            facts.final_env = FlowWalker(self, scope, facts).walk_block(scope.body, {}, 0)
        else:
            FlowWalker(self, scope, facts).walk_function()
        return facts

    def class_attrs(self, cls: cst.ClassDef) -> dict[str, Where]:
        key = id(cls)
        cached = self._class_attrs.get(key)
        if cached is not None:
            return cached
        attrs: dict[str, Where] = {}
        self._class_attrs[key] = attrs  # recursion guard: a partial answer
        for base in cls.bases:
            base_name = dotted_name(base.value)
            base_cls = self.classes.get(base_name or "")
            if base_cls is not None and base_cls is not cls:
                attrs.update(self.class_attrs(base_cls))
            elif base_cls is None:
                attrs.update(self.view.class_attrs.get(self.class_qualname(base.value) or "", {}))
        evaluator = Evaluator(self, None, {})
        for stmt in _block(cls.body):
            # Class-level annotations: dataclass fields and NamedTuple members.
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        ann = evaluator.from_annotation(small.annotation.annotation, small.target.value)
                        if ann is not None:
                            attrs[small.target.value] = ann
        declared: dict[str, Where] = {}
        for stmt in _block(cls.body):
            if isinstance(stmt, cst.FunctionDef):
                if _is_property(stmt):
                    continue
                facts = self.facts(stmt)
                for name, where in facts.self_attrs.items():
                    if name in facts.declared_attrs:
                        declared[name] = join(declared[name], where) if name in declared else where
                    else:
                        attrs[name] = join(attrs[name], where) if name in attrs else where
        for name, where in declared.items():
            attrs.setdefault(name, where)  # only declared: the annotation is all there is
        return attrs

    def returns_of(self, func: cst.FunctionDef) -> Where:
        key = id(func)
        if key in self._returns:
            return self._returns[key]
        if key in self._in_progress:
            return UNKNOWN
        self._in_progress.add(key)
        try:
            result = join_all(self.facts(func).returns) if self.facts(func).returns else UNKNOWN
            if func.returns is not None:
                ann = Evaluator(self, func, {}).from_annotation(func.returns.annotation, func.name.value)
                if ann is not None and ann.on_device and ann.confidence is Confidence.MEDIUM and not self.is_module_class(self.class_of(func)):
                    ann = ann.weaker(Confidence.LOW)  # `-> torch.Tensor` of a helper: as its parameters
                if ann is not None and result.items is None and (
                    result.place is Place.UNKNOWN or (ann.place is Place.HOST and not ann.is_none)
                ):
                    result = ann  # `-> bool` is a bool, whatever a path through the body seemed to return
        finally:
            self._in_progress.discard(key)
        self._returns[key] = result
        return result

    MAX_HOST_PARAM_ROUNDS = 3

    def _settle_host_params(self) -> None:
        """Parameters of private functions (`_name`, or nested) that every call in this module
        fills with a host value: `self._tiles(crop_shape)` where `crop_shape` is a CPU tensor
        makes the `crop_shape: torch.Tensor` of `_tiles` a CPU tensor, not a guess of the GPU.
        Each round computes the callers' facts as they stand; a round that settles a parameter
        starts the facts again (a caller two calls up settles the next round)."""
        candidates = {name for name, funcs in self._private.items() if len(funcs) == 1 and _takes_tensors(funcs[0])}
        sites = _private_call_sites(self.module, candidates) if candidates else []
        sites += _submodule_call_sites(self.module, {
            name: forward for name, cls in self.classes.items()
            if (forward := _method(cls, "forward")) is not None and _takes_tensors(forward) and self.is_module_class(cls)})
        if not sites:
            return
        for _ in range(self.MAX_HOST_PARAM_ROUNDS):
            found: dict[int, dict[str, str]] = {}
            for func, calls in sites:
                params = [*func.params.posonly_params, *func.params.params]
                method = self.class_of(func) is not None and bool(params) and params[0].name.value in ("self", "cls")
                positional = params[1:] if method else params
                for param in [*positional, *func.params.kwonly_params]:
                    name = param.name.value
                    if name in self.host_params.get(id(func), {}) or param.annotation is None:
                        continue
                    if "Tensor" not in _code(param.annotation.annotation):
                        continue
                    position = positional.index(param) if param in positional else None
                    why = self._host_at_every_call(calls, name, position)
                    if why is not None:
                        found.setdefault(id(func), {})[name] = why
            if not found:
                return
            for key, params in found.items():
                self.host_params.setdefault(key, {}).update(params)
            self._facts.clear()
            self._class_attrs.clear()
            self._returns.clear()

    def _host_at_every_call(self, calls: list[tuple[cst.Call, Scope, cst.CSTNode]], name: str,
                            position: int | None) -> str | None:
        """Why every one of `calls` passes a host value as parameter `name` (None: one may not)."""
        why = None
        for call, scope, stmt in calls:
            positional = self._positional_args(call, scope)
            if positional is None:
                return None  # `*args` we cannot see into
            arg = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
            if arg is None and position is not None and position < len(positional):
                arg = positional[position]
            if arg is None:
                return None  # the default, or through *args
            where = Evaluator(self, scope, self.facts(scope).env_before.get(id(stmt), {})).eval(arg)
            named_host = where.place is Place.HOST and "by its name" in (where.because or "")
            if not named_host and not is_sure_host(where):
                # A Python value where a tensor is annotated says nothing sure (but a value named
                # for the host, `meta.grid_thw_cpu`, is a host tensor there), nor does a host
                # tensor on one path and something unknown on another (`return torch.tensor([])`).
                return None
            row = _code(call.func)
            why = why or f"every call passes a host value, like `{_code(arg)}` to {row}()"
        return why

    def _positional_args(self, call: cst.Call, scope: Scope) -> list[cst.BaseExpression] | None:
        """The values `call` passes by position, a `*inputs` spread when `inputs` is a tuple or
        list literal assigned once in the caller (`inputs = (kwargs.get("a"), ...)`); None when a
        spread hides them."""
        values: list[cst.BaseExpression] = []
        for arg in call.args:
            if arg.keyword is not None or arg.star == "**":
                continue
            if not arg.star:
                values.append(arg.value)
                continue
            assigned = self.local_values(scope).get(arg.value.value, []) if (
                isinstance(arg.value, cst.Name) and isinstance(scope, cst.FunctionDef)) else []
            if len(assigned) != 1 or not isinstance(assigned[0], (cst.Tuple, cst.List)):
                return None
            if any(isinstance(element, cst.StarredElement) for element in assigned[0].elements):
                return None
            values.extend(element.value for element in assigned[0].elements)
        return values

    def local_values(self, func: cst.FunctionDef) -> dict[str, list[cst.BaseExpression]]:
        """The values assigned to each plain name in `func`'s own body (`x = value`)."""
        found = self._local_values.get(id(func))
        if found is None:
            found = {}

            class Assignments(cst.CSTVisitor):
                def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                    return node is func

                def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                    return False

                def visit_Assign(self, node: cst.Assign) -> None:
                    for target in node.targets:
                        if isinstance(target.target, cst.Name):
                            found.setdefault(target.target.value, []).append(node.value)
                        else:
                            self.other(target.target)

                def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
                    if isinstance(node.target, cst.Name) and node.value is not None:
                        found.setdefault(node.target.value, []).append(node.value)

                # Other bindings: the name holds more than one value.
                def visit_AugAssign(self, node: cst.AugAssign) -> None:
                    self.other(node.target)

                def visit_For(self, node: cst.For) -> None:
                    self.other(node.target)

                def visit_AsName(self, node: cst.AsName) -> None:
                    self.other(node.name)

                def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
                    self.other(node.target)

                def other(self, target: cst.CSTNode) -> None:
                    for name in _names_in(target):
                        found.setdefault(name, []).append(cst.Ellipsis())

            walk(func, Assignments())
            self._local_values[id(func)] = found
        return found

    def passed_here(self, func: cst.FunctionDef, name: str) -> bool:
        """Whether some call in this module to a function called like `func` passes its
        parameter `name` (by keyword, or by position counting `self` off for methods)."""
        if self._calls_by_name is None:
            calls: dict[str, list[cst.Call]] = {}

            class Calls(cst.CSTVisitor):
                def visit_Call(self, node: cst.Call) -> None:
                    callee = node.func
                    last = callee.value if isinstance(callee, cst.Name) else callee.attr.value if isinstance(callee, cst.Attribute) else None
                    if last is not None:
                        calls.setdefault(last, []).append(node)

            self.module.visit(Calls())
            self._calls_by_name = calls
        params = [*func.params.posonly_params, *func.params.params]
        position = next((i for i, p in enumerate(params) if p.name.value == name), None)
        if position is not None and self.class_of(func) is not None and params and params[0].name.value in ("self", "cls"):
            position -= 1
        for call in self._calls_by_name.get(func.name.value, ()):
            positional = [a for a in call.args if a.keyword is None and not a.star]
            if any(a.keyword is not None and a.keyword.value == name for a in call.args) or any(a.star for a in call.args):
                return True
            if position is not None and len(positional) > position:
                return True
        return False

    # ---- names in the project ---------------------------------------------------------

    def qualify_local(self, name: str) -> str:
        return f"{self.project.module}.{name}" if self.project.module else name

    def class_qualname(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of a class named by `expr` (a local class or an import)."""
        name = dotted_name(expr)
        if name is None:
            return None
        if name in self.classes:
            return self.qualify_local(name)
        return self.imports.qualify(expr)

    def in_project(self, qualname: str) -> bool:
        """Whether a qualified name may belong to the checked project: its own package's, or local."""
        module = self.project.module
        if not module:
            return False
        return qualname.split(".")[0] == module.split(".")[0]

    def function_qualname(self, func: cst.FunctionDef) -> str | None:
        """`pkg.mod.f` or `pkg.mod.Class.m` for a module-level function or a method of a
        module-level class; None for nested functions and classes."""
        if self.functions.get(func.name.value) is func:
            return self.qualify_local(func.name.value)
        cls = self.class_of(func)
        if cls is not None and self.classes.get(cls.name.value) is cls:
            return self.qualify_local(f"{cls.name.value}.{func.name.value}")
        return None

    def callee_qualname(self, func_expr: cst.BaseExpression, scope: Scope | None) -> str | None:
        """The project function a call's `func` names: `f` (local or imported), `self.m`,
        `cls.m`, `super().m`, `module.f`, or `param.m` for a parameter annotated with a class.
        None for builtins, library calls and anything not resolved. Remembered per node (the
        summary, SYNC112 and the device model all ask of every call); a node has one scope."""
        known = self._callees.get(id(func_expr))
        if known is not None and known[0] is func_expr:
            return known[1]
        qual = self._callee_qualname(func_expr, scope)
        self._callees[id(func_expr)] = (func_expr, qual)
        return qual

    def _callee_qualname(self, func_expr: cst.BaseExpression, scope: Scope | None) -> str | None:
        if isinstance(func_expr, cst.Name):
            name = func_expr.value
            if name in self.functions:
                return self.qualify_local(name)
            if name in self.classes:
                return None  # a constructor
            qual = self.imports.qualify(func_expr)
            return qual if qual is not None and self.in_project(qual) else None
        if not isinstance(func_expr, cst.Attribute):
            return None
        owner = self.receiver_class(func_expr.value, scope)
        if owner is not None:
            return f"{owner}.{func_expr.attr.value}"
        qual = self.imports.qualify(func_expr)
        if qual is not None and self.in_project(qual):
            return qual
        return None

    def receiver_class(self, value: cst.BaseExpression, scope: Scope | None) -> str | None:
        """The qualified class of `self`/`cls`, `super()`, or a parameter annotated with a class."""
        func = scope if isinstance(scope, cst.FunctionDef) else None
        if isinstance(value, cst.Name) and value.value in ("self", "cls"):
            cls = self.self_class(func)
            if cls is not None and self.classes.get(cls.name.value) is cls:
                return self.qualify_local(cls.name.value)
            return None
        if isinstance(value, cst.Call) and dotted_name(value.func) == "super" and not value.args:
            cls = self.self_class(func)
            if cls is not None and cls.bases:
                return self.class_qualname(cls.bases[0].value)
            return None
        if isinstance(value, cst.Name) and func is not None:
            param = parameter(func, value.value)
            if param is not None and param.annotation is not None:
                name = annotated_class(param.annotation.annotation)
                if name is not None and name[:1].isupper():
                    if name in self.classes:
                        return self.qualify_local(name)
                    head = name.split(".")[0]
                    full = self.imports.aliases.get(head)
                    return full + name[len(head):] if full is not None else name
        return None

    def resolve_function(self, func_expr: cst.BaseExpression, scope: Scope | None) -> cst.FunctionDef | None:
        """The local function or method that a call's `func` names, if any."""
        if isinstance(func_expr, cst.Name):
            return self.functions.get(func_expr.value)
        if (
            isinstance(func_expr, cst.Attribute)
            and isinstance(func_expr.value, cst.Name)
            and func_expr.value.value == "self"
            and isinstance(scope, cst.FunctionDef)
        ):
            cls = self.class_of(scope)
            if cls is not None:
                return self._method(cls, func_expr.attr.value)
        return None

    def _method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """The method `name` of `cls`, or of a base class defined in this file."""
        own = _method(cls, name)
        if own is not None:
            return own
        for base in cls.bases:
            base_cls = self.classes.get(dotted_name(base.value) or "")
            if base_cls is not None and base_cls is not cls:
                found = self._method(base_cls, name)
                if found is not None:
                    return found
        return None

    def builds_module(self, func: cst.FunctionDef) -> bool:
        """Whether `func` runs only while an nn.Module is built: the module's `__init__`, or a
        private method that only such code calls. Model loaders build modules under
        `with torch.device(...)`, so there a factory without `device=` follows that default
        device (vLLM's rotary embeddings build their caches so, "on GPU for faster
        initialization")."""
        known = self._builds_module.get(id(func))
        if known is not None:
            return known
        self._builds_module[id(func)] = False  # a cycle of calls proves nothing
        cls = self.class_of(func)
        name = func.name.value
        result = False
        if cls is not None and (self.is_module_class(cls) or _registers_buffers(cls)):
            if name == "__init__":
                result = True
            elif name.startswith("_") and not name.startswith("__"):
                if self._private_calls is None:
                    self._private_calls = {f.name.value: calls for f, calls in _private_call_sites(self.module, set(self._private))}
                calls = self._private_calls.get(name, [])
                result = bool(calls) and all(
                    isinstance(scope, cst.FunctionDef) and self.builds_module(scope) for _, scope, _ in calls
                )
        self._builds_module[id(func)] = result
        return result

    def is_module_class(self, cls: cst.ClassDef | None) -> bool:
        """Whether `cls` is a torch.nn.Module (by its bases, followed within the module)."""
        seen = 0
        while cls is not None and seen < 10:
            seen += 1
            nxt = None
            for base in cls.bases:
                qual = self.qualname(base.value) or dotted_name(base.value) or ""
                if qual.endswith("Module"):
                    return True
                nxt = self.classes.get(dotted_name(base.value) or "") or nxt
            cls = nxt
        return False


def parameter(func: cst.FunctionDef, name: str) -> cst.Param | None:
    """The parameter of `func` called `name`, if any."""
    params = func.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if isinstance(param, cst.Param) and param.name.value == name:
            return param
    return None


def annotated_class(annotation: cst.BaseExpression) -> str | None:
    """The class an annotation names: `Meta`, `mod.Meta`, `Meta | None`, `Optional[Meta]`, `"Meta"`."""
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return text if isinstance(text, str) and text.replace(".", "").isidentifier() else None
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        names = {annotated_class(annotation.left), annotated_class(annotation.right)} - {None, "None"}
        return names.pop() if len(names) == 1 else None
    if isinstance(annotation, cst.Subscript) and (dotted_name(annotation.value) or "").endswith("Optional"):
        inner = annotation.slice[0].slice
        return annotated_class(inner.value) if isinstance(inner, cst.Index) else None
    return dotted_name(annotation)


def _block(body: cst.BaseSuite) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    if isinstance(body, cst.IndentedBlock):
        return body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return body.body
    return ()


def _child_blocks(stmt: cst.BaseCompoundStatement) -> Iterator[Sequence]:
    if isinstance(stmt, (cst.If, cst.For, cst.While)):
        yield _block(stmt.body)
        orelse = stmt.orelse
        while orelse is not None:
            yield _block(orelse.body)
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield _block(stmt.body)
        for handler in stmt.handlers:
            yield _block(handler.body)
        if stmt.orelse is not None:
            yield _block(stmt.orelse.body)
        if stmt.finalbody is not None:
            yield _block(stmt.finalbody.body)
    elif isinstance(stmt, cst.With):
        yield _block(stmt.body)
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield _block(case.body)


def _host_uses(func: cst.FunctionDef) -> dict[str, str]:
    """Names that `func` itself treats as host tensors: `x.numpy()` (which raises on a GPU
    tensor), `x.pin_memory()`, `x.to(device, non_blocking=True)` (an upload), and names it
    requires on the CPU (`assert x.device.type == "cpu"`, `if not x.is_cpu: raise ...`). A
    parameter annotated `torch.Tensor` and used so is a host tensor, whatever its annotation says."""
    uses: dict[str, str] = {}

    class Finder(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is func

        def visit_Assert(self, node: cst.Assert) -> None:
            for name in _on_cpu_when(node.test, True):
                uses.setdefault(name, _code(node))

        def visit_If(self, node: cst.If) -> None:
            body = _block(node.body)
            if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Raise):
                for name in _on_cpu_when(node.test, False):
                    uses.setdefault(name, f"if {_code(node.test)}: raise")

        def visit_Call(self, node: cst.Call) -> None:
            func_expr = node.func
            if not (isinstance(func_expr, cst.Attribute) and isinstance(func_expr.value, cst.Name)):
                return
            method = func_expr.attr.value
            non_blocking = _kwarg(node, "non_blocking")
            target = _kwarg(node, "device") or next((arg.value for arg in node.args if arg.keyword is None), None)
            uploads = (
                method in ("to", "cuda")
                and isinstance(non_blocking, cst.Name)
                and non_blocking.value == "True"
                and (target is None or "cpu" not in _code(target).lower())
            )
            if (method == "numpy" and _kwarg(node, "force") is None) or method == "pin_memory" or uploads:
                uses.setdefault(func_expr.value.value, _code(node))

    walk(func, Finder())
    return uses


# The medium-confidence reasons that a tensor is a host tensor that speak of the value itself.
_SURE_HOST = ("keep_on_cpu", "by its name", "is a host tensor:", "used as a host tensor")


def is_sure_host(where: Where) -> bool:
    """A host tensor the code proves, not one path's guess (`return torch.tensor([])` beside
    something unknown): made on the CPU, or a host tensor for a reason about the value itself."""
    return where.place is Place.HOST_TENSOR and (
        where.confidence is Confidence.HIGH or any(word in (where.because or "") for word in _SURE_HOST))


def _registers_buffers(cls: cst.ClassDef) -> bool:
    """Whether a method of `cls` calls `self.register_buffer(...)`: only an nn.Module can."""
    found: list[bool] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "register_buffer":
                found.append(True)
            return not found

    walk(cls, Finder())
    return bool(found)


class _CallSites(cst.CSTVisitor):
    """A walk that knows, for each call, its scope and the statement whose facts hold there."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.scopes: list[Scope] = [module]
        self.statements: list[cst.CSTNode] = []  # the innermost line or compound statement

    def enter(self, node: cst.CSTNode) -> None:
        self.statements.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        self.statements.pop()

    visit_SimpleStatementLine = visit_If = visit_For = visit_While = visit_With = visit_Try = enter
    leave_SimpleStatementLine = leave_If = leave_For = leave_While = leave_With = leave_Try = leave

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.statements.append(node)
        self.scopes.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.statements.pop()
        self.scopes.pop()

    def site(self, call: cst.Call) -> tuple[cst.Call, "Scope", cst.CSTNode]:
        return call, self.scopes[-1], _small_holding(self.statements[-1], call) if self.statements else call


def _private_call_sites(module: cst.Module, names: set[str]) -> list[tuple[cst.FunctionDef, list[tuple[cst.Call, "Scope", cst.CSTNode]]]]:
    """Each private function (`_name`, not `__dunder__`) of the module named in `names` with the calls to it, each
    with its scope and the statement it sits in, when the module only calls it (a function also
    named elsewhere, passed as a value, or called with `**kwargs`, has callers we cannot see;
    a call with `*name` is kept for `_positional_args` to look into)."""
    defined: dict[str, list[cst.FunctionDef]] = {}
    calls: dict[str, list[tuple[cst.Call, Scope, cst.CSTNode]]] = {}
    mentions: dict[str, int] = {}

    class Sites(_CallSites):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            name = node.name.value
            if name in names:
                defined.setdefault(name, []).append(node)
                mentions[name] = mentions.get(name, 0) - 1  # its own name is no mention
            super().visit_FunctionDef(node)

        def visit_Call(self, node: cst.Call) -> None:
            callee = node.func
            last = callee.value if isinstance(callee, cst.Name) else callee.attr.value if isinstance(callee, cst.Attribute) else None
            if last in names and not any(a.star == "**" or (a.star and not isinstance(a.value, cst.Name)) for a in node.args):
                calls.setdefault(last, []).append(self.site(node))
                mentions[last] = mentions.get(last, 0) - 1  # its callee's name is a mention

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in names:
                mentions[node.value] = mentions.get(node.value, 0) + 1

    walk(module, Sites(module))
    sites = []
    for name, funcs in defined.items():
        # Every mention of the name is a call.
        if len(funcs) == 1 and name in calls and mentions.get(name, 0) == 0:
            sites.append((funcs[0], calls[name]))
    return sites


def _takes_tensors(func: cst.FunctionDef) -> bool:
    """Whether a parameter of `func` is annotated as a tensor."""
    return any(p.annotation is not None and "Tensor" in _code(p.annotation.annotation)
               for p in (*func.params.params, *func.params.kwonly_params))


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    """The method `name` defined in the body of `cls` itself."""
    return next((stmt for stmt in _block(cls.body) if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name), None)


def _submodule_call_sites(module: cst.Module, forwards: dict[str, cst.FunctionDef]
                          ) -> list[tuple[cst.FunctionDef, list[tuple[cst.Call, "Scope", cst.CSTNode]]]]:
    """The `forward` of each module class of this file (`forwards`, by class name) whose instances
    are kept in attributes (`self.adapter = PatchMerger(...)`) with the calls of those attributes
    (`self.adapter(x, grid_thw_cpu)`), each with its scope and statement, when every use of such an
    attribute in the file is a call and no attribute name holds two classes."""
    if not forwards:
        return []
    # Registries of classes: `_ADAPTERS = {"shuffle": PixelShuffleAdapter, ...}` at the top level.
    registries: dict[str, set[str]] = {}
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target: cst.BaseExpression | None = small.targets[0].target
        elif isinstance(small, cst.AnnAssign):
            target = small.target
        else:
            continue
        if isinstance(target, cst.Name) and isinstance(small.value, cst.Dict) and small.value.elements:
            values = {dotted_name(e.value) if isinstance(e, cst.DictElement) else None for e in small.value.elements}
            registries[target.value] = values if values <= forwards.keys() else {""}
    holds: dict[str, set[str]] = {}  # attribute -> classes assigned to it ("": something else)
    picked: dict[tuple[int, str], set[str]] = {}  # (id(scope), name) -> classes `name = REGISTRY[...]` may be
    calls: dict[str, list[tuple[cst.Call, Scope, cst.CSTNode]]] = {}
    other_uses: set[str] = set()

    class Sites(_CallSites):
        def __init__(self) -> None:
            super().__init__(module)
            self.targets: set[int] = set()  # id() of `self.x` nodes being assigned
            self.callees: set[int] = set()  # id() of `self.x` nodes being called

        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    picked[(id(self.scopes[-1]), target.target.value)] = _registry_pick(value, registries)
                attr = _self_attribute(target.target)
                if attr is None:
                    continue
                self.targets.add(id(target.target))
                name = dotted_name(value.func) if isinstance(value, cst.Call) else None
                if name in forwards:
                    holds.setdefault(attr, set()).add(name)
                else:  # `cls = _ADAPTERS[kind]` before `self.adapter = cls(config)`, or something else
                    holds.setdefault(attr, set()).update(picked.get((id(self.scopes[-1]), name or ""), {""}))

        def visit_Call(self, node: cst.Call) -> None:
            attr = _self_attribute(node.func)
            if attr is not None and not any(a.star for a in node.args):
                self.callees.add(id(node.func))
                calls.setdefault(attr, []).append(self.site(node))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            attr = _self_attribute(node)
            if attr is not None and id(node) not in self.targets and id(node) not in self.callees:
                other_uses.add(attr)  # passed on, or read for a method of its own

    walk(module, Sites())
    by_class: dict[str, list[tuple[cst.Call, Scope, cst.CSTNode]]] = {}
    for attr, classes in holds.items():
        if "" not in classes and attr in calls and attr not in other_uses:
            for cls in classes:
                by_class.setdefault(cls, []).extend(calls[attr])
    return [(forwards[cls], found) for cls, found in by_class.items()]


def _registry_pick(value: cst.BaseExpression, registries: dict[str, set[str]]) -> set[str]:
    """The classes `value` may be when it picks from a registry (`REG[key]`, `REG.get(key)`), else {""}."""
    if isinstance(value, cst.Subscript):
        registry = dotted_name(value.value)
    elif (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get"
          and len(value.args) == 1):
        registry = dotted_name(value.func.value)
    else:
        return {""}
    return registries.get(registry or "", {""})


def _self_attribute(expr: cst.BaseExpression) -> str | None:
    """`x` of `self.x`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _small_holding(statement: cst.CSTNode, node: cst.CSTNode) -> cst.CSTNode:
    """The statement whose facts hold where `node` sits in `statement`: the small statement of a
    line that holds it (`a = f(x); b = 1`), or the compound statement itself (its header)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return statement
    if len(statement.body) == 1:
        return statement.body[0]
    for small in statement.body:
        found: list[bool] = []

        class Finder(cst.CSTVisitor):
            def on_visit(self, child: cst.CSTNode) -> bool:
                if child is node:
                    found.append(True)
                return not found

        walk(small, Finder())
        if found:
            return small
    return statement


def _names_in(node: cst.CSTNode) -> set[str]:
    """The plain names used anywhere in `node`."""
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # `x.device` uses `x`, not a name `device`
            return False

    walk(node, Names())
    return names


def _on_cpu_in(env: "Env", test: cst.BaseExpression, holds: bool) -> "Env":
    """`env` where `test` is `holds`: the tensors and devices it proves on the CPU are host tensors."""
    names = _on_cpu_when(test, holds)
    if not names:
        return env
    refined = dict(env)
    for name in names:
        refined[name] = host_tensor(f"{name} is on the CPU where `{_code(test)}` is {holds}")
    # The code dispatches on the device here: what runs in this branch is the CPU path, where
    # a tensor the code does not place (a parameter, a buffer) is no more a GPU tensor than not.
    refined[CPU_PATH] = host_tensor(f"this path runs only where `{_code(test)}` is {holds}")
    return refined


# The key, in an environment, that marks code that runs only off the GPU (see `_on_cpu_in`):
# no Python name can collide with it.
CPU_PATH = " cpu path"


def _on_cpu_when(test: cst.BaseExpression, holds: bool) -> set[str]:
    """The names that `test` being `holds` proves on the CPU: `x.device.type == "cpu"`,
    `x.is_cpu`, `not x.is_cuda`, and devices: `device.type == "cpu"` (each joined by `and`
    when it holds, by `or` when it fails)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _on_cpu_when(test.expression, not holds)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) == holds:
            return _on_cpu_when(test.left, holds) | _on_cpu_when(test.right, holds)
        return set()
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name):
        if test.attr.value == "is_cpu" and holds or test.attr.value == "is_cuda" and not holds:
            return {test.value.value}
        return set()
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, target = test.left, test.comparisons[0]
        equal = isinstance(target.operator, cst.Equal)
        if not equal and not isinstance(target.operator, cst.NotEqual):
            return set()
        text = _code(target.comparator).strip("\"'")
        if not (isinstance(left, cst.Attribute) and left.attr.value == "type"):
            return set()
        owner = left.value  # `x.device` (x a tensor) or `device`
        if isinstance(owner, cst.Attribute) and owner.attr.value == "device":
            owner = owner.value
        if isinstance(owner, cst.Name) and (text == "cpu" and equal == holds or text == "cuda" and equal != holds):
            return {owner.value}
    return set()


# Parameter names that, annotated `torch.Tensor`, are a model's activations or caches wherever
# they appear: they live on the GPU during inference.
ACTIVATION_NAMES = frozenset(
    "x hidden_states hidden_state residual inputs_embeds input_embeds logits router_logits input_ids positions "
    "query key value q k v kv_cache kv_caches k_cache v_cache topk_ids topk_weights attn_output".split()
)


_WEIGHT_LOADER = re.compile(r"load\w*weight|weight\w*load")


def _is_activation_name(name: str) -> bool:
    return name in ACTIVATION_NAMES


def _is_property(func: cst.FunctionDef) -> bool:
    for dec in func.decorators:
        name = dotted_name(dec.decorator) or ""
        if name.split(".")[-1] in ("property", "cached_property", "setter"):
            return True
    return False


class FlowWalker:
    """Walks one function's statements in order, recording the environment before each."""

    def __init__(self, model: DeviceModel, scope: Scope, facts: FunctionFacts) -> None:
        self.model = model
        self.scope = scope
        self.facts = facts

    def walk_function(self) -> None:
        func = self.scope
        assert isinstance(func, cst.FunctionDef)
        env: Env = {}
        outer = self.model.enclosing.get(id(func))
        if outer is not None:  # a closure sees the enclosing function's names
            outer_facts = self.model.facts(outer)
            env.update(outer_facts.env_before.get(id(func), {}))
        evaluator = Evaluator(self.model, func, env)
        cls = self.model.class_of(func)
        in_module = self.model.is_module_class(cls)
        params = func.params
        positional = [*params.posonly_params, *params.params]
        host_uses: dict[str, str] | None = None  # found on first need: most functions never ask
        qualname = self.model.function_qualname(func) or ""
        passed = self.model.view.device_params.get(qualname, {})
        by_keyword = self.model.view.host_params.get(qualname, {})  # keyword-only: every call names them
        for i, param in enumerate([*positional, *params.kwonly_params]):
            name = param.name.value
            if i == 0 and cls is not None and name in ("self", "cls"):
                continue
            where = None
            if param.annotation is not None:
                where = evaluator.from_annotation(param.annotation.annotation, name)
                if where is not None and where.on_device and where.confidence < Confidence.HIGH and _WEIGHT_LOADER.search(func.name.value):
                    # Weight loaders receive checkpoint tensors, which are read into host memory.
                    where = Where(Place.HOST_TENSOR, Confidence.MEDIUM, f"{name} is a checkpoint tensor given to the weight loader {func.name.value}()")
                elif where is not None and where.on_device and where.confidence is Confidence.MEDIUM and not (
                    in_module or _is_activation_name(name)
                ):
                    # Helpers outside nn.Modules (CPU fallbacks, planners, processors, reference
                    # code) take host tensors as often as device ones: measured on vLLM, half of
                    # such findings were host tensors.
                    where = Where(Place.DEVICE, Confidence.LOW, f"{where.because}, outside an nn.Module")
            if where is None and param.default is not None:
                where = evaluator.eval(param.default)
                if where.is_none or where.place is Place.UNKNOWN:
                    where = None
            if where is None:
                where = self.model.conventions.classify(name)
            if where is None and in_module and not self.model.host_code and func.name.value == "forward" and i == (1 if cls is not None else 0):
                where = device(f"{name} is an argument of nn.Module.forward", Confidence.MEDIUM)
            if where is None or where.place is Place.UNKNOWN or (where.on_device and where.confidence is Confidence.LOW):
                self.facts.weak_params.add(name)
            caller = passed.get(name)
            if caller is not None and (where is None or where.place is Place.UNKNOWN or (where.on_device and where.confidence < caller.confidence)):
                # A caller (in this file or another) passes a GPU tensor here.
                where = Where(Place.DEVICE, min(caller.confidence, Confidence.MEDIUM), caller.because)
            settled = self.model.host_params.get(id(func), {}).get(name) or (
                by_keyword.get(name) if param in params.kwonly_params else None)
            if settled is not None and (where is None or not where.on_device or where.confidence < Confidence.HIGH):
                where = Where(Place.HOST_TENSOR, Confidence.MEDIUM, f"{name} is a host tensor: {settled}")
            if where is not None and where.on_device and where.confidence < Confidence.HIGH:
                host_uses = _host_uses(func) if host_uses is None else host_uses
                evidence = host_uses.get(name)
                if evidence is not None:
                    where = Where(Place.HOST_TENSOR, Confidence.MEDIUM, f"{name} is used as a host tensor: {evidence}")
            if where is not None:
                env[name] = where
        self.walk_block(_block(func.body), env, 0)

    def walk_block(self, body: Sequence, env: Env, loop_depth: int) -> Env:
        for stmt in body:
            self.facts.env_before[id(stmt)] = env
            self.facts.loop_depth_of[id(stmt)] = loop_depth
            env = self.walk_statement(stmt, env, loop_depth)
        return env

    def walk_statement(self, stmt: cst.CSTNode, env: Env, depth: int) -> Env:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self.facts.env_before[id(small)] = env
                env = self.walk_small(small, env)
            return env
        if isinstance(stmt, cst.If):
            # `if x.is_cpu:`, `if device.type == "cpu":`: on the CPU in the branch that says so.
            after_body = self.walk_block(_block(stmt.body), _on_cpu_in(env, stmt.test, True), depth)
            otherwise = _on_cpu_in(env, stmt.test, False)
            if stmt.orelse is None:
                return otherwise if _leaves(stmt.body) else _join_env(otherwise, after_body)
            if isinstance(stmt.orelse, cst.If):
                self.facts.env_before[id(stmt.orelse)] = otherwise
                self.facts.loop_depth_of[id(stmt.orelse)] = depth
                after_else = self.walk_statement(stmt.orelse, otherwise, depth)
            else:
                after_else = self.walk_block(_block(stmt.orelse.body), otherwise, depth)
            if _leaves(stmt.body):
                return after_else  # `if c: ...; return` : what follows runs only when c was false
            return _join_env(after_body, after_else)
        if isinstance(stmt, cst.For):
            inner = dict(env)
            self._bind_loop_target(stmt.target, stmt.iter, env, inner)
            after = self.walk_block(_block(stmt.body), inner, depth + 1)
            merged = _join_env(env, after)
            if stmt.orelse is not None:
                merged = self.walk_block(_block(stmt.orelse.body), merged, depth)
            return merged
        if isinstance(stmt, cst.While):
            after = self.walk_block(_block(stmt.body), env, depth + 1)
            merged = _join_env(env, after)
            if stmt.orelse is not None:
                merged = self.walk_block(_block(stmt.orelse.body), merged, depth)
            return merged
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            after = self.walk_block(_block(stmt.body), env, depth)
            ends = [after]
            for handler in stmt.handlers:
                ends.append(self.walk_block(_block(handler.body), env, depth))
            merged = ends[0]
            for other in ends[1:]:
                merged = _join_env(merged, other)
            if stmt.orelse is not None:
                merged = self.walk_block(_block(stmt.orelse.body), merged, depth)
            if stmt.finalbody is not None:
                merged = self.walk_block(_block(stmt.finalbody.body), merged, depth)
            return merged
        if isinstance(stmt, cst.With):
            inner = dict(env)
            for item in stmt.items:
                if item.asname is not None:
                    self._bind(item.asname.name, UNKNOWN, inner)
            return self.walk_block(_block(stmt.body), inner, depth)
        if isinstance(stmt, cst.Match):
            ends = [self.walk_block(_block(case.body), env, depth) for case in stmt.cases]
            merged = env
            for other in ends:
                merged = _join_env(merged, other)
            return merged
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            new = dict(env)
            new[stmt.name.value] = HOST
            return new
        return env

    def walk_small(self, small: cst.BaseSmallStatement, env: Env) -> Env:
        evaluator = Evaluator(self.model, self.scope, env)
        if isinstance(small, cst.Assign):
            value = evaluator.eval(small.value)
            new = dict(env)
            for target in small.targets:
                self._bind(target.target, value, new, small.value)
            return new
        if isinstance(small, cst.AnnAssign):
            new = dict(env)
            value = evaluator.eval(small.value) if small.value is not None else UNKNOWN
            declared = value.place is Place.UNKNOWN or value.is_none
            if declared:
                # `self.x_cpu: torch.Tensor | None = None`: the attribute's name carries the convention.
                name = (dotted_name(small.target) or "").rsplit(".", 1)[-1]
                value = evaluator.from_annotation(small.annotation.annotation, name) or value
            if small.value is not None or value.place is not Place.UNKNOWN:
                self._bind(small.target, value, new, declaration=declared)
            return new
        if isinstance(small, cst.AugAssign):
            target = small.target
            if isinstance(target, cst.Name) and target.value in env:
                new = dict(env)
                new[target.value] = combine([env[target.value], evaluator.eval(small.value)])
                return new
            return env
        if isinstance(small, cst.Return) and small.value is not None:
            self.facts.returns.append(evaluator.eval(small.value))
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            self._note_registered_buffer(small.value)
            return self._note_append(small.value, env, evaluator)
        return env

    def _note_append(self, call: cst.Call, env: Env, evaluator: "Evaluator") -> Env:
        """`parts.append(t)`: the list `parts` holds tensors where `t` lives (for `torch.cat(parts)`)."""
        func = call.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value in ("append", "insert")
            and isinstance(func.value, cst.Name)
            and call.args
        ):
            return env
        name = func.value.value
        held = env.get(name)
        if held is None or held.place is not Place.HOST or held.is_none:
            return env
        added = evaluator.eval(call.args[-1].value)
        if not added.is_tensor:
            return env
        new = dict(env)
        new[name] = replace(held, items=None, element=_join_element(held.element, added))
        return new

    def _note_registered_buffer(self, call: cst.Call) -> None:
        """`self.register_buffer("name", t)`: like a parameter, the buffer moves with the module."""
        func = call.func
        if not (
            isinstance(func, cst.Attribute)
            and func.attr.value == "register_buffer"
            and dotted_name(func.value) == "self"
            and len(call.args) >= 2
            and isinstance(call.args[0].value, cst.SimpleString)
            and isinstance(self.scope, cst.FunctionDef)
        ):
            return
        name = call.args[0].value.evaluated_value
        value = call.args[1].value
        if not isinstance(name, str) or (isinstance(value, cst.Name) and value.value == "None"):
            return
        where = device(f"self.{name} is a buffer of an nn.Module, which moves with the module", Confidence.MEDIUM)
        old = self.facts.self_attrs.get(name)
        self.facts.self_attrs[name] = where if old is None or name in self.facts.declared_attrs else join(old, where)
        self.facts.declared_attrs.discard(name)

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression, env: Env, inner: Env) -> None:
        """Binds a `for` target; `for i, x in enumerate(xs)` and `for a, b in zip(as, bs)` bind
        each name from its own position (the index of `enumerate` is a Python int)."""
        evaluator = Evaluator(self.model, self.scope, env)
        positions = evaluator.positions_of(iterable)
        if positions is not None and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(positions):
            for element, where in zip(target.elements, positions):
                self._bind(element.value, where, inner)
        else:
            self._bind(target, evaluator.element_of(iterable), inner)

    def _bind(self, target: cst.BaseExpression, value: Where, env: Env, value_node=None, declaration: bool = False) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values = None
            if isinstance(value_node, (cst.Tuple, cst.List)) and len(value_node.elements) == len(elements):
                evaluator = Evaluator(self.model, self.scope, env)
                values = [evaluator.eval(e.value) for e in value_node.elements]
            elif value.items is not None and len(value.items) == len(elements):
                values = list(value.items)  # `ids, count = helper()` where helper returns a tuple
            for i, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    element = element.value
                self._bind(element, values[i] if values else value, env)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and isinstance(self.scope, cst.FunctionDef)
        ):
            name = target.attr.value
            old = self.facts.self_attrs.get(name)
            declared = self.facts.declared_attrs
            if declaration:
                if old is None:
                    self.facts.self_attrs[name] = value
                    declared.add(name)
                return  # after an assignment, a declaration adds nothing
            if old is None or name in declared:
                self.facts.self_attrs[name] = value
                declared.discard(name)
            else:
                self.facts.self_attrs[name] = join(old, value)


def _leaves(body: cst.BaseSuite) -> bool:
    """Whether a block always ends the function (`return` or `raise` as its last statement)."""
    statements = _block(body)
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return isinstance(last, (cst.Return, cst.Raise))


def _join_env(a: Env, b: Env) -> Env:
    if a is b:
        return a
    merged = dict(a)
    for name, where in b.items():
        merged[name] = join(a[name], where) if name in a else where.weaker(Confidence.MEDIUM)
    for name in a.keys() - b.keys():
        merged[name] = a[name].weaker(Confidence.MEDIUM)
    if CPU_PATH not in a or CPU_PATH not in b:
        merged.pop(CPU_PATH, None)  # a path from the GPU's side joins here
    return merged


class Evaluator:
    """Evaluates one expression under one environment."""

    def __init__(self, model: DeviceModel, scope: Scope | None, env: Env) -> None:
        self.model = model
        self.scope = scope
        self.env = env

    def eval(self, expr: cst.BaseExpression) -> Where:
        method = getattr(self, "_eval_" + type(expr).__name__, None)
        if method is None:
            return UNKNOWN
        return method(expr)

    # literals ----------------------------------------------------------------------

    def _host(self, expr: cst.BaseExpression) -> Where:
        return HOST

    _eval_Integer = _eval_Float = _eval_Imaginary = _host
    _eval_SimpleString = _eval_ConcatenatedString = _eval_FormattedString = _host
    _eval_Set = _eval_Dict = _host

    def _eval_Tuple(self, expr: cst.Tuple | cst.List) -> Where:
        if not expr.elements or any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return HOST
        items = tuple(self.eval(e.value) for e in expr.elements)
        tensors = [w for w in items if w.is_tensor]
        return Where(Place.HOST, Confidence.HIGH, items=items, element=join_all(tensors) if len(tensors) == len(items) else None)

    _eval_List = _eval_Tuple
    _eval_ListComp = _eval_SetComp = _eval_DictComp = _eval_GeneratorExp = _eval_Lambda = _host

    # names -------------------------------------------------------------------------

    def _eval_Name(self, expr: cst.Name) -> Where:
        name = expr.value
        if name == "None":
            return NONE
        if name in ("True", "False"):
            return HOST
        if name in self.env:
            return self.env[name]
        if name in self.model.imports.aliases or name in self.model.functions or name in self.model.classes:
            return HOST
        if self.scope is not None and not isinstance(self.scope, cst.Module):
            module_env = self.model.facts(self.model.module).final_env
            if name in module_env:
                return module_env[name]
        return self.model.conventions.classify(name) or UNKNOWN

    def _eval_Attribute(self, expr: cst.Attribute) -> Where:
        attr = expr.attr.value
        if attr in HOST_ATTRIBUTES:
            return HOST
        qual = self.model.qualname(expr)
        if qual is not None and qual.startswith(("torch.", "numpy.", "math.")):
            return HOST  # a module-level constant or function (torch.float32, np.pi)
        if attr in SAME_PLACE_ATTRIBUTES:
            return self.eval(expr.value)
        if isinstance(expr.value, cst.Name) and expr.value.value == "self" and isinstance(self.scope, cst.FunctionDef):
            cls = self.model.self_class(self.scope)
            if cls is not None:
                known = self.model.class_attrs(cls).get(attr)
                if known is not None:
                    return known
        if attr == "gpu":
            return device("a .gpu buffer", Confidence.MEDIUM)
        if attr == "cpu":
            return host_tensor("a .cpu buffer")
        if attr == "np":
            return HOST
        return self.model.conventions.classify(attr) or UNKNOWN

    # compound expressions ----------------------------------------------------------

    def _eval_Subscript(self, expr: cst.Subscript) -> Where:
        key = _string_key(expr.slice[0].slice.value) if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) else None
        by_key = self.model.conventions.classify(key) if key else None
        if by_key is not None:
            return by_key  # `inputs["image_grid_thw"]`, `batch["ids_cpu"]`
        base = self.eval(expr.value)
        if base.items is not None:
            position = _constant_position(expr)
            known = base.item(position) if position is not None else None
            return known if known is not None else UNKNOWN
        if base.place is Place.UNKNOWN:
            return UNKNOWN
        return replace(base, items=None, element=None) if base.element is not None else base

    def _is_non_tensor_constant(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        qual = self.model.qualname(expr) or ""
        return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _DTYPE_NAMES

    def _eval_BinaryOperation(self, expr: cst.BinaryOperation) -> Where:
        return combine([self.eval(expr.left), self.eval(expr.right)])

    def _eval_Comparison(self, expr: cst.Comparison) -> Where:
        if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in expr.comparisons):
            return HOST
        operands = [expr.left, *(t.comparator for t in expr.comparisons)]
        if any(self._is_non_tensor_constant(o) for o in operands):
            return HOST  # `mode == "raw"`, `x.dtype == torch.float16`: never tensor comparisons
        return combine([self.eval(expr.left), *(self.eval(t.comparator) for t in expr.comparisons)])

    def _eval_UnaryOperation(self, expr: cst.UnaryOperation) -> Where:
        if isinstance(expr.operator, cst.Not):
            return HOST
        return self.eval(expr.expression)

    def _eval_BooleanOperation(self, expr: cst.BooleanOperation) -> Where:
        return join(self.eval(expr.left), self.eval(expr.right))

    def _eval_IfExp(self, expr: cst.IfExp) -> Where:
        return join(self.eval(expr.body), self.eval(expr.orelse))

    def _eval_NamedExpr(self, expr: cst.NamedExpr) -> Where:
        return self.eval(expr.value)

    # calls -------------------------------------------------------------------------

    def _eval_Call(self, call: cst.Call) -> Where:
        func = call.func
        qual = self.model.qualname(func)
        if qual is not None:
            known = self._eval_qualified_call(qual, call)
            if known is not None:
                return known
        if self.model.view.functions:
            known = self._project_call(call)
            if known is not None:
                return known
        if isinstance(func, cst.Name):
            if func.value in HOST_BUILTINS:
                return HOST
            if func.value in ("max", "min", "sum"):
                return combine([self.eval(a.value) for a in call.args]) if call.args else UNKNOWN
        if isinstance(func, cst.Attribute):
            result = self._eval_method(func.value, func.attr.value, call)
            if result is not None:
                return result
        target = self.model.resolve_function(func, self.scope)
        if target is not None:
            returned = self.model.returns_of(target)
            if returned.on_device and returned.because:
                return Where(returned.place, returned.confidence, f"returned by {target.name.value}(): {returned.because}")
            return returned
        if isinstance(func, cst.Name) and func.value in self.model.classes:
            return HOST  # an instance of a local class
        return UNKNOWN

    def _project_call(self, call: cst.Call) -> Where | None:
        """What a function of another file of the project returns, from the project view."""
        qual = self.model.callee_qualname(call.func, self.scope)
        fact = self.model.view.functions.get(qual or "")
        if fact is None or fact.returns is None:
            return None
        returned = fact.returns
        if returned.on_device and returned.because:
            where = f"{fact.qualname.rsplit('.', 1)[-1]}() ({fact.path}:{fact.row})"
            return Where(returned.place, returned.confidence, f"returned by {where}: {returned.because}")
        return returned

    def _eval_qualified_call(self, qual: str, call: cst.Call) -> Where | None:
        short = qual.rsplit(".", 1)[-1]
        if qual.startswith("numpy."):
            return HOST
        if qual == "torch.from_numpy":
            return host_tensor("torch.from_numpy() is a host tensor")
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
            # Wherever it is made, a module's parameter moves with the module (`model.to(device)`).
            return device(f"{qual.rsplit('.', 1)[-1]} of an nn.Module, which moves with the module", Confidence.MEDIUM)
        if qual == "torch.device" or (
            qual.startswith("torch.") and (short in HOST_RESULT_FUNCTIONS or short.startswith(("is_", "has_")))
        ):
            return HOST
        if qual.startswith("torch.") and qual.count(".") == 1 and short in TORCH_FACTORIES:
            return self._factory(call, f"{qual}(...)", like=None)
        if qual.startswith("torch.") and short in TORCH_LIKE_FACTORIES:
            like = self.eval(call.args[0].value) if call.args else UNKNOWN
            return self._factory(call, f"{qual}(...)", like=like)
        if qual.startswith("torch.cuda.") and short.endswith("Tensor"):
            return device(f"{qual}(...)")
        if qual.startswith("torch.") and short.endswith("Tensor"):
            return host_tensor(f"{qual}(...)")
        if qual.startswith(("torch.cuda.", "torch.accelerator.", "torch.backends.", "torch.distributed.is_")):
            return HOST
        if qual.startswith("torch."):
            # Operations on tensors: the result lives where the tensor operands live.
            result = combine(list(self._tensor_args(call))) if call.args else UNKNOWN
            if short in SEQUENCE_OPERATIONS and result.place is Place.HOST:
                return UNKNOWN  # a Python list of tensors says nothing of where its tensors are
            return result
        if qual.split(".")[0] in ("math", "os", "sys", "re", "json", "time", "itertools", "functools", "collections"):
            return HOST
        return None

    def _tensor_args(self, call: cst.Call) -> Iterator[Where]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value not in ("input", "other", "tensors", "self"):
                continue
            value = arg.value
            if isinstance(value, (cst.List, cst.Tuple)):
                for element in value.elements:
                    yield self.eval(element.value)
            else:
                where = self.eval(value)
                yield where.element if where.element is not None else where

    def _factory(self, call: cst.Call, what: str, like: Where | None) -> Where:
        device_arg = _kwarg(call, "device")
        if device_arg is not None:
            placed = self.device_of(device_arg)
            if placed.on_device:
                return Where(placed.place, placed.confidence, f"made by {what} on {_code(device_arg)}")
            return placed
        pin = _kwarg(call, "pin_memory")
        if pin is not None and not (isinstance(pin, cst.Name) and pin.value == "False"):
            return host_tensor(f"{what} in pinned host memory")
        if like is not None:
            return like
        if (
            call.args
            and what.split("(", 1)[0].rsplit(".", 1)[-1] not in DATA_FACTORIES
            and isinstance(self.scope, cst.FunctionDef)
            and self.model.builds_module(self.scope)
        ):
            return Where(Place.HOST_TENSOR, Confidence.LOW,
                         f"{what} without device= follows the default device while the module is built "
                         "(model loaders set it with `with torch.device(...)`)")
        return host_tensor(f"{what} without device= is a host tensor")

    def _eval_method(self, receiver: cst.BaseExpression, method: str, call: cst.Call) -> Where | None:
        if method == "cuda":
            return device(f"{_code(receiver)}.cuda()")
        if method == "cpu":
            return host_tensor(".cpu() result")
        if method in ("numpy", "tolist", "item"):
            return HOST
        if method in HOST_RESULT_METHODS or (method.startswith(("is_", "has_")) and method != "is_nonzero"):
            return HOST
        if method == "pin_memory":
            return host_tensor("pinned host tensor")
        if method == "to":
            target = self._to_target(call)
            if target is not None:
                return target
            return self.eval(receiver)
        if method in ("pop", "get") and call.args and call.args[0].keyword is None:
            key = _string_key(call.args[0].value)
            by_key = self.model.conventions.classify(key) if key else None
            if by_key is not None:
                return by_key  # `kwargs.pop("image_grid_thw", None)`
        if method.startswith("__"):
            return None  # a protocol method (`__tensor_flatten__`, `__reduce__`): not a tensor operation
        base = self.eval(receiver)
        if method in ("parameters", "buffers") and base.place is Place.UNKNOWN:
            # An nn.Module's tensors; a module built here without .cuda()/.to() would be a host value.
            return device(f"{_code(receiver)}.{method}() are a module's tensors", Confidence.MEDIUM)
        if method in NEW_TENSOR_METHODS:
            device_arg = _kwarg(call, "device")
            if device_arg is not None:
                return self.device_of(device_arg)
            return base
        if base.is_tensor or base.place is Place.HOST:
            return base
        return None

    def _to_target(self, call: cst.Call) -> Where | None:
        """Where `.to(...)` puts the tensor, or None when it keeps the device (dtype only)."""
        device_arg = _kwarg(call, "device")
        candidates = [device_arg] if device_arg is not None else [a.value for a in call.args if a.keyword is None][:1]
        for arg in candidates:
            qual = self.model.qualname(arg) or ""
            if qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _DTYPE_NAMES:
                return None
            if isinstance(arg, cst.Attribute) and arg.attr.value == "dtype":
                return None
            placed = self.device_of(arg)
            if placed.place is Place.UNKNOWN:
                return None
            if placed.on_device:
                return Where(placed.place, placed.confidence, f"moved by .to({_code(arg)})")
            return placed
        return None

    def device_of(self, arg: cst.BaseExpression) -> Where:
        """What a `device=` argument (or the first argument of `.to`) means."""
        if isinstance(arg, cst.SimpleString):
            text = arg.evaluated_value if isinstance(arg.evaluated_value, str) else ""
            if text.startswith("cpu") or text == "meta":
                return host_tensor(f"device {text!r}")
            return device(f"device {text!r}")
        if isinstance(arg, cst.Integer):
            return device(f"device {arg.value}")
        if isinstance(arg, cst.Name) and arg.value == "None":
            return host_tensor("device=None")
        if isinstance(arg, cst.Call) and self.model.qualname(arg.func) == "torch.device" and arg.args:
            return self.device_of(arg.args[0].value)
        if isinstance(arg, cst.Call) and (self.model.qualname(arg.func) or "").endswith("current_device"):
            return device(_code(arg))
        if isinstance(arg, cst.Attribute) and arg.attr.value == "device":
            owner = self.eval(arg.value)
            if owner.is_tensor:
                return Where(owner.place, owner.confidence, f"{_code(arg)}" if owner.on_device else None)
            text = _code(arg)
            if "cpu" in text.lower():
                return host_tensor(text)
            if self.model.host_code:
                return UNKNOWN  # host-side code: a device variable there is as often the CPU
            return device(text, Confidence.MEDIUM if owner.place is Place.UNKNOWN else Confidence.HIGH)
        text = _code(arg)
        if "cpu" in text.lower() or "host" in text.lower():
            return host_tensor(text)
        if isinstance(arg, cst.IfExp):
            return join(self.device_of(arg.body), self.device_of(arg.orelse))
        if isinstance(arg, cst.Name) and (known := self.env.get(arg.value)) is not None and known.place is Place.HOST_TENSOR:
            return known  # a device the code tested: `if device.type == "cpu":`
        if isinstance(arg, cst.Name) and isinstance(self.scope, cst.FunctionDef):
            values = self.model.local_values(self.scope).get(arg.value, ())
            if len(values) == 1 and arg.value not in _names_in(values[0]):
                # `device = x.device` (or `... if ... else None`) with `x` on the CPU: the CPU.
                assigned = self.device_of(values[0])
                if assigned.on_host:
                    return host_tensor(f"{arg.value} = {_code(values[0])}")
            param = parameter(self.scope, arg.value)
            default = param.default if param is not None else None
            if (isinstance(default, (cst.SimpleString, cst.Call)) and self.device_of(default).on_host
                    and not self.model.passed_here(self.scope, arg.value)):
                return UNKNOWN  # `device: str = "cpu"` that no call in this file sets: the CPU unless a caller asks
        if isinstance(arg, (cst.Name, cst.Attribute)) and not self.model.host_code:
            lowered = text.lower()
            if "device" in lowered or "cuda" in lowered or "gpu" in lowered or lowered in ("dev", "self.dev"):
                return device(text)
        return UNKNOWN

    def positions_of(self, iterable: cst.BaseExpression) -> list[Where] | None:
        """Where each position of the tuples that `enumerate(...)` or `zip(...)` yields lives."""
        if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)):
            return None
        positional = [a.value for a in iterable.args if a.keyword is None and not a.star]
        if iterable.func.value == "enumerate" and len(positional) >= 1:
            return [HOST, self.element_of(positional[0])]
        if iterable.func.value == "zip" and len(positional) == len(iterable.args):
            return [self.element_of(arg) for arg in positional]
        return None

    def element_of(self, iterable: cst.BaseExpression) -> Where:
        """Where the elements of a `for` loop's iterable live."""
        if isinstance(iterable, cst.Call):
            name = iterable.func.value if isinstance(iterable.func, cst.Name) else None
            if name in ("range", "enumerate", "zip", "sorted", "reversed"):
                if name == "range":
                    return HOST
                inner = [self.eval(a.value) for a in iterable.args]
                if name == "zip" or name == "enumerate":
                    return UNKNOWN if any(w.place is Place.UNKNOWN for w in inner) else combine(inner)
                return inner[0] if inner else UNKNOWN
        where = self.eval(iterable)
        if where.is_tensor:
            return where
        if where.element is not None:
            return where.element
        return UNKNOWN if where.place is Place.UNKNOWN else HOST

    def from_annotation(self, annotation: cst.BaseExpression, name: str) -> Where | None:
        """Where a value annotated with `annotation` lives, or None when the annotation says nothing."""
        if isinstance(annotation, cst.SimpleString):
            return None
        if isinstance(annotation, cst.BinaryOperation):  # X | None
            parts = [self.from_annotation(annotation.left, name), self.from_annotation(annotation.right, name)]
            known = [p for p in parts if p is not None and not p.is_none]
            return known[0] if len(known) == 1 else None
        if isinstance(annotation, cst.Name) and annotation.value == "None":
            return NONE
        if isinstance(annotation, cst.Subscript):
            head = self.model.qualname(annotation.value) or dotted_name(annotation.value) or ""
            if head.split(".")[-1] == "Optional":
                inner = annotation.slice[0].slice
                if isinstance(inner, cst.Index):
                    return self.from_annotation(inner.value, name)
            if head.split(".")[-1] in ("list", "List", "dict", "Dict", "tuple", "Tuple", "set", "Sequence"):
                return HOST
            return None
        qual = self.model.qualname(annotation) or dotted_name(annotation) or ""
        last = qual.split(".")[-1]
        if qual in ("torch.Tensor", "Tensor") or (qual.startswith("torch.") and last == "Tensor"):
            by_name = self.model.conventions.classify(name)
            if by_name is not None:
                return Where(Place.HOST_TENSOR, Confidence.MEDIUM, by_name.because) if by_name.on_host else by_name
            if self.model.host_code:
                return Where(Place.HOST_TENSOR, Confidence.MEDIUM, f"{name} is a tensor in host-side code")
            return device(f"{name} is annotated torch.Tensor", Confidence.MEDIUM)
        if qual.startswith("numpy.") or last in ("int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set"):
            return HOST
        return None


_DTYPE_NAMES = frozenset(
    "float float16 float32 float64 bfloat16 half double int int8 int16 int32 int64 long uint8 bool "
    "complex64 complex128 float8_e4m3fn float8_e5m2 short".split()
)


def _constant_position(expr: cst.Subscript) -> int | None:
    """The position `t[1]` or `t[-1]` reads, when it is a constant."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    value = expr.slice[0].slice.value
    negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
    if negative:
        value = value.expression
    if not isinstance(value, cst.Integer):
        return None
    return -int(value.value, 0) if negative else int(value.value, 0)


def _string_key(expr: cst.BaseExpression) -> str | None:
    """The text of a plain string literal used as a key (`d["key"]`), if it names something."""
    if isinstance(expr, cst.SimpleString) and not expr.prefix.strip("rRuU"):
        value = expr.evaluated_value
        if isinstance(value, str) and value.isidentifier():
            return value
    return None


def _kwarg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


_EMPTY_MODULE = cst.Module(body=())


def _code(node: cst.CSTNode) -> str:
    text = _EMPTY_MODULE.code_for_node(node)
    return text if len(text) <= 60 else text[:57] + "..."
