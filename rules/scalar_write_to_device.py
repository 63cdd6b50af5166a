"""SYNC106 scalar-write-to-device."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence

import libcst as cst

from synclint.devices.conventions import MASK_NAME
from synclint.devices.lattice import Place
from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import BoolTensors, one_line, statements_code, tensor_phrase
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import dotted_name, find_all, method_call, parameter


class Index(enum.Enum):
    """What one element of a subscript selects, as far as a write through it goes."""

    VIEW = "view"  # a slice, `...`, `None`, a bool: basic indexing that keeps a dimension
    INTEGER = "integer"  # one position: a Python int, or a value assumed to be one
    SEQUENCE = "sequence"  # a list of positions or an integer tensor: advanced indexing
    MASK = "mask"  # a bool tensor: a masked fill, which takes the scalar as a kernel argument


# Names that say a value is a bool mask, or a collection of positions.
POSITION_NAME = re.compile(r"(idx|index|indices|ids|id|pos|position|positions|slot|slots)$", re.IGNORECASE)  # mask_idx
SEQUENCE_NAME = re.compile(r"(ids|indices|idxs|tokens|positions|_list)$", re.IGNORECASE)
# Lists of Python numbers, by their names: their elements are scalars (`tensor_list[i]` is not).
NUMBERS_NAME = re.compile(r"(ids|tokens|lens|lengths|positions|indices|offsets|counts|sizes|starts|ends)$", re.IGNORECASE)
COUNT_NAME = re.compile(r"^(num|max|min|n)_", re.IGNORECASE)
TORCH_FACTORIES_WITH_SIZES = frozenset("zeros ones empty full rand randn".split())
# Calls whose result is a Python number: builtins, and methods of tensors and lists.
SCALAR_BUILTINS = frozenset("int float bool round len abs min max ord".split())
SCALAR_METHODS = frozenset("item size stride numel dim element_size data_ptr get_device index count".split())
SCALAR_ANNOTATIONS = frozenset("int float bool".split())
# Builtins whose result is a collection: as an index, advanced indexing.
SEQUENCE_BUILTINS = frozenset("list tuple sorted range set".split())

SEED_BEFORE = """\
import torch


def apply_forcing(logits: torch.Tensor, forced: dict[int, int], cu_num_tokens: list[int]) -> torch.Tensor:
    for req_idx, end_token in forced.items():
        row = cu_num_tokens[req_idx]
        # one blocking copy per request
        logits[row, end_token] = 1e9
    return logits
"""
SEED_AFTER = """\
import torch


def apply_forcing(logits: torch.Tensor, forced: dict[int, int], cu_num_tokens: list[int]) -> torch.Tensor:
    rows_list: list[int] = []
    cols_list: list[int] = []
    for req_idx, end_token in forced.items():
        row = cu_num_tokens[req_idx]
        # one blocking copy per request
        rows_list.append(row)
        cols_list.append(end_token)
    if rows_list:
        rows_idx = torch.tensor(rows_list, pin_memory=torch.cuda.is_available()).to(
            logits.device, non_blocking=True
        )
        cols_idx = torch.tensor(cols_list, pin_memory=torch.cuda.is_available()).to(
            logits.device, non_blocking=True
        )
        logits.index_put_((rows_idx, cols_idx), logits.new_full((len(rows_list),), 1e9))
    return logits
"""
ONE_DIM_BEFORE = """\
import torch


class Flags:
    def __init__(self, n: int) -> None:
        self.done = torch.zeros(n, dtype=torch.bool, device="cuda")

    def finish(self, slots: list[int]) -> None:
        positions_list = sorted(slots)
        for slot in positions_list:
            if slot >= 0:
                self.done[slot] = True
"""
ONE_DIM_AFTER = """\
import torch


class Flags:
    def __init__(self, n: int) -> None:
        self.done = torch.zeros(n, dtype=torch.bool, device="cuda")

    def finish(self, slots: list[int]) -> None:
        positions_list = sorted(slots)
        positions_list_2: list[int] = []
        for slot in positions_list:
            if slot >= 0:
                positions_list_2.append(slot)
        if positions_list_2:
            positions_idx_2 = torch.tensor(
                positions_list_2, pin_memory=torch.cuda.is_available()
            ).to(self.done.device, non_blocking=True)
            self.done.index_put_(
                (positions_idx_2,), self.done.new_full((len(positions_list_2),), True)
            )
"""


class ScalarWriteToDevice(Rule):
    code = "SYNC106"
    name = "scalar-write-to-device"
    summary = "Writing a host scalar into one element of a GPU tensor is a blocking copy that waits for the GPU"
    prefilter = ("torch",)
    docs = """
    ## What it does
    Flags assignments of a Python scalar (or a host tensor) into a CUDA tensor through
    integer indices that select one element (`x[i] = 1.0`, `logits[row, tok] = 1e9`,
    `x[0][j] = n`), or through an index list or integer tensor (`x[gpu_idx] = 0`,
    `logits[:, token_ids] = -inf`). Slices and `...` with integers (`x[0:1] = 1.0`,
    `x[i, :] = 0`), bool masks (`x[mask] = 0.0`), values already on the GPU, `fill_`,
    `index_fill_` and augmented assignments (`x[i] += 1`, which adds on the GPU) do not wait
    and are not flagged. Writes into a tensor made in the same function or class with more
    dimensions than the integer indices fill a whole row and are not flagged either.

    ## Why is this bad?
    PyTorch copies the scalar from host memory into the single element (or into a value
    tensor for advanced indexing) with a blocking copy, which waits for every kernel queued
    before it: measured on an H100, `x2d[1, 2] = 1.0` and `x[gpu_idx] = 1.0` each returned
    after the 20 ms of queued GPU work, once per write. In a loop this is one full stall per
    iteration (vLLM PR #42347: the thinking-budget forcing loop wrote `logits[i, tok] = 1e9`
    per request, every step).

    ## Example
    ```python
    for row, token in zip(rows, tokens):
        logits[row, token] = 1e9
    ```

    ## Use instead
    Collect the positions on the host and write them all at once, after one asynchronous
    copy from pinned memory; for a single constant position, a slice or `fill_` does not wait:
    ```python
    rows_list: list[int] = []
    cols_list: list[int] = []
    for row, token in zip(rows, tokens):
        rows_list.append(row)
        cols_list.append(token)
    if rows_list:
        rows_idx = torch.tensor(rows_list, pin_memory=torch.cuda.is_available()).to(logits.device, non_blocking=True)
        cols_idx = torch.tensor(cols_list, pin_memory=torch.cuda.is_available()).to(logits.device, non_blocking=True)
        logits.index_put_((rows_idx, cols_idx), logits.new_full((len(rows_list),), 1e9))
    ```
    ```python
    query_start_loc[0:1] = 0  # instead of query_start_loc[0] = 0
    ```

    ## Fix safety
    The write in a `for` loop (directly in its body or under `if`s) is rewritten to the
    collect-then-`index_put_` form above, as an unsafe fix. It is offered only when every
    index is a Python value, the scalar does not change in the loop, nothing else in the loop
    uses the tensor, and the loop has no `else`, `return`, `yield`, `raise` or `await`. It can
    still change behaviour: an out-of-range index raises `IndexError` at the write before the
    fix, and fails on the GPU after it; and other code that runs during the loop (another
    thread, a callback) no longer sees the writes until the loop ends. Other writes have no fix.
    """

    VALID = [
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nx[0:1] = 1.0\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nmask = x > 0\nx[mask] = 0.0\n"),
        # a mask made as one (measured: a Python scalar through a GPU bool mask of fewer dimensions does not wait)
        Valid("import torch\npos = torch.zeros(8, 4, device='cuda')\nkeep = torch.zeros(8, dtype=torch.bool, device='cuda')\n"
              "pos[keep] = 1.0\npos[keep.to(torch.bool)] = 2.0\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nx[x > 0] = 0.0\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nx[3] += 1\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nv = x.sum()\nx[3] = v\n"),
        Valid("import torch\nx = torch.zeros(8, 8, device='cuda')\nx[3] = 1.0\nx[3, :] = 2.0\nx[..., 0] = 3.0\n"),
        Valid("import torch\nx = torch.zeros(8)\nx[3] = 1.0\n"),
        Valid("import numpy as np\nx = np.zeros(8)\nx[3] = 1.0\n"),
        Valid("import torch\nx = torch.zeros(8, device='cuda')\nx[0].fill_(1.0)\nx.index_fill_(0, idx, 1.0)\n"),
        Valid(SEED_AFTER),
    ]
    INVALID = [
        Invalid(SEED_BEFORE, expected_fix=SEED_AFTER, count=1, confidence=Confidence.MEDIUM),
        Invalid(ONE_DIM_BEFORE, expected_fix=ONE_DIM_AFTER, count=1, confidence=Confidence.HIGH),
        Invalid(
            "import torch\n\n\ndef make(n: int, rank: int, value: int):\n    t = torch.zeros(4, n, device='cuda', dtype=torch.int32)\n"
            "    t[0][rank] = 7\n    t[1, rank] = value if value else 0\n    return t\n",
            count=2,
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\nlogits = torch.zeros(4, 100, device='cuda')\nbanned_ids = [3, 5]\n"
            "logits[:, banned_ids] = -float('inf')\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\n\n\nclass Penalties(torch.nn.Module):\n"
            "    def reset(self, counts: torch.Tensor, idx_mapping: torch.Tensor) -> None:\n"
            "        counts[idx_mapping] = 0\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch\nx = torch.zeros(8, device='cuda')\nx[0] = torch.tensor(1.0)\n",
            confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # The `for` loops around the statement being visited, each with its indentation.
        self._loops: list[tuple[cst.For, str]] = []
        self._line_of: dict[int, cst.SimpleStatementLine] = {}
        self._loop_counters: dict[int, set[str]] = {}

    def visit_For(self, node: cst.For) -> None:
        self._loops.append((node, self.indentation()))

    def leave_For(self, original_node: cst.For) -> None:
        self._loops.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            self._line_of[id(small)] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check_write(node, target.target, single_target=len(node.targets) == 1)

    def _check_write(self, assign: cst.Assign, target: cst.Subscript, single_target: bool) -> None:
        tensor = self.where(target.value)
        if not tensor.on_device:
            return
        if tensor.certainty < Certainty.HIGH and self.host_code:
            return  # a module of CPU kernels: tensors of unknown device are host tensors
        value = self.where(assign.value)
        confidence = tensor.certainty
        if value.place is Place.HOST_TENSOR:
            if tensor.certainty < Certainty.HIGH:
                return  # a host tensor written into a tensor of unknown device is likely a host copy
            confidence = min(confidence, value.certainty)
        elif value.is_tensor or value.is_none or not self._is_scalar(assign.value):
            return
        kinds = [self._index_kind(element) for element in target.slice]
        if Index.MASK in kinds:
            return
        through_sequence = Index.SEQUENCE in kinds
        host_tensor = value.place is Place.HOST_TENSOR
        # A scalar fills a view or a whole row without a copy; a host tensor is copied into it from
        # pageable memory, which blocks (`buf[: len(ids)] = torch.tensor(ids)`).
        into_view = not through_sequence and (Index.VIEW in kinds or (
            (rank := self._rank(target.value)) is not None and rank > len(kinds)))
        if into_view and not host_tensor:
            return
        written = "a host tensor" if host_tensor else "a Python scalar"
        where = ("through an index list or tensor into" if through_sequence else "into a slice of" if into_view
                 else "into one element of")
        message = (
            f"`{one_line(self.code_of(assign))}` writes {written} {where} `{one_line(self.code_of(target.value))}`, "
            f"which {tensor_phrase(tensor)}: a blocking host-to-device copy that waits for the GPU"
        )
        fix = None
        if single_target and not through_sequence and not into_view:
            fix = self._collect_then_index_put(assign, target, kinds)
        self.report(assign, message, certainty=confidence, because=tensor.because, fix=fix)

    # ---- what is written ----------------------------------------------------------------

    def _is_scalar(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `expr` is a Python number or bool (not a list element, which may be a tensor)."""
        if depth > 4:
            return False
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return self._is_scalar(expr.expression, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self._is_scalar(expr.left, depth + 1) and self._is_scalar(expr.right, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self._is_scalar(expr.body, depth + 1) and self._is_scalar(expr.orelse, depth + 1)
        if isinstance(expr, cst.Call):
            return self._returns_scalar(expr)
        if isinstance(expr, cst.Subscript):
            return self._is_number_list(expr.value)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Call) and self.qualname(expr.value.func) in ("torch.finfo", "torch.iinfo"):
                return True  # torch.finfo(x.dtype).min
            return self.where(expr).place is Place.HOST
        if isinstance(expr, cst.Name):
            return expr.value in ("True", "False") or self._is_scalar_name(expr.value, depth)
        return False

    def _is_number_list(self, expr: cst.BaseExpression) -> bool:
        """`x.shape`, `x.size()`, `t.tolist()`, a host list named like token ids or lengths,
        or a name bound only to `.tolist()`: containers whose elements are Python numbers."""
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return True
        if method_call(expr, "size", "stride", "tolist") is not None:
            return True
        if self.where(expr).place is not Place.HOST:
            return False
        name = _last_name(expr)
        if name is not None and NUMBERS_NAME.search(name):
            return True
        if isinstance(expr, cst.Name):
            bound = self._assignments().get(expr.value) or []
            return bool(bound) and all(value is not None and method_call(value, "tolist") for value in bound)
        return False

    def _returns_scalar(self, call: cst.Call) -> bool:
        if isinstance(call.func, cst.Name) and call.func.value in SCALAR_BUILTINS:
            return True
        if method_call(call, *SCALAR_METHODS) is not None or (self.qualname(call.func) or "").startswith("math."):
            return True
        function = self.resolve(call.func)
        return function is not None and function.returns is not None and _names_scalar(function.returns.annotation)

    def _is_scalar_name(self, name: str, depth: int) -> bool:
        """A parameter annotated as a number, or a name only ever bound to numbers: by
        assignment, or as the counter of `for ... in range(...)` / `enumerate(...)`."""
        func = self.function
        if func is not None:
            param = parameter(func, name)
            if param is not None:
                return param.annotation is not None and _names_scalar(param.annotation.annotation)
        bound = self._assignments().get(name)
        if bound is None and func is not None:
            bound = self._assignments(self.module).get(name)  # a module constant
        if not bound:
            return False
        counters = self._counters()
        for value in bound:
            if value is None:
                if name not in counters:
                    return False
            elif not self._is_scalar(value, depth + 1):
                return False
        return True

    def _counters(self) -> set[str]:
        """Names bound as `for i in range(...)` or as the index of `for i, x in enumerate(...)`."""
        scope = self.function or self.module
        if id(scope) not in self._loop_counters:
            counters: set[str] = set()
            for loop in find_all(scope, cst.For, cst.CompFor):
                func = loop.iter.func if isinstance(loop.iter, cst.Call) else None
                name = func.value if isinstance(func, cst.Name) else None
                if name == "range" and isinstance(loop.target, cst.Name):
                    counters.add(loop.target.value)
                elif name == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements:
                    first = loop.target.elements[0].value
                    if isinstance(first, cst.Name):
                        counters.add(first.value)
            self._loop_counters[id(scope)] = counters
        return self._loop_counters[id(scope)]

    # ---- what the subscript selects ------------------------------------------------------

    def _index_kind(self, element: cst.SubscriptElement) -> Index:
        if not isinstance(element.slice, cst.Index):  # a Slice
            return Index.VIEW
        value = element.slice.value
        if element.slice.star is not None:
            return Index.SEQUENCE
        if isinstance(value, cst.Ellipsis) or (isinstance(value, cst.Name) and value.value in ("None", "True", "False")):
            return Index.VIEW
        if isinstance(value, (cst.List, cst.ListComp, cst.Tuple)):
            return Index.SEQUENCE
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in SEQUENCE_BUILTINS:
            return Index.SEQUENCE
        if isinstance(value, cst.Integer) or _is_negative_integer(value):
            return Index.INTEGER
        if self._is_mask(value):
            return Index.MASK
        if self.where(value).is_tensor:
            return Index.SEQUENCE
        name = _last_name(value)
        if name is not None and SEQUENCE_NAME.search(name) and not COUNT_NAME.search(name):
            return Index.SEQUENCE
        return Index.INTEGER

    def _is_mask(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, (cst.Comparison, cst.BooleanOperation)):
            return True
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, (cst.BitInvert, cst.Not)):
            return True
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return True
        if isinstance(value, cst.Call):
            return BoolTensors(self)(value)  # `x.isnan()`, `torch.zeros(n, dtype=torch.bool)`, `m.to(torch.bool)`
        name = _last_name(value)
        if name is None:
            return False
        if MASK_NAME.search(name) and not POSITION_NAME.search(name):
            return True
        # A local name bound to a comparison or a mask-making call.
        if isinstance(value, cst.Name):
            bound = self._assignments().get(value.value, [])
            return any(expr is not None and not isinstance(expr, cst.Name) and self._is_mask(expr) for expr in bound)
        return False

    def _assignments(self, scope: cst.Module | cst.FunctionDef | None = None) -> dict[str, list[cst.BaseExpression | None]]:
        """What each name is assigned in `scope`, by default the function being visited (cached)."""
        scope = scope or self.function or self.module
        return self.assignments(scope)

    def _rank(self, tensor: cst.BaseExpression) -> int | None:
        """The number of dimensions of a tensor made in this function or class, when every
        assignment to it is a factory call with explicit sizes, else None."""
        if isinstance(tensor, cst.Name):
            made: Sequence[cst.BaseExpression | None] = self._assignments().get(tensor.value, [])
        elif isinstance(tensor, cst.Attribute) and isinstance(tensor.value, cst.Name) and tensor.value.value == "self":
            cls = self.self_class()
            made = self.attribute_assignments(cls).get(tensor.attr.value, []) if cls is not None else []
        else:
            return None
        ranks = {self._factory_rank(value) for value in made}
        return ranks.pop() if len(ranks) == 1 else None

    def _factory_rank(self, value: cst.BaseExpression | None) -> int | None:
        if not isinstance(value, cst.Call):
            return None
        qual = self.qualname(value.func) or ""
        if not (qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in TORCH_FACTORIES_WITH_SIZES):
            return None
        sizes = [arg for arg in value.args if arg.keyword is None]
        if qual.endswith(".full"):
            sizes = sizes[:1]  # full(size, fill_value): the size is one tuple
        if any(arg.star for arg in sizes):
            return None
        if len(sizes) == 1 and isinstance(sizes[0].value, (cst.Tuple, cst.List)):
            return len(sizes[0].value.elements)
        if qual.endswith(".full"):
            return None
        # zeros(n, m): one size per dimension (zeros(shape) with a tuple variable counts
        # as one, which can only make the rule flag, never stay silent).
        return len(sizes) or None

    # ---- the fix for a write in a loop ---------------------------------------------------


    def _value_code(self, value: cst.BaseExpression) -> str:
        """The written value as an argument: without the parentheses that only wrapped its lines."""
        bare = value.with_changes(lpar=[], rpar=[]) if getattr(value, "lpar", None) else value
        text = self.code_of(bare)
        return self.code_of(value) if "\n" in text else text
    def _collect_then_index_put(self, assign: cst.Assign, target: cst.Subscript, kinds: list[Index]) -> Replacement | None:
        """`for ...: t[i, j] = c` -> collect i and j in host lists, then one `index_put_`."""
        line = self._line_of.get(id(assign))
        if line is None or not self._loops or len(line.body) != 1 or line.trailing_whitespace.comment is not None:
            return None
        loop, indentation = self._loops[-1]
        if loop.orelse is not None or not _reaches_through_ifs(loop.body, line) or not _ends_plainly(loop):
            return None
        if find_all(loop.body, cst.Return, cst.Yield, cst.Raise, cst.Await):
            return None
        receiver = dotted_name(target.value)
        if receiver is None or any(kind is not Index.INTEGER for kind in kinds):
            return None
        # (each an Index: the kinds are all INTEGER)
        positions = [element.slice.value for element in target.slice if isinstance(element.slice, cst.Index)]
        if any(self.where(position).place is not Place.HOST for position in positions):
            return None  # a device scalar in a host list would be copied back one by one
        bound = set(self.assignments(loop))  # names the loop rebinds, its own target included
        root = receiver.split(".", 1)[0]
        if root in bound or not _is_invariant(assign.value, bound, self.qualname):
            return None
        uses = find_all(loop.body, cst.Name, cst.Attribute)
        if any(dotted_name(use) == receiver for use in uses if use is not target.value):
            return None  # the loop reads or writes the tensor elsewhere: the writes must stay in order
        lists, indices = self._fresh_names(len(positions))
        module = self.module
        config = module.config_for_parsing
        appends = [
            cst.parse_statement(f"{name}.append({self.code_of(position)})", config)
            for name, position in zip(lists, positions)
        ]
        appends[0] = appends[0].with_changes(leading_lines=line.leading_lines)
        new_loop = loop.visit(_Replace(line, appends))
        assert isinstance(new_loop, cst.For)
        # The loop's leading comments and the comments after its last line lie outside its span.
        new_loop = new_loop.with_changes(leading_lines=(), body=new_loop.body.with_changes(footer=()))
        declarations = [cst.parse_statement(f"{name}: list[int] = []", config) for name in lists]
        indent = module.default_indent
        copies = "".join(
            f"{indent}{index} = torch.tensor({name}, pin_memory=torch.cuda.is_available())"
            f".to({receiver}.device, non_blocking=True){module.default_newline}"
            for name, index in zip(lists, indices)
        )
        index_tuple = f"({indices[0]},)" if len(indices) == 1 else f"({', '.join(indices)})"
        write_all = cst.parse_statement(
            f"if {lists[0]}:{module.default_newline}{copies}"
            f"{indent}{receiver}.index_put_({index_tuple}, "
            f"{receiver}.new_full((len({lists[0]}),), {self._value_code(assign.value)}))",
            config,
        )
        return Replacement(
            loop,
            statements_code(module, [*declarations, new_loop, write_all], indentation),
            Applicability.UNSAFE,
            "Collect the positions on the host and write them with one `index_put_` after the loop",
            imports=["import torch"],
        )

    def _fresh_names(self, count: int) -> tuple[list[str], list[str]]:
        """Names for the host lists and the device index tensors, unused in this function."""
        if count == 1:
            bases = ["positions"]
        elif count == 2:
            bases = ["rows", "cols"]
        else:
            bases = [f"dim{k}" for k in range(count)]
        taken = {name.value for name in find_all(self.function or self.module, cst.Name)}
        suffix = ""
        number = 1
        while any(f"{base}_{kind}{suffix}" in taken for base in bases for kind in ("list", "idx")):
            number += 1
            suffix = f"_{number}"
        return [f"{base}_list{suffix}" for base in bases], [f"{base}_idx{suffix}" for base in bases]


class _Replace(cst.CSTTransformer):
    """Replaces one statement line by several."""

    def __init__(self, line: cst.SimpleStatementLine, replacement: Sequence[cst.BaseStatement]) -> None:
        super().__init__()
        self.line = line
        self.replacement = replacement

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if original_node is self.line:
            return cst.FlattenSentinel(self.replacement)
        return updated_node


def _reaches_through_ifs(block: cst.BaseSuite, line: cst.SimpleStatementLine) -> bool:
    """Whether `line` is a statement of `block`, or of `if`/`else` blocks nested in it."""
    if not isinstance(block, cst.IndentedBlock):
        return False
    for statement in block.body:
        if statement is line:
            return True
        branch: cst.CSTNode | None = statement
        while isinstance(branch, (cst.If, cst.Else)):
            if _reaches_through_ifs(branch.body, line):
                return True
            branch = branch.orelse if isinstance(branch, cst.If) else None
    return False


def _ends_plainly(loop: cst.For) -> bool:
    """Whether the loop's span ends where its regenerated text does.

    The span ends after the last statement of the last line; that line's comment and the
    comment lines after it in nested blocks lie outside it and would be written twice.
    """
    statement: cst.CSTNode = loop
    while True:
        if isinstance(statement, cst.SimpleStatementLine):
            return statement.trailing_whitespace.comment is None
        if isinstance(statement, cst.If) and statement.orelse is not None:
            statement = statement.orelse
            continue
        if isinstance(statement, (cst.Try, cst.TryStar, cst.Match)) or getattr(statement, "orelse", None) is not None:
            return False  # shapes not followed here
        body = getattr(statement, "body", None)
        if not isinstance(body, cst.IndentedBlock) or (body.footer and statement is not loop):
            return False
        statement = body.body[-1]


def _is_invariant(value: cst.BaseExpression, bound: set[str], qualname) -> bool:
    """Whether `value` is the same on every iteration: literals, and names the loop does not
    rebind, combined by operators and pure calls (`float("inf")`, `torch.finfo(t).min`)."""
    for call in find_all(value, cst.Call):
        name = call.func.value if isinstance(call.func, cst.Name) else qualname(call.func)
        if name not in ("float", "int", "bool", "torch.finfo", "torch.iinfo"):
            return False
    if find_all(value, cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda):
        return False
    return not any(name.value in bound for name in find_all(value, cst.Name))


def _names_scalar(annotation: cst.BaseExpression) -> bool:
    """`int`, `float`, `bool`, or one of them `| None`."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        sides = [annotation.left, annotation.right]
        return any(_names_scalar(side) for side in sides) and all(
            _names_scalar(side) or (isinstance(side, cst.Name) and side.value == "None") for side in sides
        )
    return isinstance(annotation, cst.Name) and annotation.value in SCALAR_ANNOTATIONS


def _is_negative_integer(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(
        expr.expression, cst.Integer
    )


def _last_name(expr: cst.BaseExpression) -> str | None:
    name = dotted_name(expr)
    return name.rsplit(".", 1)[-1] if name is not None else None
