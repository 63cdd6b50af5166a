"""Scans of a module's call sites, and what its callers pass.

The device model learns where a parameter lives from the calls that fill it, where it can see
all of them: a private helper (`_name`) that every call in the module fills with a host
tensor takes a host tensor; an `nn.Module` subclass whose every instance kept in `self.x` is
called with a host tensor reads one in its `forward`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from synclint.devices.evaluate import Evaluator
from synclint.devices.lattice import Place, is_sure_host
from synclint.evidence import Basis
from synclint.syntax import Scope, code_text, dotted_name, find_all, keyword_arg, own_method, self_attribute, small_holding
from synclint.traversal import walk

if TYPE_CHECKING:
    from synclint.devices.model import DeviceModel

CallSite = tuple[cst.Call, Scope, cst.CSTNode]  # a call, its scope, the statement whose facts hold there


class CallSites(cst.CSTVisitor):
    """A walk that knows, for each call, its scope and the statement whose facts hold there."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__()
        self.scopes: list[Scope] = [module]
        self.statements: list[cst.CSTNode] = []  # the innermost line or compound statement

    def enter(self, node: cst.CSTNode) -> None:
        self.statements.append(node)

    def leave(self, original_node: cst.CSTNode) -> None:
        self.statements.pop()

    visit_SimpleStatementLine = visit_If = visit_For = visit_While = visit_With = visit_Try = enter
    leave_SimpleStatementLine = leave_If = leave_For = leave_While = leave_With = leave_Try = leave

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.statements.append(node)
        self.scopes.append(node)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.statements.pop()
        self.scopes.pop()

    def site(self, call: cst.Call) -> CallSite:
        return call, self.scopes[-1], small_holding(self.statements[-1], call) if self.statements else call


def private_call_sites(module: cst.Module, names: set[str]) -> list[tuple[cst.FunctionDef, list[CallSite]]]:
    """Each private function (`_name`, not `__dunder__`) of the module named in `names` with the calls to it, each
    with its scope and the statement it sits in, when the module only calls it (a function also
    named elsewhere, passed as a value, or called with `**kwargs`, has callers we cannot see;
    a call with `*name` is kept for `_positional_args` to look into)."""
    defined: dict[str, list[cst.FunctionDef]] = {}
    calls: dict[str, list[CallSite]] = {}
    mentions: dict[str, int] = {}

    class Sites(CallSites):
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


def takes_tensors(func: cst.FunctionDef) -> bool:
    """Whether a parameter of `func` is annotated as a tensor."""
    return any(p.annotation is not None and "Tensor" in code_text(p.annotation.annotation)
               for p in (*func.params.params, *func.params.kwonly_params))


def submodule_call_sites(module: cst.Module, forwards: dict[str, cst.FunctionDef]
                          ) -> list[tuple[cst.FunctionDef, list[CallSite]]]:
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
            values = {(dotted_name(e.value) or "") if isinstance(e, cst.DictElement) else "" for e in small.value.elements}
            registries[target.value] = values if values <= forwards.keys() else {""}
    holds: dict[str, set[str]] = {}  # attribute -> classes assigned to it ("": something else)
    picked: dict[tuple[int, str], set[str]] = {}  # (id(scope), name) -> classes `name = REGISTRY[...]` may be
    calls: dict[str, list[CallSite]] = {}
    other_uses: set[str] = set()

    class Sites(CallSites):
        def __init__(self) -> None:
            super().__init__(module)
            self.targets: set[int] = set()  # id() of `self.x` nodes being assigned
            self.callees: set[int] = set()  # id() of `self.x` nodes being called

        def visit_Assign(self, node: cst.Assign) -> None:
            value = node.value
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    picked[(id(self.scopes[-1]), target.target.value)] = _registry_pick(value, registries)
                attr = self_attribute(target.target)
                if attr is None:
                    continue
                self.targets.add(id(target.target))
                name = dotted_name(value.func) if isinstance(value, cst.Call) else None
                if name in forwards:
                    holds.setdefault(attr, set()).add(name)
                else:  # `cls = _ADAPTERS[kind]` before `self.adapter = cls(config)`, or something else
                    holds.setdefault(attr, set()).update(picked.get((id(self.scopes[-1]), name or ""), {""}))

        def visit_Call(self, node: cst.Call) -> None:
            attr = self_attribute(node.func)
            if attr is not None and not any(a.star for a in node.args):
                self.callees.add(id(node.func))
                calls.setdefault(attr, []).append(self.site(node))

        def visit_Attribute(self, node: cst.Attribute) -> None:
            attr = self_attribute(node)
            if attr is not None and id(node) not in self.targets and id(node) not in self.callees:
                other_uses.add(attr)  # passed on, or read for a method of its own

    walk(module, Sites())
    by_class: dict[str, list[CallSite]] = {}
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


def calls_by_name(module: cst.Module) -> dict[str, list[cst.Call]]:
    """Every call of the module by the last name of its callee (`f(...)`, `obj.f(...)`)."""
    calls: dict[str, list[cst.Call]] = {}
    for node in find_all(module, cst.Call):
        callee = node.func
        last = callee.value if isinstance(callee, cst.Name) else callee.attr.value if isinstance(callee, cst.Attribute) else None
        if last is not None:
            calls.setdefault(last, []).append(node)
    return calls


def passes_parameter(calls: list[cst.Call], func: cst.FunctionDef, name: str, is_method: bool) -> bool:
    """Whether one of `calls` (to a function called like `func`) passes its parameter `name`
    (by keyword, or by position counting `self` off for methods)."""
    params = [*func.params.posonly_params, *func.params.params]
    position = next((i for i, p in enumerate(params) if p.name.value == name), None)
    if position is not None and is_method and params and params[0].name.value in ("self", "cls"):
        position -= 1
    for call in calls:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if any(a.keyword is not None and a.keyword.value == name for a in call.args) or any(a.star for a in call.args):
            return True
        if position is not None and len(positional) > position:
            return True
    return False


# ---- host parameters, settled by their callers ---------------------------------------------

MAX_HOST_PARAM_ROUNDS = 3


def settle_host_params(model: "DeviceModel") -> None:
    """Parameters of private functions (`_name`, or nested) that every call in this module
    fills with a host value: `self._tiles(crop_shape)` where `crop_shape` is a CPU tensor
    makes the `crop_shape: torch.Tensor` of `_tiles` a CPU tensor, not a guess of the GPU.
    Each round computes the callers' facts as they stand; a round that settles a parameter
    starts the facts again (a caller two calls up settles the next round). The result goes
    into `model.host_params`."""
    symbols = model.symbols
    candidates = {name for name, funcs in symbols.private.items() if len(funcs) == 1 and takes_tensors(funcs[0])}
    sites = symbols.private_call_sites(candidates) if candidates else []
    sites += submodule_call_sites(symbols.module, {
        name: forward for name, cls in symbols.classes.items()
        if (forward := own_method(cls, "forward")) is not None and takes_tensors(forward) and symbols.is_module_class(cls)})
    if not sites:
        return
    for _ in range(MAX_HOST_PARAM_ROUNDS):
        found: dict[int, dict[str, str]] = {}
        for func, calls in sites:
            params = [*func.params.posonly_params, *func.params.params]
            method = symbols.class_of(func) is not None and bool(params) and params[0].name.value in ("self", "cls")
            positional = params[1:] if method else params
            for param in [*positional, *func.params.kwonly_params]:
                name = param.name.value
                if name in model.host_params.get(id(func), {}) or param.annotation is None:
                    continue
                if "Tensor" not in code_text(param.annotation.annotation):
                    continue
                position = positional.index(param) if param in positional else None
                why = _host_at_every_call(model, calls, name, position)
                if why is not None:
                    found.setdefault(id(func), {})[name] = why
        if not found:
            return
        for key, hosts in found.items():
            model.host_params.setdefault(key, {}).update(hosts)
        model.forget_facts()


def _host_at_every_call(model: "DeviceModel", calls: list[CallSite], name: str, position: int | None) -> str | None:
    """Why every one of `calls` passes a host value as parameter `name` (None: one may not)."""
    why = None
    for call, scope, stmt in calls:
        positional = _positional_args(model, call, scope)
        if positional is None:
            return None  # `*args` we cannot see into
        arg = keyword_arg(call, name)
        if arg is None and position is not None and position < len(positional):
            arg = positional[position]
        if arg is None:
            return None  # the default, or through *args
        where = Evaluator(model, scope, model.facts(scope).env_before.get(id(stmt), {})).eval(arg)
        named_host = where.place is Place.HOST and where.basis is Basis.NAME
        if not named_host and not is_sure_host(where):
            # A Python value where a tensor is annotated says nothing sure (but a value named
            # for the host, `meta.grid_thw_cpu`, is a host tensor there), nor does a host
            # tensor on one path and something unknown on another (`return torch.tensor([])`).
            return None
        row = code_text(call.func)
        why = why or f"every call passes a host value, like `{code_text(arg)}` to {row}()"
    return why


def _positional_args(model: "DeviceModel", call: cst.Call, scope: Scope) -> list[cst.BaseExpression] | None:
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
        assigned = model.local_values(scope).get(arg.value.value, []) if (
            isinstance(arg.value, cst.Name) and isinstance(scope, cst.FunctionDef)) else []
        if len(assigned) != 1 or not isinstance(assigned[0], (cst.Tuple, cst.List)):
            return None
        if any(isinstance(element, cst.StarredElement) for element in assigned[0].elements):
            return None
        values.extend(element.value for element in assigned[0].elements)
    return values
