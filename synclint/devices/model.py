"""The device model's facade: where does this value live?

Every rule asks one question of an expression, at a statement of a function: `DeviceModel.where`.
The model answers lazily: a function is walked (`synclint.devices.flow`) the first time a
question falls in it, a class's attributes are gathered from all its methods the first time
one is read, a helper's return is the join of its returns. The rest of the package does the
work, one job per module:

    lattice      the values (`Where`: device, host tensor, host value, unknown) and their joins
    torch_api    what torch's functions and methods return
    conventions  every naming convention the analysis uses
    imports      import aliases to qualified names
    symbols      the module's classes, functions and qualified names
    flow         the walker: environments before each statement, branches and loops
    narrowing    what a branch's test proves (`if x.is_cpu:`)
    usage        what a function's code shows about its names (`x.numpy()`, `loss.backward()`)
    program      whether the file puts its model or data on an accelerator
    evaluate     the expression evaluator
    callers      call-site scans, and parameters settled by what every caller passes
"""

from __future__ import annotations

from dataclasses import replace

from collections.abc import Sequence

import libcst as cst

from synclint.devices.callers import calls_by_name, passes_parameter, settle_host_params
from synclint.devices.conventions import NameConventions
from synclint.devices.evaluate import Evaluator
from synclint.devices.flow import FlowWalker, FunctionFacts
from synclint.devices.lattice import UNKNOWN, Env, Place, Where, join, join_all
from synclint.devices.narrowing import CPU_PATH, OTHER_PLATFORM
from synclint.devices.program import accelerator_use
from synclint.devices.symbols import Symbols
from synclint.devices.usage import runs_a_model, tensor_uses
from synclint.evidence import Certainty
from synclint.project.facts import NO_ANSWERS, ProjectFile
from synclint.syntax import Scope, code_text, dotted_name, is_property, local_assignments, statements


class DeviceModel:
    """Answers where a value lives, for one module."""

    def __init__(
        self,
        module: cst.Module,
        conventions: NameConventions | None = None,
        host_code: bool = False,
        project: ProjectFile | None = None,
    ) -> None:
        self.module = module
        self.host_code = host_code  # the file runs on the host (conventions.is_host_code_path)
        self.conventions = conventions or NameConventions()
        self.project = project or ProjectFile()
        self.answers = self.project.answers or NO_ANSWERS  # the solved facts of the project's other files
        self.symbols = Symbols(module, self.project)
        # Parameters of private functions that every call in this module fills with a host
        # value: id(function) -> name -> why (see callers.settle_host_params).
        self.host_params: dict[int, dict[str, str]] = {}
        self._settled = False
        self._facts: dict[int, FunctionFacts] = {}
        self._class_attrs: dict[int, dict[str, Where]] = {}
        self._returns: dict[int, Where] = {}
        self._in_progress: set[int] = set()
        self._local_values: dict[int, dict[str, list[cst.BaseExpression | None]]] = {}
        self._calls_by_name: dict[str, list[cst.Call]] | None = None
        self._accelerator_use: list[str | None] = []  # computed once: [the answer]
        self._imports_torch: bool | None = None
        self._tensor_uses: dict[int, dict[str, str]] = {}
        self._model_calls: dict[int, str | None] = {}  # id(class or function) -> its first call of a model

    # ---- the question rules ask ---------------------------------------------------------

    def where(self, expr: cst.BaseExpression, scope: Scope | None, stmt: cst.CSTNode | None,
              comprehensions: Sequence[cst.BaseComp] = ()) -> Where:
        """Where `expr` lives, evaluated just before statement `stmt` of `scope`, inside the
        `comprehensions` around it (outermost first), whose targets it may name."""
        evaluator = self._evaluator(scope, stmt, comprehensions)
        found = evaluator.eval(expr)
        cpu_path = evaluator.env.get(CPU_PATH)
        if cpu_path is not None and found.on_device and found.certainty is Certainty.MEDIUM:
            # A guess of the GPU on the CPU side of a dispatch (`if x.is_cuda: return kernel(x)`).
            return replace(found, certainty=Certainty.LOW, because=f"{found.because}; but {cpu_path.because}")
        return found

    def where_read(self, expr: cst.BaseExpression, scope: Scope | None, stmt: cst.CSTNode | None,
                   comprehensions: Sequence[cst.BaseComp] = ()) -> Where:
        """Where `expr` lives, given that the code reads its values on the host with `.item()` or
        `.tolist()`: only a tensor or a numpy value has those, so in torch code a value of
        unknown type read so is a tensor (`Evaluator.tensor`: on the GPU where the file or
        its package runs on GPUs); numpy evidence makes it a host value as before."""
        found = self.where(expr, scope, stmt, comprehensions)
        if found.place is not Place.UNKNOWN:
            return found
        return self._evaluator(scope, stmt, comprehensions).tensor(f"`{code_text(expr, 40)}` is read as only a tensor or an array can be")

    def platform_at(self, scope: Scope | None, stmt: cst.CSTNode | None) -> str | None:
        """The accelerator other than a CUDA GPU that the code at `stmt` runs on, by the branch it
        is in (`if is_npu_available():`), or None."""
        if scope is None or stmt is None:
            return None
        marker = self.facts(scope).env_before.get(id(stmt), {}).get(OTHER_PLATFORM)
        return marker.because if marker is not None else None

    def to_target(self, call: cst.Call, scope: Scope | None, stmt: cst.CSTNode | None) -> Where | None:
        """Where `<tensor>.to(...)` puts its result; None when it keeps the device (a dtype) or says nothing known."""
        return self._evaluator(scope, stmt)._to_target(call)

    def placement(self, arg: cst.BaseExpression, scope: Scope | None, stmt: cst.CSTNode | None) -> Where:
        """What a `device=` argument means (a host tensor for "cpu"), evaluated just before `stmt`."""
        return self._evaluator(scope, stmt).device_of(arg)

    def _evaluator(self, scope: Scope | None, stmt: cst.CSTNode | None,
                   comprehensions: Sequence[cst.BaseComp] = ()) -> "Evaluator":
        """An evaluator of what holds just before `stmt` of `scope`, inside `comprehensions`."""
        env: Env = {}
        if scope is not None and stmt is not None:
            env = self.facts(scope).env_before.get(id(stmt), {})
        evaluator = Evaluator(self, scope, env)
        for comprehension in comprehensions:
            evaluator = evaluator.within(comprehension)
        return evaluator

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
            settle_host_params(self)
        cls = self.symbols.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
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
            base_cls = self.symbols.classes.get(base_name or "")
            if base_cls is not None and base_cls is not cls:
                attrs.update(self.class_attrs(base_cls))
            elif base_cls is None:
                attrs.update(self.answers.class_attrs.get(self.symbols.class_qualname(base.value) or "", {}))
        evaluator = Evaluator(self, None, {})
        for stmt in statements(cls.body):
            # Class-level annotations: dataclass fields and NamedTuple members.
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        ann = evaluator.from_annotation(small.annotation.annotation, small.target.value)
                        if ann is not None:
                            attrs[small.target.value] = ann
        declared: dict[str, Where] = {}
        for stmt in statements(cls.body):
            if isinstance(stmt, cst.FunctionDef):
                if is_property(stmt):
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
                if ann is not None and ann.on_device and ann.certainty is Certainty.MEDIUM and not self.symbols.is_module_class(self.symbols.class_of(func)):
                    ann = ann.weaker(Certainty.LOW)  # `-> torch.Tensor` of a helper: as its parameters
                if ann is not None and result.items is None and (
                    result.place is Place.UNKNOWN or (ann.place is Place.HOST and not ann.is_none)
                ):
                    result = ann  # `-> bool` is a bool, whatever a path through the body seemed to return
        finally:
            self._in_progress.discard(key)
        self._returns[key] = result
        return result

    MAX_HOST_PARAM_ROUNDS = 3


    def accelerator_use(self) -> str | None:
        """The first code of this file that puts a model or data on an accelerator (`program`)."""
        if not self._accelerator_use:
            self._accelerator_use.append(None if self.host_code else accelerator_use(self.module))
        return self._accelerator_use[0]

    def imports_torch(self) -> bool:
        """Whether the module imports torch (any of its modules)."""
        if self._imports_torch is None:
            self._imports_torch = any(q == "torch" or q.startswith("torch.") for q in self.symbols.imports.aliases.values())
        return self._imports_torch

    def tensor_uses(self, scope: Scope) -> dict[str, str]:
        """The names `scope` uses as only a tensor can be used (`usage.tensor_uses`), once."""
        found = self._tensor_uses.get(id(scope))
        if found is None:
            found = self._tensor_uses[id(scope)] = tensor_uses(self.symbols.scopes.own_nodes(scope, classes=False))
        return found

    def runs_a_model(self, func: cst.FunctionDef) -> str | None:
        """The first call of a model (`self.transformer(...)`) in `func`, or in any method of its
        class (a pipeline, a runner: code that drives a model hands it tensors on its device)."""
        cls = self.symbols.self_class(func)
        owner = cls if cls is not None else func
        key = id(owner)
        if key not in self._model_calls:
            functions = [s for s in statements(cls.body) if isinstance(s, cst.FunctionDef)] if cls is not None else [func]
            self._model_calls[key] = next(
                (found for f in functions if (found := runs_a_model(self.symbols.scopes.own_nodes(f, classes=True),
                                                                     self.conventions)) is not None), None)
        return self._model_calls[key]

    def forget_facts(self) -> None:
        """Drop every computed fact (after `host_params` changed: they are computed again)."""
        self._facts.clear()
        self._class_attrs.clear()
        self._returns.clear()

    def local_values(self, func: cst.CSTNode) -> dict[str, list[cst.BaseExpression | None]]:
        """The values assigned to each name in `func`'s own body (`syntax.local_assignments`), once."""
        if isinstance(func, (cst.FunctionDef, cst.Module, cst.ClassDef, cst.Lambda)):
            return self.symbols.scopes.local(func)
        found = self._local_values.get(id(func))
        if found is None:
            found = self._local_values[id(func)] = local_assignments(func)
        return found

    def passed_here(self, func: cst.FunctionDef, name: str) -> bool:
        """Whether some call in this module to a function called like `func` passes its
        parameter `name` (by keyword, or by position counting `self` off for methods)."""
        if self._calls_by_name is None:
            self._calls_by_name = calls_by_name(self.module)
        is_method = self.symbols.class_of(func) is not None
        return passes_parameter(self._calls_by_name.get(func.name.value, []), func, name, is_method)
