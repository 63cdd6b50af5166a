"""The flow walker: each function's statements in order, with the environment before each.

An environment maps names to where their values live. `FlowWalker` walks one function (or
the module body) once, recording the environment before every statement, so that `where` is
flow-sensitive over straight-line code; the arms of a branch are walked apart and joined,
loops join their body's end with their entry, and what a method stores in `self.x` is noted
for the class. Parameters start from their annotations, defaults, names, the project's
callers and the function's own use of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst

from synclint.devices.conventions import PARAMETER_NAME, WEIGHT_LOADER, is_activation_name
from synclint.devices.evaluate import Evaluator
from synclint.devices.lattice import (
    HOST,
    UNKNOWN,
    Env,
    Place,
    Where,
    combine,
    device,
    guess_host,
    is_host_guess,
    join,
    join_all,
    join_element,
)
from synclint.devices.narrowing import CPU_PATH, OTHER_PLATFORM, hosts_when, on_cpu_in, other_platform_when, tensors_when
from synclint.devices.usage import host_uses
from synclint.evidence import Basis, Certainty
from synclint.syntax import Scope, dotted_name, ends_function, statements, string_key, unpacked

if TYPE_CHECKING:
    from synclint.devices.model import DeviceModel

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
        outer = self.model.symbols.enclosing.get(id(func))
        if outer is not None:  # a closure sees the enclosing function's names
            outer_facts = self.model.facts(outer)
            env.update(outer_facts.env_before.get(id(func), {}))
        evaluator = Evaluator(self.model, func, env)
        cls = self.model.symbols.class_of(func)
        in_module = self.model.symbols.is_module_class(cls)
        runs_model = None if in_module else self.model.runs_a_model(func)
        params = func.params
        positional = [*params.posonly_params, *params.params]
        own_uses: dict[str, str] | None = None  # found on first need: most functions never ask
        qualname = self.model.symbols.function_qualname(func) or ""
        passed = self.model.answers.device_params.get(qualname, {})
        by_keyword = self.model.answers.host_params.get(qualname, {})  # keyword-only: every call names them
        for i, param in enumerate([*positional, *params.kwonly_params]):
            name = param.name.value
            if i == 0 and cls is not None and name in ("self", "cls"):
                continue
            where = None
            if param.annotation is not None:
                where = evaluator.from_annotation(param.annotation.annotation, name)
                if where is not None and where.element is not None:  # `batch: dict[str, Tensor]`
                    where = replace(where, element=self._annotated_tensor(where.element, name, in_module, runs_model))
                elif where is not None:
                    where = self._annotated_tensor(where, name, in_module, runs_model)
            if where is None and param.default is not None:
                where = evaluator.eval(param.default)
                if where.is_none or where.place is Place.UNKNOWN:
                    where = None
                elif where.spec is not None:
                    where = replace(where, spec=None)  # `device="cuda"`: a caller may pass another
            if where is None:
                where = self.model.conventions.classify(name)
            if where is None and in_module and not self.model.host_code and func.name.value == "forward" and i == (1 if cls is not None else 0):
                where = replace(device(f"{name} is an argument of nn.Module.forward", Certainty.MEDIUM),
                                basis=Basis.ANNOTATION)
            if where is None or where.place is Place.UNKNOWN or (where.on_device and where.certainty is Certainty.LOW):
                self.facts.weak_params.add(name)
            caller = passed.get(name)
            if caller is not None and (where is None or where.place is Place.UNKNOWN or (where.on_device and where.certainty < caller.certainty)):
                # A caller (in this file or another) passes a GPU tensor here.
                where = Where(Place.DEVICE, min(caller.certainty, Certainty.MEDIUM), caller.because)
            settled = self.model.host_params.get(id(func), {}).get(name) or (
                by_keyword.get(name) if param in params.kwonly_params else None)
            if settled is not None and (where is None or not where.on_device or where.certainty < Certainty.HIGH):
                where = Where(Place.HOST_TENSOR, Certainty.MEDIUM, f"{name} is a host tensor: {settled}", basis=Basis.USE)
            if where is not None and where.on_device and where.certainty < Certainty.HIGH:
                own_uses = host_uses(self.model.symbols.scopes.own_nodes(func, classes=True)) if own_uses is None else own_uses
                evidence = own_uses.get(name)
                if evidence is not None:
                    where = Where(Place.HOST_TENSOR, Certainty.MEDIUM, f"{name} is used as a host tensor: {evidence}",
                                  basis=Basis.USE)
            if where is not None:
                env[name] = where
        self.walk_block(statements(func.body), env, 0)

    def _annotated_tensor(self, where: Where, name: str, in_module: bool, runs_model: str | None) -> Where:
        """What a parameter annotated as a tensor (or holding tensors) is, by where its function runs."""
        if not where.on_device or where.certainty is Certainty.HIGH:
            return where
        func = self.scope
        assert isinstance(func, cst.FunctionDef)
        if WEIGHT_LOADER.search(func.name.value) and not PARAMETER_NAME.match(name):
            # Weight loaders receive checkpoint tensors, which are read into host memory (and
            # the model's parameter they load it into, which is where the model is).
            return Where(Place.HOST_TENSOR, Certainty.MEDIUM,
                         f"{name} is a checkpoint tensor given to the weight loader {func.name.value}()")
        if where.certainty is not Certainty.MEDIUM:
            return where
        if runs_model:
            # Code that calls a model (a pipeline's denoising loop, a runner's step) hands it its tensors.
            return replace(where, place=Place.DEVICE, certainty=Certainty.MEDIUM,
                           because=f"{where.because}, in code that runs a model (`{runs_model}`)")
        if not (in_module or is_activation_name(name)):
            # Helpers outside nn.Modules (CPU fallbacks, planners, processors, reference code)
            # take host tensors as often as device ones, even in a file that puts other data on
            # the GPU: judged, 8 of 10 such findings were real on six projects and 5 of 18 on
            # vLLM 0.33.0 (bench/README.md, "Calibration").
            return replace(where, place=Place.DEVICE, certainty=Certainty.LOW, because=f"{where.because}, outside an nn.Module")
        return where

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
            # `if x.is_cpu:`, `if device.type == "cpu":`: on the CPU in the branch that says so;
            # `if isinstance(x, torch.Tensor):`: a tensor there.
            after_body = self.walk_block(statements(stmt.body), self._narrowed(env, stmt.test, True), depth)
            otherwise = self._narrowed(env, stmt.test, False)
            if stmt.orelse is None:
                return otherwise if ends_function(stmt.body) else join_env(otherwise, after_body)
            if isinstance(stmt.orelse, cst.If):
                self.facts.env_before[id(stmt.orelse)] = otherwise
                self.facts.loop_depth_of[id(stmt.orelse)] = depth
                after_else = self.walk_statement(stmt.orelse, otherwise, depth)
            else:
                after_else = self.walk_block(statements(stmt.orelse.body), otherwise, depth)
            if ends_function(stmt.body):
                return after_else  # `if c: ...; return` : what follows runs only when c was false
            return join_env(after_body, after_else)
        if isinstance(stmt, cst.For):
            inner = dict(env)
            self._bind_loop_target(stmt.target, stmt.iter, env, inner)
            after = self._walk_loop_body(stmt, inner, depth)
            merged = join_env(env, after)
            if stmt.orelse is not None:
                merged = self.walk_block(statements(stmt.orelse.body), merged, depth)
            return merged
        if isinstance(stmt, cst.While):
            after = self._walk_loop_body(stmt, env, depth)
            merged = join_env(env, after)
            if stmt.orelse is not None:
                merged = self.walk_block(statements(stmt.orelse.body), merged, depth)
            return merged
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            after = self.walk_block(statements(stmt.body), env, depth)
            ends = [after]
            for handler in stmt.handlers:
                ends.append(self.walk_block(statements(handler.body), env, depth))
            merged = ends[0]
            for other in ends[1:]:
                merged = join_env(merged, other)
            if stmt.orelse is not None:
                merged = self.walk_block(statements(stmt.orelse.body), merged, depth)
            if stmt.finalbody is not None:
                merged = self.walk_block(statements(stmt.finalbody.body), merged, depth)
            return merged
        if isinstance(stmt, cst.With):
            inner = dict(env)
            for item in stmt.items:
                if item.asname is not None:
                    self._bind(item.asname.name, UNKNOWN, inner)
            return self.walk_block(statements(stmt.body), inner, depth)
        if isinstance(stmt, cst.Match):
            ends = [self.walk_block(statements(case.body), env, depth) for case in stmt.cases]
            merged = env
            for other in ends:
                merged = join_env(merged, other)
            return merged
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            new = dict(env)
            new[stmt.name.value] = HOST
            return new
        return env

    MAX_LOOP_PASSES = 2  # nested loops walk their bodies up to 2**depth times

    def _walk_loop_body(self, loop: cst.For | cst.While, entry: Env, depth: int) -> Env:
        """Walk a loop's body until what holds at its top settles: a value assigned late in one
        iteration is what the next one starts with (`prev = loss` at the end, `prev.item()` at
        the top), as pyright's code flow iterates loops. Names bound afresh each iteration (the
        loop target) keep what `entry` says of them. At most MAX_LOOP_PASSES walks."""
        body = statements(loop.body)
        top = entry
        after = self.walk_block(body, top, depth + 1)
        for _ in range(self.MAX_LOOP_PASSES - 1):
            again = {**join_env(top, after), **{name: entry[name] for name in _bound_each_iteration(loop, entry)}}
            if _settled(again, top):
                break
            top = again
            after = self.walk_block(body, top, depth + 1)
        return after

    def _narrowed(self, env: Env, test: cst.BaseExpression, holds: bool) -> Env:
        """`env` where `test` is `holds`: what it proves on the CPU, and what it proves a tensor."""
        env = on_cpu_in(env, test, holds)
        platform = other_platform_when(test, holds)
        if platform is not None:
            env = {**env, OTHER_PLATFORM: Where(Place.HOST, Certainty.HIGH, platform)}
        hosts = hosts_when(test, holds, self.model.symbols.qualname)
        if hosts:
            env = {**env, **{name: Where(Place.HOST, Certainty.HIGH, f"{name} is a host value where `{text}` holds")
                             for name, text in hosts.items()}}
        tensors = tensors_when(test, holds, self.model.symbols.qualname)
        unknown = {name: text for name, text in tensors.items()
                   if (env.get(name, UNKNOWN).place is Place.UNKNOWN or is_host_guess(env[name]))
                   and (name in env or self.model.conventions.classify(name) is None)}
        if not unknown:
            return env
        evaluator = Evaluator(self.model, self.scope, env)
        return {**env, **{name: evaluator.tensor(f"{name} is a tensor where `{text}` holds") for name, text in unknown.items()}}

    def walk_small(self, small: cst.BaseSmallStatement, env: Env) -> Env:
        evaluator = Evaluator(self.model, self.scope, env)
        if isinstance(small, cst.Assign):
            value = evaluator.eval(small.value)
            new = dict(env)
            for assign_target in small.targets:
                self._bind(assign_target.target, value, new, small.value)
            return new
        if isinstance(small, cst.AnnAssign):
            new = dict(env)
            value = evaluator.eval(small.value) if small.value is not None else UNKNOWN
            if value.place is Place.HOST and value.element is None and not value.items:
                # `parts: list[torch.Tensor] = []`, `cache: dict[str, Tensor] = {}`: the annotation says what it holds
                declared_kind = evaluator.from_annotation(small.annotation.annotation,
                                                          (dotted_name(small.target) or "").rsplit(".", 1)[-1])
                if declared_kind is not None and declared_kind.element is not None:
                    value = declared_kind
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
            env = self._note_module_move(small.value, env, evaluator)
            return self._note_append(small.value, env, evaluator)
        return env

    def _note_module_move(self, call: cst.Call, env: Env, evaluator: Evaluator) -> Env:
        """`model.to(device)`, `model.cuda()`: an nn.Module moves in place, so the name holds the moved module."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in ("to", "cuda")):
            return env
        name = func.value.value
        if not evaluator.eval(func.value).is_module:
            return env
        moved = evaluator.eval(call)
        if not moved.is_module:
            return env
        new = dict(env)
        new[name] = moved
        return new

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
        new[name] = replace(held, items=None, element=join_element(held.element, added))
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
        where = device(f"self.{name} is a buffer of an nn.Module, which moves with the module", Certainty.MEDIUM)
        old = self.facts.self_attrs.get(name)
        self.facts.self_attrs[name] = where if old is None or name in self.facts.declared_attrs else join(old, where)
        self.facts.declared_attrs.discard(name)

    def _store_element(self, target: cst.Subscript, value: Where, env: Env) -> None:
        """`d["loss"] = loss`, `parts[i] = t`: what a container built here holds afterwards."""
        assert isinstance(target.value, cst.Name)
        name = target.value.value
        held = env.get(name)
        if held is None or held.place is not Place.HOST or held.is_none or not (
                held.mapping or held.element is not None or held.items is not None):
            return
        env[name] = _stored(held, target, value)

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
            elif value.mapping:
                values = [HOST] * len(elements)  # `a, b = d`: a dict's keys
            elif value.items is not None and len(value.items) == len(elements):
                values = list(value.items)  # `ids, count = helper()` where helper returns a tuple
            elif value.place is Place.HOST and not value.is_none:
                # `a, b = parts` (a list of tensors): its elements; a dict's keys; a host guess where
                # the elements are not known
                one = HOST if value.mapping else value.element if value.element is not None else guess_host(
                    value.because or "an element of a container whose elements are not known")
                values = [one] * len(elements)
            for i, (element, node) in enumerate(zip(elements, target.elements)):
                bound = values[i] if values else value
                if isinstance(node, cst.StarredElement):
                    # `first, *rest = x.split(n)`: a list of what the others are
                    bound = Where(Place.HOST, Certainty.HIGH, element=bound if bound.is_tensor else None)
                self._bind(element, bound, env)
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            self._store_element(target, value, env)
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


def _stored(held: Where, target: cst.Subscript, value: Where) -> Where:
    """A container after `held[key] = value`: the value under a constant key of a dict built here,
    and where its elements live (all tensors, or not known)."""
    index = target.slice[0].slice if len(target.slice) == 1 else None
    key = string_key(index.value) if isinstance(index, cst.Index) else None
    if held.mapping and key is not None and held.keys is None and held.items is None and held.element is not None:
        # A dict of tensors whose keys are not known here (a tokenizer's output, a batch): the value
        # under this key is the one put there; the others' are as they were.
        return replace(held, keys=(key,), items=(value,), more_keys=True)
    if held.mapping and held.keys is not None and held.items is not None and key is not None:
        keys, items = list(held.keys), list(held.items)
        if key in keys:
            items[keys.index(key)] = value
        else:
            keys.append(key)
            items.append(value)
        if held.more_keys:
            return replace(held, keys=tuple(keys), items=tuple(items))
        element = join_all(items) if all(w.is_tensor for w in items) else None
        return replace(held, keys=tuple(keys), items=tuple(items), element=element)
    # A key or a position not known here: each element is one of those before, or the new value.
    before = [*(held.items or ()), *([held.element] if held.element is not None else [])]
    all_tensors = held.element is not None or (held.items is not None and all(w.is_tensor for w in held.items))
    element = join_all([*before, value]) if value.is_tensor and all_tensors else None
    return replace(held, keys=None, items=None, element=element)


def _settled(now: Env, before: Env) -> bool:
    """Whether every name lives where it did, as sure (the explanations may differ)."""
    if now.keys() != before.keys():
        return False
    return all((w.place, w.certainty, w.is_none) == (b.place, b.certainty, b.is_none)
               for name, w in now.items() for b in (before[name],))


def _bound_each_iteration(loop: cst.For | cst.While, entry: Env) -> list[str]:
    """The names a `for` loop's target binds at the top of every iteration (none for `while`)."""
    if not isinstance(loop, cst.For):
        return []
    return [node.value for node in unpacked(loop.target) if isinstance(node, cst.Name) and node.value in entry]


def join_env(a: Env, b: Env) -> Env:
    if a is b:
        return a
    merged = dict(a)
    for name, where in b.items():
        merged[name] = join(a[name], where) if name in a else where.weaker(Certainty.MEDIUM)
    for name in a.keys() - b.keys():
        merged[name] = a[name].weaker(Certainty.MEDIUM)
    if CPU_PATH not in a or CPU_PATH not in b:
        merged.pop(CPU_PATH, None)  # a path from the GPU's side joins here
    if OTHER_PLATFORM not in a or OTHER_PLATFORM not in b:
        merged.pop(OTHER_PLATFORM, None)
    return merged
