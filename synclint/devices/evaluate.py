"""The expression evaluator: where the value of one expression lives, under one environment.

Literals are host values; names come from the environment, the module's top level, or their
conventions; calls from torch's API (`synclint.devices.torch_api`), the project's facts about
the called function, a local helper's returns, or the method's receiver; `device=` arguments
and `.to(...)` targets say where a tensor is put.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from synclint.devices.conventions import (
    LOSS_NAME,
    MOVES_TO_DEVICE,
    VERB_NAME,
    classify_buffer_field,
    is_settings_namespace,
)
from synclint.devices.placement import CPU_BY_DEFAULT, Placement, spec_basis
from synclint.devices.lattice import (
    HOST,
    MODULE_OUTPUT,
    MODULE_RUN,
    NONE,
    UNKNOWN,
    Env,
    Place,
    Where,
    combine,
    device,
    host_tensor,
    join,
    join_all,
    guess_host,
    is_host_guess,
)
from synclint.devices.torch_api import (
    ARRAY_ONLY_METHODS,
    DATA_FACTORIES,
    DTYPE_NAMES,
    HOST_ATTRIBUTES,
    HOST_BUILTINS,
    HOST_RESULT_FUNCTIONS,
    HOST_RESULT_METHODS,
    MODULE_CLASS_PREFIXES,
    MODULE_CONTAINERS,
    MODULE_METHOD_NAMES,
    MODULE_METHODS,
    MODULE_OUTPUT_METHODS,
    MODULE_RETURNING_METHODS,
    MODULE_TENSOR_ATTRIBUTES,
    NEW_TENSOR_METHODS,
    OUTPUT_FIELDS,
    SAME_PLACE_ATTRIBUTES,
    SAME_PLACE_CALLS,
    SEQUENCE_OPERATIONS,
    TORCH_FACTORIES,
    TORCH_LIKE_FACTORIES,
    returns_a_tensor,
)
from synclint.evidence import Basis, Certainty
from synclint.syntax import (
    Scope,
    code_text,
    constant_position,
    dotted_name,
    keyword_arg,
    names_in,
    string_key,
)

if TYPE_CHECKING:
    from synclint.devices.model import DeviceModel


class Evaluator(Placement):
    """Evaluates one expression under one environment."""

    def __init__(self, model: DeviceModel, scope: Scope | None, env: Env) -> None:
        self.model = model
        self.symbols = model.symbols
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
    _eval_ConcatenatedString = _host
    _eval_Set = _host

    def _eval_Tuple(self, expr: cst.Tuple | cst.List) -> Where:
        if not expr.elements or any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return HOST
        items = tuple(self.eval(e.value) for e in expr.elements)
        tensors = [w for w in items if w.is_tensor]
        return Where(Place.HOST, Certainty.HIGH, items=items, element=join_all(tensors) if len(tensors) == len(items) else None)

    _eval_List = _eval_Tuple
    _eval_SetComp = _eval_DictComp = _eval_Lambda = _host

    def _eval_Dict(self, expr: cst.Dict) -> Where:
        """A dict display: a host value whose values, when all are tensors, say where its items are
        (`counts = {"raw": torch.tensor(0, device=d)}`, then `counts[key]`)."""
        values = [self.eval(e.value) for e in expr.elements if isinstance(e, cst.DictElement)]
        tensors = [w for w in values if w.is_tensor]
        keys = [string_key(e.key) if isinstance(e, cst.DictElement) else None for e in expr.elements]
        by_key = len(set(keys)) == len(keys) and all(isinstance(k, str) for k in keys)
        return Where(Place.HOST, Certainty.HIGH, mapping=True,
                     element=join_all(tensors) if tensors and len(tensors) == len(expr.elements) else None,
                     items=tuple(values) if by_key else None,  # `{"loss": loss, "n": n}["loss"]`
                     keys=tuple(k for k in keys if k is not None) if by_key else None)

    def within(self, comprehension: cst.BaseComp) -> "Evaluator":
        """An evaluator for the inside of a comprehension: each `for` target bound to the elements
        of its iterable (`t` of `[t.item() for t in tokens]`)."""
        env = dict(self.env)
        clause: cst.CompFor | None = comprehension.for_in
        while clause is not None:
            scope = Evaluator(self.model, self.scope, env)
            positions = scope.positions_of(clause.iter)
            target = clause.target
            if positions is not None and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(positions):
                pairs = [(element.value, where) for element, where in zip(target.elements, positions)]
            else:
                pairs = [(target, scope.element_of(clause.iter))]
            for bound, where in pairs:
                if isinstance(bound, cst.Name):
                    env[bound.value] = where
                else:
                    for name in names_in(bound):
                        env[name] = UNKNOWN
            clause = clause.inner_for_in
        return Evaluator(self.model, self.scope, env)

    def _eval_ListComp(self, expr: cst.ListComp | cst.GeneratorExp) -> Where:
        """A list built by a comprehension: a host value whose elements live where its `elt` does
        (`[t.cuda() for t in ts]`)."""
        element = self.within(expr).eval(expr.elt)
        return Where(Place.HOST, Certainty.HIGH, element=element if element.is_tensor else None)

    _eval_GeneratorExp = _eval_ListComp

    # names -------------------------------------------------------------------------

    def _eval_Name(self, expr: cst.Name) -> Where:
        name = expr.value
        if name == "None":
            return NONE
        if name in ("True", "False"):
            return HOST
        known = self.env.get(name)
        if known is not None and known.place is not Place.UNKNOWN:
            if is_host_guess(known):
                used = self._used_as_tensor(name)  # what only a tensor can do beats a guess
                if used is not None:
                    return _as_a_loss(name, used)
            return _as_a_loss(name, known)
        if known is None:
            if name in self.symbols.imports.aliases or name in self.symbols.functions or name in self.symbols.classes:
                return HOST
            if self.scope is not None and not isinstance(self.scope, cst.Module):
                module_env = self.model.facts(self.model.module).final_env
                if name in module_env:
                    return module_env[name]
            by_name = self.model.conventions.classify(name)
            if by_name is not None:
                return by_name
        else:
            by_name = self.model.conventions.classify(name)
            if by_name is not None and by_name.is_module:
                return by_name  # `model = build(cfg)`: what the code gives is unknown, its name says a model
        if known is not None and self.model.conventions.is_batch(name):
            # `for batch in loader:`, `batch = next(it)`: a dict or tuple of a data loader's tensors
            # (a parameter named `batch` is as often a host-side batch object)
            return Where(Place.HOST, Certainty.HIGH, element=self.model_tensor(f"{name} is a batch of a data loader"))
        used = self._used_as_tensor(name)
        if used is None and (cpu := self.cpu_by_default(name)) is not None:
            return replace(HOST, spec=cpu)  # `self._device = device`, where `device="cpu"` by default
        return _as_a_loss(name, used) if used is not None else UNKNOWN

    def _used_as_tensor(self, name: str) -> Where | None:
        """A tensor, when the code uses `name` as only a tensor can be used (`loss.backward()`, `x.grad`)."""
        use = self.model.tensor_uses(self.scope).get(name) if self.scope is not None else None
        if use is None:
            return None
        because = f"{name} is used as a tensor (`{use}`)"
        # `loss.backward()`: what gradients flow back from is a model's output.
        return self.model_tensor(because) if ".backward(" in use else self.tensor(because)

    def _eval_Attribute(self, expr: cst.Attribute) -> Where:
        attr = expr.attr.value
        if attr in HOST_ATTRIBUTES:
            if isinstance(expr.value, cst.Name) and expr.value.value == "self" and isinstance(self.scope, cst.FunctionDef):
                cls = self.symbols.self_class(self.scope)
                known = self.model.class_attrs(cls).get(attr) if cls is not None else None
                if known is not None and known.spec is not None:
                    return known  # `self.device = torch.device("cuda")` in `__init__`
            return HOST
        qual = self.symbols.qualname(expr)
        if qual is not None and qual.startswith(("torch.", "numpy.", "math.")):
            return HOST  # a module-level constant or function (torch.float32, np.pi)
        if attr in SAME_PLACE_ATTRIBUTES:
            return self.eval(expr.value)
        if isinstance(expr.value, cst.Name) and expr.value.value not in self.env and (
                expr.value.value in self.symbols.imports.aliases):
            return UNKNOWN  # a Python module's function or constant (`importlib.import_module`), not named by us
        is_self = isinstance(expr.value, cst.Name) and expr.value.value == "self"
        if is_self and isinstance(self.scope, cst.FunctionDef):
            cls = self.symbols.self_class(self.scope)
            if cls is not None:
                known = self.model.class_attrs(cls).get(attr)
                if known is not None:
                    return known
        if not is_self:
            owner = self.eval(expr.value)
            if owner.is_module:
                if attr in MODULE_TENSOR_ATTRIBUTES:
                    return device(f"{code_text(expr)} is a module's parameter", Certainty.MEDIUM)
                if VERB_NAME.match(attr):
                    return UNKNOWN  # a bound method kept to call later (`self.base_model.prepare_inputs_for_generation`)
                return owner  # a submodule (where its module is), or a method to call (`_module_method` knows which)
            if owner.on_device and attr in OUTPUT_FIELDS:
                return owner  # `outputs.loss`: a field of a model's output
            if owner.place is Place.HOST_TENSOR and owner.certainty is Certainty.HIGH and not VERB_NAME.match(attr):
                # A field of what was moved to the host (`instances.to(cpu_device).pred_boxes`): there too.
                return host_tensor(f"{code_text(expr)} is a field of a value moved to the host")
        if is_settings_namespace(expr.value):
            # `args.gpu`, `self.config.device_batch`: parsed flags and settings are Python values.
            return Where(Place.HOST, Certainty.MEDIUM, f"{code_text(expr)} is a setting")
        return classify_buffer_field(attr) or self.model.conventions.classify(attr) or UNKNOWN

    # compound expressions ----------------------------------------------------------

    def _eval_Subscript(self, expr: cst.Subscript) -> Where:
        key = string_key(expr.slice[0].slice.value) if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) else None
        by_key = self.model.conventions.classify(key) if key else None
        if by_key is not None:
            return by_key  # `inputs["image_grid_thw"]`, `batch["ids_cpu"]`
        base = self.eval(expr.value)
        if base.mapping and key is not None and base.value_of(key) is not None:
            return base.value_of(key) or UNKNOWN
        if base.items is not None and base.keys is None:
            position = constant_position(expr)
            known = base.item(position) if position is not None else None
            return known if known is not None else UNKNOWN
        if base.place is Place.UNKNOWN:
            return UNKNOWN
        if base.place is Place.HOST and base.element is not None:
            return base.element  # `tensors[i]`, `batch["pixels"]`: an element of a list or dict of tensors
        if base.place is Place.HOST and not base.is_none:
            # An element of a container whose elements are not known (or of an array, a string)
            return guess_host(base.because or "an element of a container whose elements are not known")
        return replace(base, items=None, element=None) if base.element is not None else base

    def _is_non_tensor_constant(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        qual = self.symbols.qualname(expr) or ""
        return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in DTYPE_NAMES

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
        qual = self.symbols.qualname(func)
        if qual is not None:
            known = self._eval_qualified_call(qual, call)
            if known is not None:
                return known
        if self.model.answers.functions:
            known = self._project_call(call)
            if known is not None:
                return known
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        returned_as = keyword_arg(call, "return_tensors")
        if isinstance(returned_as, cst.SimpleString) and returned_as.evaluated_value == "pt":
            # A tokenizer's or a processor's output (`tok(text, return_tensors="pt")`): CPU tensors.
            made = host_tensor(f"{code_text(func)}(..., return_tensors=\"pt\") makes CPU tensors")
            return Where(Place.HOST, Certainty.HIGH, made.because, element=made, mapping=True)
        if name in SAME_PLACE_CALLS and call.args and call.args[0].keyword is None:
            passed = self.eval(call.args[0].value)
            if passed.is_tensor or passed.items is not None:
                return passed  # `accelerator.gather(t)`: a tensor like `t`, where `t` is
        if name and MOVES_TO_DEVICE.search(name) and call.args and call.args[0].keyword is None and not self.model.host_code:
            moved = self._moved_by_name(name, call)
            if moved is not None:
                return moved
        if isinstance(func, cst.Name):
            if func.value in ("list", "tuple", "sorted", "reversed") and len(call.args) == 1 and not call.args[0].star:
                # `tuple(t.cuda() for t in ts)`, `list(d.values())`: a host sequence of the iterable's elements
                element = self.element_of(call.args[0].value)
                return Where(Place.HOST, Certainty.HIGH, element=element) if element.is_tensor else HOST
            if func.value in HOST_BUILTINS:
                return HOST
            if func.value in ("max", "min", "sum"):
                positional = [a.value for a in call.args if a.keyword is None and not a.star]
                if len(positional) == 1:
                    # `sum(losses.values())`, `max(xs)`: a reduction over the iterable's elements
                    element = self.element_of(positional[0])
                    if func.value == "sum" and len(call.args) == 1:
                        return combine([HOST, element])  # the start, 0, and each element
                    return element if element.is_tensor else combine([self.eval(a.value) for a in call.args])
                return combine([self.eval(a.value) for a in call.args]) if call.args else UNKNOWN
        if isinstance(func, cst.Attribute):
            result = self._eval_method(func.value, func.attr.value, call)
            if result is not None:
                return result
        target = self.symbols.resolve_function(func, self.scope)
        if target is not None:
            returned = self.model.returns_of(target)
            if returned.on_device and returned.because:
                # (Only where its body computes the tensor: a `-> torch.Tensor` alone is as unsure as before.)
                computed = any(w.place is not Place.UNKNOWN for w in self.model.facts(target).returns)
                given = self._given_gpu_tensor(call) if returned.certainty is Certainty.LOW and computed else None
                if given is not None:
                    return device(f"returned by {target.name.value}() from GPU tensors ({given.because})", Certainty.MEDIUM)
                return Where(returned.place, returned.certainty, f"returned by {target.name.value}(): {returned.because}")
            return returned
        if isinstance(func, cst.Name) and func.value in self.symbols.classes:
            cls = self.symbols.classes[func.value]
            if self.symbols.is_module_class(cls):
                return Where(Place.MODULE, Certainty.LOW, f"{func.value}(...) is an nn.Module")
            return HOST  # an instance of a local class
        if isinstance(func, (cst.Name, cst.Subscript)) or (isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Call)):
            called = self.eval(func)
            if called.is_module:
                return self.module_output(called, func)
        return UNKNOWN

    def _moved_by_name(self, name: str, call: cst.Call) -> Where | None:
        """`device.tensor_to_device(t)`: a tensor `t` moved to the device its name says (or to the
        device a second argument names: `send_to_device(t, "cpu")`)."""
        if not self.eval(call.args[0].value).is_tensor:
            return None
        target = keyword_arg(call, "device") or (call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None
                                                  else None)
        if target is not None:
            placed = self.device_of(target)
            return placed if placed.place is not Place.UNKNOWN else None
        return replace(device(f"moved by {name}(...), which by its name puts it on the device", Certainty.MEDIUM),
                       basis=Basis.NAME)

    # tensors whose device the code does not say ------------------------------------

    def tensor(self, because: str) -> Where:
        """A tensor whose device nothing says (a torch operation on unknown inputs, a value used as
        only a tensor can be): likely on the GPU in model code (an nn.Module's methods, code that
        runs a model), of unknown device elsewhere."""
        model_code = self._model_code()
        if model_code is not None:
            return device(f"{because}, {model_code}", Certainty.MEDIUM)
        # Outside model code, a file or a package that puts data on the GPU is no evidence enough:
        # judged on six projects built without them, 5 of 14 such findings were real (a file)
        # and 6 of 19 (a package): drivers, evaluators and data code work on the host.
        return Where(Place.DEVICE, Certainty.LOW, f"{because}, of unknown device")

    def model_tensor(self, because: str) -> Where:
        """A tensor that flows from a model (its output, its loss, its parameters): on the GPU in a
        file that puts its model or data there, and in model code; of unknown device elsewhere."""
        placed = self.model.accelerator_use()
        if placed is not None:
            return device(f"{because}, in a file that puts its model or data on the GPU (`{placed}`)", Certainty.MEDIUM)
        return self.tensor(because)

    def module_output(self, module: Where, func: cst.BaseExpression) -> Where:
        """What calling an nn.Module gives: tensors on the module's device."""
        text = code_text(func)
        if module.certainty is Certainty.HIGH and module.because:
            return replace(device(f"{text}(...) {MODULE_RUN} ({module.because})", Certainty.MEDIUM),
                           basis=Basis.MODULE_OUTPUT)
        return replace(self.model_tensor(f"{text}(...) {MODULE_OUTPUT}"), basis=Basis.MODULE_OUTPUT)

    def _model_code(self) -> str | None:
        """How the code being evaluated is model code (None: it is not): a method of an nn.Module,
        or code of a class or function that runs a model (a pipeline, a runner)."""
        func = self.scope if isinstance(self.scope, cst.FunctionDef) else None
        if func is None:
            return None
        cls = self.symbols.self_class(func)
        if self.symbols.is_module_class(cls):
            return "in an nn.Module's code"
        if cls is not None and any((dotted_name(b.value) or "").endswith("Optimizer") for b in cls.bases):
            return "in an optimizer's code (it updates the model's parameters)"
        runs = self.model.runs_a_model(func)
        return f"in code that runs a model (`{runs}`)" if runs is not None else None

    def _project_call(self, call: cst.Call) -> Where | None:
        """What a function of another file of the project returns, from the project's solved answers."""
        qual = self.symbols.callee_qualname(call.func, self.scope)
        fact = self.model.answers.functions.get(qual or "")
        if fact is None or fact.returns is None:
            return None
        returned = fact.returns
        if returned.on_device and returned.because:
            where = f"{fact.qualname.rsplit('.', 1)[-1]}() ({fact.path}:{fact.row})"
            if returned.certainty is Certainty.LOW:
                given = self._given_gpu_tensor(call)
                if given is not None:
                    return device(f"returned by {where} from GPU tensors ({given.because})", Certainty.MEDIUM)
            return Where(returned.place, returned.certainty, f"returned by {where}: {returned.because}")
        return returned

    def _given_gpu_tensor(self, call: cst.Call) -> Where | None:
        """The first argument of `call` that is a tensor likely on the GPU: a helper whose result is a
        tensor of unknown device computed from its arguments returns it where they are."""
        return next((w for a in call.args if (w := self.eval(a.value)).on_device and w.certainty >= Certainty.MEDIUM),
                    None)

    def _eval_qualified_call(self, qual: str, call: cst.Call) -> Where | None:
        short = qual.rsplit(".", 1)[-1]
        if qual.startswith("numpy."):
            return HOST
        if qual == "torch.from_numpy":
            return host_tensor("torch.from_numpy() is a host tensor")
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
            # Wherever it is made, a module's parameter moves with the module (`model.to(device)`).
            return device(f"{qual.rsplit('.', 1)[-1]} of an nn.Module, which moves with the module", Certainty.MEDIUM)
        if qual == "torch.device":
            # `torch.device("cuda")`, `torch.device("cuda", rank)`, `torch.device(type="cpu")`: a device spec
            kind = keyword_arg(call, "type") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
            spec = self.device_of(kind) if kind is not None else None
            return replace(HOST, spec=spec) if spec is not None and (
                spec.place is not Place.UNKNOWN or spec is CPU_BY_DEFAULT) else HOST
        if qual.startswith("torch.") and (short in HOST_RESULT_FUNCTIONS or short.startswith(("is_", "has_"))):
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
        if short[:1].isupper() and qual.startswith(MODULE_CLASS_PREFIXES) and not qual.startswith("torch.nn.functional."):
            wrapped = self.eval(call.args[0].value) if call.args else UNKNOWN
            if wrapped.is_module:
                return wrapped  # DistributedDataParallel(model), FSDP(model): the model, wrapped
            made = Where(Place.MODULE, Certainty.LOW, f"{short}(...) is an nn.Module")
            # A container's attributes are its layers: the element says what they are.
            return replace(made, element=made) if short in MODULE_CONTAINERS else made
        if qual in ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"):
            # Its batches are collated in host memory (pinned with `pin_memory=True`): what is
            # moved to the GPU from them is a host-to-device copy.
            batch = Where(Place.HOST_TENSOR, Certainty.MEDIUM, "a batch of a torch DataLoader, collated in host memory")
            return Where(Place.HOST, Certainty.HIGH, element=batch)
        if qual == "torch.compile":
            wrapped = self.eval(call.args[0].value) if call.args else UNKNOWN
            return wrapped if wrapped.is_module else UNKNOWN
        if qual.startswith("torch."):
            # Operations on tensors: the result lives where the tensor operands live.
            result = combine(list(self._tensor_args(call))) if call.args else UNKNOWN
            if short in SEQUENCE_OPERATIONS and result.place is Place.HOST:
                result = UNKNOWN  # a Python list of tensors says nothing of where its tensors are
            if result.place is Place.UNKNOWN and returns_a_tensor(qual):
                return self.tensor(f"{qual.replace('torch.nn.functional.', 'F.')}(...) is a tensor")
            return result
        if qual.split(".")[0] in ("math", "os", "sys", "re", "json", "time", "itertools", "functools", "collections",
                                  "random", "string", "pathlib", "shutil", "logging", "copy", "inspect", "typing",
                                  "dataclasses", "enum", "warnings", "datetime", "operator"):
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
        device_arg = keyword_arg(call, "device")
        if device_arg is not None:
            placed = self.device_of(device_arg)
            if placed.on_device:
                because = f"made by {what} on {code_text(device_arg)}"
                if placed.certainty < Certainty.HIGH and placed.because and placed.because != code_text(device_arg):
                    because += f" ({placed.because})"
                return Where(placed.place, placed.certainty, because, basis=spec_basis(device_arg, placed))
            return placed
        pin = keyword_arg(call, "pin_memory")
        if pin is not None and not (isinstance(pin, cst.Name) and pin.value == "False"):
            return host_tensor(f"{what} in pinned host memory")
        if like is not None:
            return like
        if (
            call.args
            and what.split("(", 1)[0].rsplit(".", 1)[-1] not in DATA_FACTORIES
            and isinstance(self.scope, cst.FunctionDef)
            and self.symbols.builds_module(self.scope)
        ):
            return Where(Place.HOST_TENSOR, Certainty.LOW,
                         f"{what} without device= follows the default device while the module is built "
                         "(model loaders set it with `with torch.device(...)`)")
        return host_tensor(f"{what} without device= is a host tensor")

    def _eval_method(self, receiver: cst.BaseExpression, method: str, call: cst.Call) -> Where | None:
        if method in MODULE_METHODS:
            base = self.eval(receiver)
            if base.is_module:
                return self._module_method(base, receiver, method, call)
        if method == "cuda":
            return device(f"{code_text(receiver)}.cuda()")
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
            key = string_key(call.args[0].value)
            by_key = self.model.conventions.classify(key) if key else None
            if by_key is not None:
                return by_key  # `kwargs.pop("image_grid_thw", None)`
        if method.startswith("__"):
            return None  # a protocol method (`__tensor_flatten__`, `__reduce__`): not a tensor operation
        if isinstance(receiver, cst.Name) and receiver.value not in self.env and (
                receiver.value in self.symbols.imports.aliases or receiver.value in self.symbols.classes):
            return None  # `GPT.from_pretrained(...)`, `utils.helper(...)`: a class's or a module's function
        base = self.eval(receiver)
        if base.is_module:
            return self._module_method(base, receiver, method, call)
        if base.place is Place.HOST and not base.is_none and (base.mapping or base.element is not None or method in DICT_ONLY_METHODS):
            contained = self._container_method(base, method, call)
            if contained is not None:
                return contained
        if method in ("parameters", "buffers") and base.place is Place.UNKNOWN:
            # An nn.Module's tensors; a module built here without .cuda()/.to() would be a host value.
            return device(f"{code_text(receiver)}.{method}() are a module's tensors", Certainty.MEDIUM)
        if method in NEW_TENSOR_METHODS:
            device_arg = keyword_arg(call, "device")
            if device_arg is not None:
                return self.device_of(device_arg)
            return base
        if base.is_tensor:
            return base if base.computed or not base.from_module_output else replace(base, computed=True)
        if base.place is Place.HOST:
            if base.element is not None or base.items is not None or base.mapping:
                return base
            # A method of a host value (a string, an array, an object of the project's own class):
            # a host value, but a guess that what only a tensor can do overrules (`trainer.loss(b)`).
            return guess_host(base.because or f"`{code_text(receiver, 40)}.{method}(...)` is a method's result of a host value")
        if base.place is Place.UNKNOWN and method in ARRAY_ONLY_METHODS and self.model.imports_torch():
            # Only a tensor or an array has `.any()`, `.max()`, ...: in torch code, a tensor.
            return self.tensor(f"`{code_text(receiver, 40)}` has .{method}(), as only a tensor or an array has")
        return None

    def _container_method(self, base: Where, method: str, call: cst.Call) -> Where | None:
        """What a dict's or a list's own method gives, from where its elements live: the values
        of a dict through `popitem()`, `items()` (the value half), `values()`, `get`, `pop`,
        `setdefault`; its keys (host values) through `keys()`; a list's through `pop()`. An element
        of a container whose elements are not known is a host guess."""
        contents = base.element if base.element is not None else guess_host("an element of a container whose elements are not known")
        if base.more_keys and base.items:  # its other keys' values, and those put under known keys
            contents = join_all([contents, *base.items])
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if not base.mapping and base.element is not None and method not in DICT_ONLY_METHODS:
            if method == "pop":
                return contents
            return base if method == "copy" else None
        if method == "popitem" and not call.args:
            return Where(Place.HOST, Certainty.HIGH, items=(HOST, contents))
        if method == "items" and not call.args:
            return Where(Place.HOST, Certainty.HIGH, element=Where(Place.HOST, Certainty.HIGH, items=(HOST, contents)))
        if method == "values" and not call.args:
            return Where(Place.HOST, Certainty.HIGH, element=contents)
        if method == "keys" and not call.args:
            return HOST
        if method in ("get", "pop") and 1 <= len(positional) <= 2:
            key = string_key(positional[0])
            value = (base.value_of(key) if key is not None else None) or contents
            return join(value, self.eval(positional[1])) if len(positional) == 2 else value
        if method == "setdefault" and len(positional) == 2:
            return join(contents, self.eval(positional[1]))
        if method == "copy" and not call.args:
            return base
        return None

    def _module_method(self, module: Where, receiver: cst.BaseExpression, method: str, call: cst.Call) -> Where:
        """What a method of an nn.Module gives: the module itself (moved, cast, switched), its
        tensors, its output; UNKNOWN for any other method (it may return anything)."""
        text = code_text(receiver)
        if method == "cuda":
            return Where(Place.MODULE, Certainty.HIGH, f"{text}.cuda()")
        if method == "to":
            target = self._to_target(call)
            if target is not None and target.on_device:
                return Where(Place.MODULE, target.certainty, target.because or f"{text}.to(...)")
            return module if target is None else Where(Place.MODULE, Certainty.LOW, module.because)
        if method in MODULE_RETURNING_METHODS:
            return module
        if method in ("parameters", "buffers"):
            if module.certainty is Certainty.HIGH and module.because:
                return device(module.because)  # the tensors of a module moved to the GPU
            return device(f"{text}.{method}() are a module's tensors", Certainty.MEDIUM)
        if method in MODULE_OUTPUT_METHODS:
            return self.module_output(module, call.func)
        if module.element is not None and method not in MODULE_METHOD_NAMES:
            # `self.transformer.wte(idx)`: a layer kept in a container (`nn.ModuleDict(dict(wte=...))`)
            return self.module_output(module, call.func)
        return UNKNOWN

    def positions_of(self, iterable: cst.BaseExpression) -> list[Where] | None:
        """Where each position of the tuples that `enumerate(...)`, `zip(...)` or `d.items()` yields lives."""
        if not isinstance(iterable, cst.Call):
            return None
        if isinstance(iterable.func, cst.Attribute) and iterable.func.attr.value == "items" and not iterable.args:
            owner = self.eval(iterable.func.value)  # `for key, value in d.items()`
            return [HOST, owner.element] if owner.mapping and owner.element is not None else None
        if isinstance(iterable.func, cst.Attribute) and iterable.func.attr.value in NAMED_MEMBERS:
            # `for name, p in model.named_parameters()`: a name (a string), then the module's tensor or submodule
            member = NAMED_MEMBERS[iterable.func.attr.value]
            owner = self.eval(iterable.func.value)
            if member == "modules":
                return [HOST, owner if owner.is_module else UNKNOWN]
            return [HOST, self._module_method(owner, iterable.func.value, member, iterable) if owner.is_module else
                    device(f"{code_text(iterable.func.value)}.{member}() are a module's tensors", Certainty.MEDIUM)]
        if not isinstance(iterable.func, cst.Name):
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
        if where.is_tensor or where.is_module:
            return where  # a tensor's rows; a ModuleList's modules
        if where.mapping:
            return HOST  # a dict's keys
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
            head = self.symbols.qualname(annotation.value) or dotted_name(annotation.value) or ""
            if head.split(".")[-1] == "Optional":
                inner: cst.BaseSlice | cst.BaseExpression | None = annotation.slice[0].slice
                if isinstance(inner, cst.Index):
                    return self.from_annotation(inner.value, name)
            if head.split(".")[-1] in ("list", "List", "dict", "Dict", "tuple", "Tuple", "set", "Sequence", "Mapping"):
                # `list[torch.Tensor]`, `dict[str, Tensor]`, `tuple[Tensor, ...]`: a host container of tensors
                kinds = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
                inner = kinds[-1] if head.split(".")[-1] in ("dict", "Dict", "Mapping") and kinds else kinds[0] if kinds else None
                element = self.from_annotation(inner, name) if inner is not None else None
                mapping = head.split(".")[-1] in ("dict", "Dict", "Mapping")
                return Where(Place.HOST, Certainty.HIGH, element=element, mapping=mapping) if (
                    element is not None and element.is_tensor) else HOST
            return None
        qual = self.symbols.qualname(annotation) or dotted_name(annotation) or ""
        last = qual.split(".")[-1]
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            return replace(device(f"{name} is annotated nn.Parameter, which moves with its module", Certainty.MEDIUM),
                           basis=Basis.ANNOTATION)
        if qual in ("torch.Tensor", "Tensor") or (qual.startswith("torch.") and last == "Tensor"):
            by_name = self.model.conventions.classify(name)
            if by_name is not None and (by_name.on_host or by_name.on_device):
                return replace(by_name, place=Place.HOST_TENSOR, certainty=Certainty.MEDIUM) if by_name.on_host else by_name
            if self.model.host_code:
                return Where(Place.HOST_TENSOR, Certainty.MEDIUM, f"{name} is a tensor in host-side code")
            return replace(device(f"{name} is annotated torch.Tensor", Certainty.MEDIUM), basis=Basis.ANNOTATION)
        if qual.startswith("numpy.") or last in ("int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set"):
            return HOST
        if qual in ("torch.nn.Module", "torch.nn.modules.module.Module") or (
                last in self.symbols.classes and self.symbols.is_module_class(self.symbols.classes[last])):
            return Where(Place.MODULE, Certainty.LOW, f"{name} is annotated as an nn.Module")
        return None


# nn.Module's methods that yield (name, member) pairs, and what the member is.
NAMED_MEMBERS = {"named_parameters": "parameters", "named_buffers": "buffers", "named_modules": "modules",
                 "named_children": "modules"}
# Methods that only a dict has (a list, a string or an array has none of them).
DICT_ONLY_METHODS = frozenset("popitem items values keys setdefault".split())


def _as_a_loss(name: str, where: Where) -> Where:
    """A tensor of unknown device named as a loss is on the model's device (`conventions.LOSS_NAME`): medium."""
    if where.on_device and where.certainty is Certainty.LOW and LOSS_NAME.search(name):
        return replace(where, certainty=Certainty.MEDIUM, because=f"{name} is a loss by its name ({where.because})",
                       basis=Basis.NAME)
    return where
