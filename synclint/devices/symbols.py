"""What a module defines and what its names stand for: classes, functions, methods, qualified names.

`Symbols` indexes one module once (its top-level functions and classes, each method's class,
each nested function's enclosing function, its import aliases) and answers the naming
questions of the device model, the project summaries and the rules: the qualified name an
expression spells, the project function a call names, the class of `self`, whether a class
is an `nn.Module`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import libcst as cst

from synclint.devices.callers import CallSite, Scope, private_call_sites
from synclint.devices.imports import ImportTable
from synclint.project.facts import ProjectFile
from synclint.syntax import (
    annotated_class,
    child_blocks,
    dotted_name,
    own_method,
    ModuleScopes,
    statements,
)
from synclint.traversal import walk


class Symbols:
    """The names of one module."""

    def __init__(self, module: cst.Module, project: ProjectFile) -> None:
        self.module = module
        self.project = project
        self.imports = ImportTable(project.package)
        self.functions: dict[str, cst.FunctionDef] = {}  # top-level functions by name
        self.classes: dict[str, cst.ClassDef] = {}  # top-level classes by name
        self.parents: dict[int, cst.ClassDef] = {}  # id(method) -> its class
        self.enclosing: dict[int, cst.FunctionDef] = {}  # id(nested function) -> enclosing function
        self.private: dict[str, list[cst.FunctionDef]] = {}  # private functions and methods by name
        self._qualnames: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._callees: dict[int, tuple[cst.BaseExpression, str | None]] = {}
        self._builds_module: dict[int, bool] = {}  # id(function) -> whether it runs only to build an nn.Module
        self._holds: dict[int, bool] = {}  # id(class) -> whether it keeps layers or parameters in `self`
        self._private_calls: dict[str, list[tuple[cst.Call, Scope, cst.CSTNode]]] | None = None
        self._private_sites: tuple[frozenset[str], list[tuple[cst.FunctionDef, list[CallSite]]]] | None = None
        self._kept: dict[int, dict[str, tuple[frozenset[str], frozenset[str]]]] = {}  # id(class) -> `kept_objects`
        self._buffers: dict[int, bool] = {}  # id(class) -> `registers_buffers`
        self._params: dict[int, dict[str, cst.Param]] = {}  # id(function) -> its parameters by name
        self._index(module.body, None, None)

    def private_call_sites(self, names: set[str]) -> list[tuple[cst.FunctionDef, list[CallSite]]]:
        """`callers.private_call_sites(module, names)`, from one walk of the module for every private
        function it defines (what it finds of a name does not depend on the other names asked)."""
        known = self._private_sites
        if known is None or not names <= known[0]:
            asked = frozenset(self.private) | names | (known[0] if known is not None else frozenset())
            known = self._private_sites = (asked, private_call_sites(self.module, set(asked)))
        return [(func, sites) for func, sites in known[1] if func.name.value in names]

    @functools.cached_property
    def scopes(self) -> ModuleScopes:
        """Each scope's bindings and the nodes of its own code, from one walk of the module (asked of
        nearly every function)."""
        return ModuleScopes(self.module)

    def attribute_values(self, cls: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        """`syntax.self_attribute_assignments(cls)`, for the device model and every rule that asks.
        Shared: read it, do not change it."""
        return self.scopes.self_attributes(cls)

    def parameter(self, func: cst.FunctionDef, name: str) -> cst.Param | None:
        """`syntax.parameter(func, name)`, from the function's parameters by name, gathered once."""
        params = self._params.get(id(func))
        if params is None:
            params = self._params[id(func)] = {}
            listed = func.params
            for param in (*listed.posonly_params, *listed.params, *listed.kwonly_params, listed.star_arg,
                          listed.star_kwarg):
                if isinstance(param, cst.Param):
                    params.setdefault(param.name.value, param)
        return params.get(name)

    def registers_buffers(self, cls: cst.ClassDef) -> bool:
        """`registers_buffers(cls)`, once per class."""
        found = self._buffers.get(id(cls))
        if found is None:
            found = self._buffers[id(cls)] = registers_buffers(cls)
        return found

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
                    self.private.setdefault(stmt.name.value, []).append(stmt)
                if cls is not None:
                    self.parents[id(stmt)] = cls
                elif func is not None:
                    self.enclosing[id(stmt)] = func
                else:
                    self.functions[stmt.name.value] = stmt
                self._index(statements(stmt.body), None, stmt)
            elif isinstance(stmt, cst.ClassDef):
                if cls is None and func is None:
                    self.classes[stmt.name.value] = stmt
                self._index(statements(stmt.body), stmt, None)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                for block in child_blocks(stmt):
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

    def owner_qualname(self, scope: Scope | None) -> str | None:
        """The summarised function holding code in `scope`: itself, or for a nested function the
        function around it (`function_qualname`); None at the top level."""
        while isinstance(scope, cst.FunctionDef):
            qual = self.function_qualname(scope)
            if qual is not None:
                return qual
            scope = self.enclosing.get(id(scope))
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
        if (isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self"
                and (cls := self.self_class(func)) is not None):
            # `self.decoder.update(...)`: the one project class every assignment of `self.decoder` makes.
            single = self.kept_objects(cls).get(value.attr.value, (frozenset(), frozenset()))[0]
            return next(iter(single)) if len(single) == 1 else None
        if isinstance(value, cst.Call) and dotted_name(value.func) == "super" and not value.args:
            cls = self.self_class(func)
            if cls is not None and cls.bases:
                return self.class_qualname(cls.bases[0].value)
            return None
        if isinstance(value, cst.Name) and func is not None:
            param = self.parameter(func, value.value)
            if param is not None and param.annotation is not None:
                return self.annotated_qualname(annotated_class(param.annotation.annotation))
        return None

    def annotated_qualname(self, name: str | None) -> str | None:
        """The qualified name of the class an annotation names (`annotated_class`), when it names one."""
        if name is None or not name[:1].isupper():
            return None
        if name in self.classes:
            return self.qualify_local(name)
        head = name.split(".")[0]
        full = self.imports.aliases.get(head)
        return full + name[len(head):] if full is not None else name

    def constructed_class(self, expr: cst.BaseExpression | None) -> str | None:
        """The project class that `expr` makes an object of (`Decoder(...)`, `mod.Decoder(...)`), if any."""
        if not isinstance(expr, cst.Call):
            return None
        name = dotted_name(expr.func)
        if name is None or not name.rpartition(".")[2][:1].isupper():
            return None
        qual = self.class_qualname(expr.func)
        return qual if qual is not None and (name in self.classes or self.in_project(qual)) else None

    def element_classes(self, expr: cst.BaseExpression | None) -> frozenset[str]:
        """The project classes of the objects a container that `expr` builds holds: `[A(), B()]`,
        `nn.ModuleList([Block(...) for _ in range(n)])`, `{"a": A()}`, `nn.Sequential(A(), B())`."""
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return frozenset(c for e in expr.elements if (c := self.constructed_class(e.value)) is not None)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            found = self.constructed_class(expr.elt)
            return frozenset([found]) if found is not None else frozenset()
        if isinstance(expr, cst.Dict):
            return frozenset(c for e in expr.elements if isinstance(e, cst.DictElement)
                             and (c := self.constructed_class(e.value)) is not None)
        if isinstance(expr, cst.DictComp):
            found = self.constructed_class(expr.value)
            return frozenset([found]) if found is not None else frozenset()
        if isinstance(expr, cst.Call) and expr.args:
            name = (dotted_name(expr.func) or "").rpartition(".")[2]
            if name in ("ModuleList", "ModuleDict", "list", "tuple", "dict"):
                return self.element_classes(expr.args[0].value)
            if name == "Sequential":
                return frozenset(c for arg in expr.args if (c := self.constructed_class(arg.value)) is not None)
        return frozenset()

    def kept_objects(self, cls: cst.ClassDef) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """For each `self.<attr>` of `cls` that holds objects of project classes: the classes of the object
        it holds (every assignment constructs one, or the class body annotates it), and of the elements of
        the containers it holds."""
        known = self._kept.get(id(cls))
        if known is not None:
            return known
        kept: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        for attr, values in self.attribute_values(cls).items():
            made = [self.constructed_class(value) for value in values]
            single = frozenset(c for c in made if c is not None) if all(made) else frozenset()
            elements = frozenset(c for value in values for c in self.element_classes(value))
            if single or elements:
                kept[attr] = (single, elements)
        for stmt in statements(cls.body):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        qual = self.annotated_qualname(annotated_class(small.annotation.annotation))
                        if qual is not None and self.in_project(qual):
                            kept.setdefault(small.target.value, (frozenset([qual]), frozenset()))
        self._kept[id(cls)] = kept
        return kept

    def resolve_function(self, func_expr: cst.BaseExpression, scope: Scope | None) -> cst.FunctionDef | None:
        """The local function or method that a call's `func` names, if any."""
        if isinstance(func_expr, cst.Name):
            return self.functions.get(func_expr.value)
        if (
            isinstance(func_expr, cst.Attribute)
            and isinstance(func_expr.value, cst.Name)
            and func_expr.value.value in ("self", "cls")
            and isinstance(scope, cst.FunctionDef)
        ):
            cls = self.class_of(scope)
            if cls is not None:
                return self.method(cls, func_expr.attr.value)
        return None

    def method(self, cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
        """The method `name` of `cls`, or of a base class defined in this file."""
        own = own_method(cls, name)
        if own is not None:
            return own
        for base in cls.bases:
            base_cls = self.classes.get(dotted_name(base.value) or "")
            if base_cls is not None and base_cls is not cls:
                found = self.method(base_cls, name)
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
        if cls is not None and (self.is_module_class(cls) or self.registers_buffers(cls)):
            if name == "__init__":
                result = True
            elif name.startswith("_") and not name.startswith("__"):
                if self._private_calls is None:
                    self._private_calls = {f.name.value: calls for f, calls in self.private_call_sites(set(self.private))}
                calls = self._private_calls.get(name, [])
                result = bool(calls) and all(
                    isinstance(scope, cst.FunctionDef) and self.builds_module(scope) for _, scope, _ in calls
                )
        self._builds_module[id(func)] = result
        return result

    def is_module_class(self, cls: cst.ClassDef | None) -> bool:
        """Whether `cls` is a torch.nn.Module: by its bases, followed within the module, or, where a
        base is defined elsewhere (`ModelMixin`, `PreTrainedModel`), by what only a module does:
        keeping layers or parameters in `self` (`self.proj = nn.Linear(...)`, `nn.Parameter`),
        registering buffers."""
        seen = 0
        while cls is not None and seen < 10:
            seen += 1
            nxt = None
            for base in cls.bases:
                qual = self.qualname(base.value) or dotted_name(base.value) or ""
                if qual.endswith("Module"):
                    return True
                nxt = self.classes.get(dotted_name(base.value) or "") or nxt
            if nxt is None and cls.bases and self._holds_modules(cls):
                return True
            cls = nxt
        return False

    def _holds_modules(self, cls: cst.ClassDef) -> bool:
        known = self._holds.get(id(cls))
        if known is None:
            known = self._holds[id(cls)] = self.registers_buffers(cls) or any(
                isinstance(value, cst.Call) and _is_module_constructor(self.qualname(value.func) or "")
                for values in self.attribute_values(cls).values() for value in values)
        return known


def _is_module_constructor(qual: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.ModuleList`, `torch.nn.Parameter`: what only a module keeps."""
    return qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1][:1].isupper() and not qual.startswith("torch.nn.functional.")


def registers_buffers(cls: cst.ClassDef) -> bool:
    """Whether a method of `cls` calls `self.register_buffer(...)`: only an nn.Module can."""
    finder = _BufferCall()
    walk(cls, finder)
    return finder.found


class _BufferCall(cst.CSTVisitor):
    """The walk of `registers_buffers`, ending at the first such call."""

    walks_trivia = False  # calls only

    def __init__(self) -> None:
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "register_buffer":
            self.found = True
        return not self.found
