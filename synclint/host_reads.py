"""Calls of torch and of other libraries that read GPU values on the host (SYNC107's tables).

The arguments torch needs as Python ints (sizes, bounds, counts): a GPU scalar given there is read
on the host through `__index__`, and the host waits for the GPU (measured on an H200 with 20 ms of work queued: `torch.arange(t)`, `torch.zeros(t)`, `x.view(t, -1)`,
`torch.randint(0, t, ...)`, `x.topk(t)`, `F.pad(x, (0, t))`, `create_block_mask(..., Q_LEN=t)` each
returned after the queue drained: `bench/sync_catalogue.py`).
"""

from __future__ import annotations

import libcst as cst

from synclint.syntax import keyword_arg

# Functions that write tensors to a file, copying GPU tensors to the host first.
SAVE_CALLS = frozenset({"torch.save", "safetensors.torch.save_file", "safetensors.torch.save"})
# Loggers' methods that take metric values (wandb, TensorBoard, accelerate's and other trackers).
LOGGING_CALLS = frozenset("log log_dict log_metrics add_scalar add_scalars".split())
# torchmetrics' aggregation metrics, whose `update` checks its input for NaN on the host.
AGGREGATION_METRICS = frozenset(
    "MeanMetric SumMetric MaxMetric MinMetric CatMetric RunningMean RunningSum".split()
)
# What GradScaler's methods read from the GPU with `.item()`.
SCALER_READS = {
    "step": "reads whether the gradients overflowed (found_inf) on the host",
    "get_scale": "reads its scale tensor with .item()",
    "state_dict": "reads its scale and growth tracker with .item()",
}
# Builtins that turn a tensor into a Python number (`bool(t)` is SYNC101's).
NUMBER_BUILTINS = ("int", "float", "complex")
# Builtins that format a tensor's values as text.
FORMAT_BUILTINS = ("print", "repr", "str")
# numpy calls that build an array usable as an index (numpy's scalar results are not).
NUMPY_ARRAY_BUILDERS = frozenset(
    "array asarray arange nonzero flatnonzero where concatenate stack argsort sort unique cumsum repeat".split()
)
# Calls whose arguments are sizes: a GPU scalar there is read on the host through `__index__`.
SIZE_METHODS = frozenset("repeat view reshape expand narrow new_zeros new_ones new_empty new_full".split())
SIZED_FACTORIES = frozenset("torch.zeros torch.ones torch.empty torch.full torch.rand torch.randn".split())
# Of these, the ones whose later arguments are not sizes (`full(size, fill_value)`).
SIZE_FIRST_ONLY = frozenset(("new_full", "torch.full"))
# Other calls that take Python numbers, by the positions (from, to) and keywords that hold them; a GPU
# scalar there waits through `__index__` (measured on an H200: each returned after the queued work).
NUMBER_ARGUMENTS: dict[str, tuple[int, int | None, tuple[str, ...]]] = {
    "torch.randint": (0, None, ("low", "high", "size")),
    "torch.randperm": (0, 1, ("n",)),
    "torch.eye": (0, 2, ("n", "m")),
    "torch.narrow": (1, 4, ("dim", "start", "length")),
    "torch.topk": (1, 2, ("k",)),
    "torch.nn.functional.pad": (1, 2, ("pad",)),
    "torch.nn.attention.flex_attention.create_block_mask": (3, 5, ("Q_LEN", "KV_LEN")),
}
# Tensor methods that take Python numbers the same way (`x.topk(k)`).
NUMBER_METHODS: dict[str, tuple[int, int | None, tuple[str, ...]]] = {"topk": (0, 1, ("k",))}


def size_arguments(call: cst.Call, first_only: bool) -> list[cst.BaseExpression]:
    """The size arguments of `x.view(a, b)`, `x.view((a, b))`, `torch.zeros(n, device=d)`, ..."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    size = keyword_arg(call, "size")
    return _flattened([size] if size is not None else positional[:1] if first_only else positional)


def number_arguments(call: cst.Call, start: int, stop: int | None, keywords: tuple[str, ...]) -> list[cst.BaseExpression]:
    """The arguments of `call` at positions `start` to `stop` and under `keywords`, each tuple or list flattened
    (`torch.randint(0, n, (4,))`, `F.pad(x, (0, n))`, `create_block_mask(m, None, None, Q_LEN=n)`)."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return _flattened(positional[start:stop] + [a.value for a in call.args if a.keyword is not None and a.keyword.value in keywords])


def _flattened(values: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    """Each value, with the elements of a tuple or list display in its place."""
    flat: list[cst.BaseExpression] = []
    for value in values:
        if isinstance(value, (cst.Tuple, cst.List)):
            flat.extend(element.value for element in value.elements if not isinstance(element, cst.StarredElement))
        else:
            flat.append(value)
    return flat
