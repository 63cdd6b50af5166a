"""SYNC108 data-dependent-shape."""

from __future__ import annotations

import libcst as cst

from synclint.devices.lattice import Place, Where
from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import BoolTensors, one_line, with_keyword_arg
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import argument, keyword_arg, parameter

NONZERO_STATIC = "`torch.nonzero_static(..., size=n)` with a known upper bound does not wait"
SAME_SHAPE = "a 3-argument `torch.where(mask, x, fill)` or `masked_fill` keeps the shape and does not wait"
NO_STATIC_VARIANT = "it has no fixed-size variant: keep it off the per-step path or compute it from host data"
# Each operation whose output size depends on the data, and the variant that does not wait.
ALTERNATIVES = {
    "nonzero": NONZERO_STATIC,
    "argwhere": NONZERO_STATIC,
    "where": "the 3-argument `torch.where(cond, x, y)` or `torch.nonzero_static(cond, size=n)` does not wait",
    "masked_select": SAME_SHAPE,
    "unique": NO_STATIC_VARIANT,
    "unique_consecutive": NO_STATIC_VARIANT,
    "bincount": "`torch.zeros(n).scatter_add_(0, x, ones)` with a known `n` does not wait (`minlength=` still does)",
    "histc": "passing both `min=` and `max=` does not wait",
    "repeat_interleave": "passing `output_size=` (the sum of the repeats) does not wait",
    "one_hot": "passing `num_classes=` does not wait",
    **dict.fromkeys(("to_sparse", "to_sparse_csr", "to_sparse_csc"),
                    "the host counts the non-zeros of a dense tensor: build the sparse tensor from indices the host knows"),
}
TENSOR_METHODS = frozenset(ALTERNATIVES) - {"where", "one_hot"}
# Conversions to a sparse layout: a dense tensor's wait (measured), a sparse one's not; the layout is not known here.
SPARSE_CONVERSIONS = frozenset(("to_sparse", "to_sparse_csr", "to_sparse_csc"))
# Names under which code keeps the size that the sync-free variant needs.
SIZE_NAMES = {
    "repeat_interleave": (
        "output_size", "total", "total_tokens", "num_tokens", "total_num_tokens", "num_total_tokens",
        "total_len", "total_length", "total_size",
    ),
    "one_hot": ("num_classes", "n_classes", "num_experts", "n_experts", "num_labels", "vocab_size", "num_buckets"),
}
SIZE_KEYWORD = {"repeat_interleave": "output_size", "one_hot": "num_classes"}
OPERAND_KEYWORDS = ("input", "tensor", "condition", "self")


class DataDependentShape(Rule):
    code = "SYNC108"
    name = "data-dependent-shape"
    summary = "The output size depends on GPU data, so the host waits for the GPU to learn it"
    prefilter = ("torch",)
    docs = """
    ## What it does
    Flags operations on GPU tensors whose output size depends on the tensor's values:
    `nonzero`, `argwhere`, `masked_select`, reads through a boolean mask (`x[x > 0]`,
    `x[mask]` where `mask` is a GPU comparison), `unique`, `unique_consecutive`, the
    one-argument `torch.where(cond)`, `repeat_interleave` with tensor repeats and no
    `output_size=`, `bincount`, `histc` without `min=` and `max=`, and `F.one_hot` without
    `num_classes=`, as torch functions and as tensor methods; and the conversions of a dense
    tensor to a sparse layout (`to_sparse()`, `to_sparse_csr()`, `to_sparse_csc()`), at medium
    confidence at most: converting a tensor that is already sparse does not wait.

    Not flagged: the sync-free variants (`torch.nonzero_static`, `torch.count_nonzero`, the
    3-argument `torch.where`, `histc(..., min=, max=)`, `one_hot(x, num_classes=n)`,
    `repeat_interleave(..., output_size=n)`, `repeat_interleave` with an integer repeat),
    writes through a mask (`x[mask] = 0`), these operations on host tensors, and numpy's
    `np.nonzero`, `np.unique`, `np.where`. In CPU modules (`cpu_*.py`, `ops/cpu/`) only
    tensors proven to be on the GPU are reported.

    ## Why is this bad?
    The host allocates every output before the kernel that fills it is queued, so it must
    know the output's size; when the size depends on the values, PyTorch copies a count
    from the GPU and waits for every kernel queued before it (measured on an H100 with
    20 ms of work queued: `torch.nonzero(x)`, `x[mask]`, `torch.unique(x)`,
    `repeat_interleave(repeats)`, `bincount` and `F.one_hot(x)` each return after about
    20 ms; with `output_size=`, `num_classes=` or `min=`/`max=` they return within 0.2 ms).

    ## Example
    ```python
    def expand_to_tokens(req_temperature, query_lens, total: int):
        return torch.repeat_interleave(req_temperature, query_lens, dim=0)
    ```

    ## Use instead
    Pass the size when the host already knows it (the scheduler knows the token count, the
    config knows the number of experts), use `torch.nonzero_static` with an upper bound, or
    keep the shape fixed with a 3-argument `torch.where` or `masked_fill`.
    ```python
    def expand_to_tokens(req_temperature, query_lens, total: int):
        return torch.repeat_interleave(req_temperature, query_lens, dim=0, output_size=total)
    ```

    ## Fix safety
    `repeat_interleave` and `F.one_hot` are fixed only when a size is in scope under a name
    that says what it is (a parameter or local host value called `output_size`, `total`,
    `num_tokens`, ... for `repeat_interleave`; `num_classes`, `num_experts`, ... for
    `one_hot`), and exactly one such name is. The fix is unsafe: synclint cannot prove the
    value is the right size, and a wrong one silently truncates or pads the output instead
    of raising. The other operations have no automatic fix: their sync-free variants
    (`nonzero_static`, a 3-argument `where`) return a different shape and need the code
    around them changed.
    """

    VALID = [
        Valid("import numpy as np\na = np.arange(4)\nb = np.nonzero(a)\nc = np.unique(a)\nd = np.where(a > 1)\n"),
        Valid("import torch\nx = torch.arange(4)\ni = torch.nonzero(x)\nu = x.unique()\nm = x[x > 1]\n"),
        Valid(
            "import torch\nx = torch.zeros(8, device='cuda')\ni = torch.nonzero_static(x, size=4)\n"
            "n = torch.count_nonzero(x)\ny = torch.where(x > 0, x, 0.0)\nh = torch.histc(x, bins=10, min=-3, max=3)\n"
        ),
        Valid(
            "import torch\nimport torch.nn.functional as F\nids = torch.zeros(8, dtype=torch.long, device='cuda')\n"
            "o = F.one_hot(ids, num_classes=16)\np = F.one_hot(ids, 16)\n"
            "r = ids.repeat_interleave(ids, output_size=32)\ns = ids.repeat_interleave(2, dim=0)\n"
        ),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nx[x < 0] = 0.0\nidx = x.long()\ny = x[idx]\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n\n\nclass Sampler(torch.nn.Module):\n"
            "    def expand_to_tokens(self, req_temperature: torch.Tensor, query_lens: torch.Tensor, total: int):\n"
            "        return torch.repeat_interleave(req_temperature, query_lens, dim=0)\n",
            expected_fix="import torch\n\n\nclass Sampler(torch.nn.Module):\n"
            "    def expand_to_tokens(self, req_temperature: torch.Tensor, query_lens: torch.Tensor, total: int):\n"
            "        return torch.repeat_interleave(\n"
            "            req_temperature, query_lens, dim=0, output_size=total\n"
            "        )\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch\nimport torch.nn.functional as F\n\n\n"
            "def tokens_per_expert(topk_ids: torch.Tensor, num_experts: int):\n"
            "    return F.one_hot(topk_ids).view(-1, num_experts).sum(dim=0)\n",
            expected_fix="import torch\nimport torch.nn.functional as F\n\n\n"
            "def tokens_per_expert(topk_ids: torch.Tensor, num_experts: int):\n"
            "    return F.one_hot(topk_ids, num_classes=num_experts).view(-1, num_experts).sum(dim=0)\n",
        ),
        Invalid(
            "import torch\nx = torch.zeros(8, device='cuda')\na = torch.nonzero(x)\nb = x.nonzero()\n"
            "c = torch.argwhere(x)\nd = torch.where(x > 0)\n",
            count=4,
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\nx = torch.zeros(8, device='cuda')\nmask = x > 0\nkeep = ~mask & (x < 5)\n"
            "a = x[x > 0]\nb = x[mask]\nc = x[keep, ...]\nd = torch.masked_select(x, mask)\nx[mask] += 1\n",
            count=5,
        ),
        Invalid(
            "import torch\nx = torch.zeros(8, dtype=torch.long, device='cuda')\nu = torch.unique(x, return_counts=True)\n"
            "v = x.unique_consecutive()\nb = torch.bincount(x, minlength=16)\nh = x.float().histc(bins=4)\n"
            "z = torch.histc(x.float(), 4, 0, 0)\n",
            count=5,
        ),
        Invalid("import torch\nrepeats = torch.ones(4, dtype=torch.long).cuda()\nidx = torch.repeat_interleave(repeats)\n"),
        Invalid(
            "import torch\nfrom torch.nn.functional import one_hot\n\ndef f(input_ids: torch.Tensor, num_classes: int):\n"
            "    return one_hot(\n        input_ids,\n        -1,\n    )\n",
        ),
        Invalid(
            "import torch\nadj = torch.rand(64, 64, device='cuda') > 0.9\ncsr = adj.float().to_sparse_csr()\n"
            "coo = adj.float().to_sparse()\n",
            count=2,
            confidence=Confidence.MEDIUM,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._written: set[int] = set()  # subscripts being assigned: `x[mask] = 0` does not wait
        self._is_bool = BoolTensors(self)

    # ---- calls -------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.qualname(node.func)
        if qual is not None:
            op = _torch_op(qual)
            if op is not None:
                self._check(node, op, self._operand(node), as_method=False)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in TENSOR_METHODS:
            self._check(node, node.func.attr.value, node.func.value, as_method=True)

    def _operand(self, call: cst.Call) -> cst.BaseExpression | None:
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value in OPERAND_KEYWORDS:
                return arg.value
        return None

    def _check(self, call: cst.Call, op: str, operand: cst.BaseExpression | None, as_method: bool) -> None:
        if operand is None:
            return
        if op == "where" and len(call.args) != 1:
            return
        if op == "histc" and self._histc_has_range(call, as_method):
            return
        if op == "one_hot" and not _missing_or(self._size_argument(call, op), "-1"):
            return
        if op == "repeat_interleave":
            where = self._repeat_interleave_waits(call, operand, as_method)
        else:
            where = self.where(operand)
        if where is None or not where.on_device:
            return
        text = one_line(self.code_of(call))
        message = f"`{text}` has an output size that depends on GPU data, so the host waits for the GPU"
        fix = None
        if op in SIZE_NAMES:
            size = self._size_in_scope(op) if self._size_argument(call, op) is None else None
            if size is not None:
                keyword = SIZE_KEYWORD[op]
                fixed = with_keyword_arg(call, keyword, cst.Name(size))
                fix = Replacement(
                    call,
                    fixed,
                    Applicability.UNSAFE,
                    f"Pass `{keyword}={size}` (unsafe: `{size}` must be the exact output size)",
                )
                message += f"; `{keyword}={size}` does not wait if `{size}` is the exact size"
            else:
                message += f"; {ALTERNATIVES[op]} (no such size in scope to fix it automatically)"
        else:
            message += f"; {ALTERNATIVES[op]}"
        if op in SPARSE_CONVERSIONS:
            where = where.weaker(Certainty.MEDIUM)
        self.report_where(call, message, where, fix=fix)

    def _size_argument(self, call: cst.Call, op: str) -> cst.BaseExpression | None:
        """The size argument as written (`output_size=` is keyword-only; `num_classes` is not)."""
        if op == "one_hot":
            return argument(call, 1, "num_classes")
        return keyword_arg(call, SIZE_KEYWORD[op])

    def _histc_has_range(self, call: cst.Call, as_method: bool) -> bool:
        """`min=` and `max=` both given, and not both 0 (which means "take them from the data")."""
        first = 1 if as_method else 2
        low, high = argument(call, first, "min"), argument(call, first + 1, "max")
        if low is None or high is None:
            return False
        return not (_is_zero(low) and _is_zero(high))

    def _repeat_interleave_waits(self, call: cst.Call, operand: cst.BaseExpression, as_method: bool) -> Where | None:
        """The tensor that makes `repeat_interleave` wait, or None: only tensor repeats without
        `output_size=` wait; an integer repeat gives a size the host can compute."""
        output_size = keyword_arg(call, "output_size")
        if output_size is not None and not (isinstance(output_size, cst.Name) and output_size.value == "None"):
            return None
        positional = [a.value for a in call.args if a.keyword is None]
        repeats = keyword_arg(call, "repeats")
        if repeats is None:
            if as_method:
                repeats = positional[0] if positional else None
            elif len(positional) == 1:
                return self.where(positional[0])  # `torch.repeat_interleave(repeats)`
            else:
                repeats = positional[1] if len(positional) > 1 else None
        if repeats is None:
            return None
        repeats_where = self.where(repeats)
        if repeats_where.on_device:
            return repeats_where
        source = self.where(operand)
        if repeats_where.place is Place.HOST_TENSOR and source.on_device:
            return source
        return None

    def _size_in_scope(self, op: str) -> str | None:
        """The one host value in scope named like the size `op` needs, else None."""
        scope = self.scope
        assigned = self.assignments(scope)
        found = []
        for name in SIZE_NAMES[op]:
            is_parameter = isinstance(scope, cst.FunctionDef) and parameter(scope, name) is not None
            if not is_parameter and name not in assigned:
                continue
            where = self.where(cst.Name(name))
            if where.place is Place.HOST and not where.is_none:
                found.append(name)
        return found[0] if len(found) == 1 else None

    def report_where(self, node: cst.CSTNode, message: str, where: Where, fix: Replacement | None = None) -> None:
        if where.certainty < Certainty.HIGH and self.host_code:
            return  # CPU kernels: a tensor of unknown device there is a host tensor
        super().report_where(node, message, where, fix)

    # ---- boolean masks -----------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._written.add(id(target.target))
                self._check_masked_write(target.target, node.value)

    def _check_masked_write(self, target: cst.Subscript, value: cst.BaseExpression) -> None:
        """`x[mask] = values`: a tensor written through a boolean mask goes through `index_put_`,
        which turns the mask into indices (`nonzero`) and waits; a Python scalar does not
        (`masked_fill`, measured: `x[mask] = 0.0` does not wait)."""
        written = self.where(value)
        if not written.is_tensor:
            return
        for element in target.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or not self._is_bool(index.value):
                continue
            mask = self.where(index.value)
            if mask.on_device:
                text = one_line(self.code_of(index.value))
                self.report_where(
                    target,
                    f"`{one_line(self.code_of(target))} = ...` writes a tensor through the GPU mask `{text}`: "
                    f"indexing by a mask turns it into indices first, so the host waits for the GPU; "
                    f"`torch.where({text}, values, {one_line(self.code_of(target.value))})` does not wait",
                    mask.weaker(Certainty.MEDIUM),
                )
                return

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._written.add(id(node.target))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if id(node) in self._written:
            return
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index) or not self._is_bool(index.value):
                continue
            where = self.where(index.value)
            if where.on_device and not self.where(node.value).on_host:
                mask = one_line(self.code_of(index.value))
                self.report_where(
                    node,
                    f"`{one_line(self.code_of(node))}` selects by the GPU mask `{mask}`: its output size depends on "
                    f"GPU data, so the host waits for the GPU; {SAME_SHAPE}",
                    where,
                )
                return


def _torch_op(qual: str) -> str | None:
    """The operation a qualified name calls, when it is one this rule knows."""
    if qual == "torch.nn.functional.one_hot":
        return "one_hot"
    module, _, short = qual.rpartition(".")
    if module == "torch" and short in ALTERNATIVES and short != "one_hot":
        return short
    if module == "torch.Tensor" and short in TENSOR_METHODS:
        return short
    return None


def _is_zero(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.Integer, cst.Float)) and float(value.value) == 0.0


def _missing_or(value: cst.BaseExpression | None, default: str) -> bool:
    """Whether an argument is absent or spelled as its default (`-1`)."""
    if value is None:
        return True
    return cst.Module(body=()).code_for_node(value).replace(" ", "") == default
