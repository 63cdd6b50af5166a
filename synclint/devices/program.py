"""What a file as a whole says about where its tensors run: does it put its model or its data on
an accelerator?

A training script that calls `model.to(device)`, `x.cuda()`, `torch.zeros(..., device="cuda")`,
builds an `Accelerator()` or a `Fabric(...)`, or asks `get_accelerator()` runs its model on a
GPU: there a tensor that flows from the model, the loss or the parameters is on the device unless
something says otherwise. The answer is the first such place, quoted in the explanation of every
finding that leans on it.
"""

from __future__ import annotations

import libcst as cst

from synclint.devices.conventions import OTHER_DEVICE_TYPES, names_a_device, names_the_host, other_accelerator_package
from synclint.syntax import code_text, dotted_name, keyword_arg, last_name, positional_args
from synclint.traversal import walk

# Constructors and calls of the accelerator abstractions of common training libraries.
ACCELERATOR_CALLS = frozenset({
    "Accelerator", "Fabric", "get_accelerator", "setup_module", "setup_dataloaders", "to_device", "prepare_model",
    "init_process_group", "initialize",
})
# Receivers of `.prepare(...)`/`.setup(...)`, which move models and data to the accelerator.
ACCELERATOR_OWNERS = ("accelerator", "fabric", "deepspeed", "engine")


def _targets_a_device(arg: cst.BaseExpression) -> bool:
    """Whether a `.to(...)` or `device=` argument names an accelerator (not the CPU, not a dtype)."""
    if isinstance(arg, cst.SimpleString):
        value = arg.evaluated_value
        return isinstance(value, str) and value.startswith(("cuda", *OTHER_DEVICE_TYPES))
    if isinstance(arg, cst.Integer):
        return True
    if isinstance(arg, cst.Call) and (dotted_name(arg.func) or "").endswith("device") and arg.args:
        return _targets_a_device(arg.args[0].value)
    if isinstance(arg, (cst.Name, cst.Attribute)):
        text = code_text(arg)
        return names_a_device(text) and not names_the_host(text) and "dtype" not in text.lower()
    return False


def accelerator_use(module: cst.Module) -> str | None:
    """The first code in `module` that puts a model or data on an accelerator, or None."""
    found: list[str] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            if found:
                return False
            name = last_name(node.func)
            owner = last_name(node.func.value) if isinstance(node.func, cst.Attribute) else None
            device_arg = keyword_arg(node, "device")
            positional = positional_args(node)
            if (
                name == "cuda"
                or (name == "to" and any(_targets_a_device(a) for a in [*positional[:1], *([device_arg] if device_arg else [])]))
                or (device_arg is not None and _targets_a_device(device_arg))
                or name in ACCELERATOR_CALLS
                or (name in ("prepare", "setup") and owner is not None and owner.lower().endswith(ACCELERATOR_OWNERS))
            ):
                found.append(code_text(node))
                return False
            return True

    walk(module, Finder())
    return found[0] if found else None


def required_accelerator(module: cst.Module) -> str | None:
    """The accelerator other than a CUDA GPU whose package the module imports unconditionally
    (at its top level, in no `if` or `try`): it cannot run without that accelerator's stack."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                names = [dotted_name(alias.name) or "" for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                names = [dotted_name(small.module) or ""]
            else:
                continue
            for name in names:
                platform = other_accelerator_package(name)
                if platform is not None:
                    return platform
    return None
