"""SYNC109 validating-call."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from synclint.devices.lattice import Where, combine
from synclint.model import Applicability, Confidence
from synclint.evidence import Certainty
from synclint.patterns import one_line
from synclint.rule import Invalid, Replacement, Rule, Valid
from synclint.syntax import argument, dotted_name, keyword_arg, method_call, positional_args
from synclint.traversal import walk


@dataclass(frozen=True)
class CheckedSolver:
    """A linalg call that raises on bad input, and its `_ex` variant that returns `info` instead."""

    ex_name: str  # the `_ex` function, in torch.linalg
    field: str  # the field of the `_ex` result that the checked call returns
    positional: int  # positional arguments the `_ex` variant takes (more: no fix)
    what: str  # the input it rejects


CHECKED_SOLVERS = {
    "torch.linalg.inv": CheckedSolver("inv_ex", "inverse", 1, "singular"),
    "torch.inverse": CheckedSolver("inv_ex", "inverse", 1, "singular"),
    "torch.linalg.cholesky": CheckedSolver("cholesky_ex", "L", 1, "non-positive-definite"),
    "torch.cholesky": CheckedSolver("cholesky_ex", "L", 1, "non-positive-definite"),
    "torch.linalg.solve": CheckedSolver("solve_ex", "result", 2, "singular"),
}
# Tensor methods that run the same checked kernels.
CHECKED_METHODS = {"inverse": "torch.linalg.inv", "cholesky": "torch.linalg.cholesky"}
# A validating distribution's methods that check their value against its support (measured: `log_prob` waits).
CHECKED_SAMPLES = ("log_prob", "cdf", "icdf")
COMPARISONS = frozenset({"torch.equal", "torch.allclose"})
CLIP_GRAD_NORM = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_"})
# Submodules of torch.distributions that hold no Distribution classes.
NOT_DISTRIBUTIONS = frozenset({"constraints", "constraint_registry", "transforms", "kl", "utils"})
# aten's isin takes a sort-based path (3 syncs) only once the test set outgrows
# 10 * elements.numel() ** 0.145 elements, so a test set under 10 elements never syncs;
# the catalogue measured 8 (no sync) against 1,024 (syncs).
SHORT_TEST_SET = 8
LITERAL_TENSOR_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})


class ValidatingCall(Rule):
    code = "SYNC109"
    name = "validating-call"
    summary = "A call checks its input on the host to raise an error, so the host waits for the GPU"
    # Every function this rule knows is named through a torch import (so the file says `torch`;
    # not "isin", which every `isinstance` contains), and each method after a dot.
    prefilter = ("torch", re.compile(r"\.[\s\\]*(?:inverse|cholesky|equal|allclose)\b"))
    docs = """
    ## What it does
    Flags calls on CUDA tensors that copy a result to the host to validate it or to return a
    Python bool: `torch.linalg.inv`, `torch.linalg.cholesky`, `torch.linalg.solve`,
    `torch.inverse`, `torch.cholesky` (and `A.inverse()`, `A.cholesky()`), the constructors of
    `torch.distributions` with the default `validate_args` and `log_prob`/`cdf`/`icdf` of such a
    distribution made in the same function or kept in `self`, `clip_grad_norm_(...,
    error_if_nonfinite=True)`, `torch.equal` and `torch.allclose`, and `torch.isin` with a test
    set that is not a short literal.

    Not flagged: the `_ex` variants (`inv_ex`, `cholesky_ex`, `solve_ex`), distributions built
    with `validate_args=False` or in a module that calls
    `Distribution.set_default_validate_args(False)`, `clip_grad_norm_` without
    `error_if_nonfinite=True`, `torch.equal(a, a)` on the same tensor, `torch.isin` against a
    literal of at most 8 elements, and anything on host tensors.

    ## Why is this bad?
    To raise on singular or non-positive-definite input, `inv`, `cholesky` and `solve` read
    the solver's `info` on the host; a distribution checks its parameters against their
    constraints with a Python `if`; `error_if_nonfinite` reads the total norm; `equal` and
    `allclose` return a Python bool. Each read waits for every kernel queued before it
    (measured on an H100 with 20 ms of GPU work queued: `torch.linalg.inv(A)` returned after
    20,195 us, `torch.linalg.inv_ex(A)` after 506 us; `Categorical(probs=p)` 20,115 us against
    167 us with `validate_args=False`). `torch.isin` with a long test set (1,024 against 8,192
    elements) syncs three times inside aten on its sort-based path, and no change to how the
    test set is copied to the GPU removes those syncs; against 8 elements it does not sync.
    Which path aten takes depends on both sizes at run time (the sort-based one once the test
    set has more than about `10 * elements.numel() ** 0.145` elements), and most test sets in
    model code are a few special token ids, so `isin` findings are low confidence: they show
    with `--min-confidence low`.

    ## Example
    ```python
    gram_inv = torch.linalg.inv(gram)
    chol = torch.linalg.cholesky(cov)
    dist = torch.distributions.Categorical(probs=probs)
    ```

    ## Use instead
    ```python
    gram_inv = torch.linalg.inv_ex(gram).inverse
    chol = torch.linalg.cholesky_ex(cov).L
    dist = torch.distributions.Categorical(probs=probs, validate_args=False)
    ```
    Check `info` on the GPU where the error matters (`torch._assert_async(info == 0)` does not
    sync). For `torch.isin`, keep the test set short or look tokens up in a boolean table
    (`table[x]`, with `table` a device tensor of the vocabulary size).

    ## Fix safety
    `torch.linalg.inv(A)` becomes `torch.linalg.inv_ex(A).inverse`, `torch.linalg.cholesky(A)`
    becomes `torch.linalg.cholesky_ex(A).L`, `torch.linalg.solve(A, B)` becomes
    `torch.linalg.solve_ex(A, B).result` (likewise `torch.inverse` and `torch.cholesky`),
    keeping how the module spells `torch`. The fix is unsafe: singular or non-positive-definite
    input no longer raises, the result holds NaN or garbage instead. Calls with `out=` or with
    more positional arguments than the `_ex` variant takes, the tensor methods, and calls in the
    body of a `try` that catches the error (`except RuntimeError:` around a retry with more
    jitter would silently accept the bad result) get no fix.
    The other calls have no fix: whether to drop a validation is the author's decision.
    """

    VALID = [
        Valid("import torch\nA = torch.randn(4, 4, device='cuda')\nB = torch.linalg.inv_ex(A).inverse\n"),
        Valid("import torch\nA = torch.randn(4, 4)\nB = torch.linalg.inv(A)\n"),
        Valid("import numpy as np\nA = np.eye(4)\nB = np.linalg.inv(A)\n"),
        Valid(
            "import torch\np = torch.rand(8, device='cuda')\n"
            "d = torch.distributions.Categorical(probs=p, validate_args=False)\n"
        ),
        Valid(
            "import torch\nfrom torch.distributions import Categorical, Distribution\n"
            "Distribution.set_default_validate_args(False)\n"
            "p = torch.rand(8, device='cuda')\nd = Categorical(probs=p)\n"
        ),
        Valid("import torch\nx = torch.ones(4, device='cuda')\nsame = torch.equal(x, x)\n"),
        Valid(
            "import torch\nx = torch.arange(64, device='cuda')\n"
            "stop = torch.tensor([2, 3, 5], device='cuda')\nm = torch.isin(x, stop)\n"
        ),
        Valid(
            "import torch\n\ndef embed(input_ids: torch.Tensor, image_id: int, video_id: int):\n"
            "    mm_ids = input_ids.new_tensor([image_id, video_id])\n    return torch.isin(input_ids, mm_ids)\n",
            config={"min-confidence": "low"},
        ),
        Valid(
            "import torch\n\ndef step(model, loss):\n    loss.backward()\n"
            "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\n\ndef ridge(hidden_states: torch.Tensor, reg: float):\n"
            "    gram = hidden_states.mT @ hidden_states\n    return torch.linalg.inv(gram)\n",
            expected_fix="import torch\n\ndef ridge(hidden_states: torch.Tensor, reg: float):\n"
            "    gram = hidden_states.mT @ hidden_states\n    return torch.linalg.inv_ex(gram).inverse\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid(
            "import torch as T\ncov = T.eye(4, device='cuda')\nchol = T.linalg.cholesky(cov, upper=True)\n",
            expected_fix="import torch as T\ncov = T.eye(4, device='cuda')\nchol = T.linalg.cholesky_ex(cov, upper=True).L\n",
            confidence=Confidence.HIGH,
        ),
        Invalid(
            "import torch\nfrom torch.linalg import solve\nA = torch.eye(4, device='cuda')\nx = solve(A, A)\n",
            expected_fix="import torch\nfrom torch.linalg import solve\nA = torch.eye(4, device='cuda')\n"
            "x = torch.linalg.solve_ex(A, A).result\n",
        ),
        Invalid("import torch\nA = torch.eye(4, device='cuda')\nB = A.inverse()\n"),
        Invalid(
            "import torch\nfrom torch.distributions import Categorical\n"
            "p = torch.rand(8, device='cuda')\nd = Categorical(probs=p)\n"
        ),
        Invalid(
            "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
        ),
        Invalid(
            "from torch import nn\n\ndef step(model):\n"
            "    nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n",
            confidence=Confidence.MEDIUM,
        ),
        Invalid("import torch\na = torch.ones(4, device='cuda')\nb = a.clone()\nok = torch.allclose(a, b)\n"),
        Invalid(
            "import torch\n\ndef isin_list(elements: torch.Tensor, ids: list[int]):\n"
            "    test = torch.tensor(ids, device=elements.device)\n    return torch.isin(elements, test)\n",
            config={"min-confidence": "low"},
            confidence=Confidence.LOW,
        ),
        # A policy's distribution, kept in `self` and scored every step.
        Invalid(
            "import torch\nfrom torch.distributions import Normal\n\n\nclass Gaussian:\n"
            "    def proba_distribution(self, mean: torch.Tensor, std: torch.Tensor):\n"
            "        self.distribution = Normal(mean, std, validate_args=False)\n        self.raw = Normal(mean, std)\n\n"
            "    def log_prob(self, actions: torch.Tensor):\n        a = torch.ones(3, device='cuda')\n"
            "        return self.distribution.log_prob(a) + self.raw.log_prob(a)\n",
            confidence=Confidence.HIGH,
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._validation_off: bool | None = None  # set_default_validate_args(False) in the module

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.qualname(node.func)
        if qual in CHECKED_SOLVERS:
            self._check_solver(node, qual, CHECKED_SOLVERS[qual])
        elif qual in COMPARISONS:
            self._check_comparison(node, positional_args(node)[:2])
        elif qual == "torch.isin":
            self._check_isin(node)
        elif qual in CLIP_GRAD_NORM:
            self._check_clip_grad_norm(node)
        elif qual is not None and _is_distribution(qual):
            self._check_distribution(node)
        elif qual is None:
            self._check_method(node)

    # ---- linalg --------------------------------------------------------------------

    def _check_solver(self, node: cst.Call, qual: str, solver: CheckedSolver) -> None:
        where = self._tensor_operands(positional_args(node)[: solver.positional])
        if not where.on_device:
            return
        self.report_where(node, self._solver_message(node, solver), where, fix=self._ex_fix(node, qual, solver))

    def _solver_message(self, node: cst.Call, solver: CheckedSolver) -> str:
        return (
            f"`{one_line(self.code_of(node))}` checks for {solver.what} input on the host, so the host "
            f"waits for the GPU; `torch.linalg.{solver.ex_name}` returns `info` instead of checking"
        )

    def _ex_fix(self, node: cst.Call, qual: str, solver: CheckedSolver) -> Replacement | None:
        if any(a.star for a in node.args) or keyword_arg(node, "out") is not None:
            return None
        if self._error_is_caught():
            return None  # a `try` here handles the error: with `_ex` bad input would pass silently
        if sum(1 for a in node.args if a.keyword is None) > solver.positional:
            return None
        func = node.func
        imports: list[str] = []
        if isinstance(func, cst.Attribute) and qual.startswith("torch.linalg."):
            new_func: cst.BaseExpression = func.with_changes(attr=cst.Name(solver.ex_name))
        elif isinstance(func, cst.Attribute):  # torch.inverse -> torch.linalg.inv_ex, in the module's spelling
            new_func = cst.Attribute(cst.Attribute(func.value, cst.Name("linalg")), cst.Name(solver.ex_name))
        elif (torch := self._torch_alias()) is not None:  # a bare name, and the module imports torch
            new_func = cst.Attribute(cst.Attribute(cst.Name(torch), cst.Name("linalg")), cst.Name(solver.ex_name))
        else:  # a bare name imported from torch or torch.linalg, and no `import torch`
            new_func = cst.Name(solver.ex_name)
            imports.append(f"from torch.linalg import {solver.ex_name}")
        new = cst.Attribute(node.with_changes(func=new_func), cst.Name(solver.field))
        return Replacement(
            node,
            new,
            Applicability.UNSAFE,
            f"Use `{solver.ex_name}(...).{solver.field}` (no error on {solver.what} input)",
            imports=imports,
        )

    def _error_is_caught(self) -> bool:
        """Whether the statement being visited sits in the body of a `try` whose handlers catch the
        error a checked solver raises (`torch.linalg.LinAlgError`, a `RuntimeError`, any `Exception`)."""
        stack = self.ctx.statements
        for outer, inner in zip(stack, stack[1:]):
            if isinstance(outer, (cst.Try, cst.TryStar)) and any(
                    inner is stmt or (isinstance(stmt, cst.SimpleStatementLine) and any(inner is small for small in stmt.body))
                    for stmt in outer.body.body):
                if any(_catches_linalg_error(handler.type) for handler in outer.handlers):
                    return True
        return False

    def _torch_alias(self) -> str | None:
        """The name under which the module imports torch itself (`torch`, `T`), if it does."""
        for local, full in self.import_aliases().items():
            if full == "torch":
                return local
        return None

    # ---- comparisons, isin, clip_grad_norm_, distributions -----------------------------

    def _check_comparison(self, node: cst.Call, operands: list[cst.BaseExpression]) -> None:
        if len(operands) == 2 and self.code_of(operands[0]) == self.code_of(operands[1]):
            return  # the same tensor object: aten answers without reading the data
        where = self._tensor_operands(operands)
        if where.on_device:
            message = f"`{one_line(self.code_of(node))}` returns a Python bool, so the host waits for the GPU"
            self.report_where(node, message, where)

    def _check_isin(self, node: cst.Call) -> None:
        elements = argument(node, 0, "elements")
        test = argument(node, 1, "test_elements")
        if elements is None or test is None or self._is_short_literal(test):
            return
        where = self._tensor_operands([elements, test])
        if not where.on_device:
            return
        # Whether aten takes the syncing path depends on both lengths at run time, and most
        # test sets in practice are a few special token ids: a guess, so low confidence.
        where = where.weaker(Certainty.LOW)
        message = (
            f"`{one_line(self.code_of(node))}` syncs 3 times inside aten once the test set is long (sort-based "
            "path), however the test set was copied to the GPU; keep it short or use a lookup table"
        )
        self.report_where(node, message, where)

    def _is_short_literal(self, test: cst.BaseExpression) -> bool:
        if isinstance(test, cst.Name):  # a name bound once in this scope: judge what it was bound to
            bound = self._assignments().get(test.value, [])
            if len(bound) != 1 or bound[0] is None:
                return False
            test = bound[0]
        if isinstance(test, (cst.Integer, cst.Float)):
            return True
        if isinstance(test, cst.Call) and test.args and (
            self.qualname(test.func) in LITERAL_TENSOR_FACTORIES or method_call(test, "new_tensor") is not None
        ):
            test = test.args[0].value
        if isinstance(test, (cst.List, cst.Tuple)):
            return len(test.elements) <= SHORT_TEST_SET and not any(
                isinstance(e, cst.StarredElement) for e in test.elements
            )
        return False

    def _assignments(self) -> dict[str, list[cst.BaseExpression | None]]:
        scope = self.scope
        return self.assignments(scope)

    def _check_clip_grad_norm(self, node: cst.Call) -> None:
        flag = keyword_arg(node, "error_if_nonfinite")
        if not (isinstance(flag, cst.Name) and flag.value == "True"):
            return
        params = argument(node, 0, "parameters")
        where = self.where(params) if params is not None else None
        if where is None or not where.on_device:
            return
        message = (
            f"`{one_line(self.code_of(node))}` reads the total norm on the host to raise on non-finite "
            "gradients, so the host waits for the GPU"
        )
        self.report_where(node, message, where)

    def _validates(self, node: cst.Call) -> bool:
        """Whether a distribution made by `node` validates its arguments and samples (the default)."""
        flag = keyword_arg(node, "validate_args")
        if flag is not None and not (isinstance(flag, cst.Name) and flag.value in ("True", "None")):
            return False  # False, or an expression we cannot read
        return not self._module_turns_validation_off()

    def _check_distribution(self, node: cst.Call) -> None:
        if not self._validates(node):
            return
        where = self._tensor_operands([a.value for a in node.args if a.keyword is None or a.keyword.value != "validate_args"])
        if not where.on_device:
            return
        message = (
            f"`{one_line(self.code_of(node))}` validates its arguments on the host (`validate_args` is on by "
            "default), so the host waits for the GPU; pass `validate_args=False`"
        )
        self.report_where(node, message, where)

    def _module_turns_validation_off(self) -> bool:
        if self._validation_off is None:
            finder = _ValidationSwitchFinder()
            walk(self.module, finder)
            self._validation_off = finder.found
        return self._validation_off

    # ---- tensor methods -----------------------------------------------------------

    def _check_method(self, node: cst.Call) -> None:
        func = method_call(node, *CHECKED_METHODS, *CHECKED_SAMPLES, "equal", "allclose")
        if func is None:
            return
        method = func.attr.value
        if method in CHECKED_SAMPLES:
            self._check_sample(node, func.value)
            return
        if method in ("equal", "allclose"):
            if node.args:
                self._check_comparison(node, [func.value, node.args[0].value])
            return
        if node.args:
            return  # `A.cholesky(upper)` and friends: rare enough to leave alone
        where = self.where(func.value)
        if where.on_device:
            self.report_where(node, self._solver_message(node, CHECKED_SOLVERS[CHECKED_METHODS[method]]), where)

    def _check_sample(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """`dist.log_prob(x)` of a distribution made in this function or in this class's `self` by a
        validating constructor: the sample is checked against the support on the host."""
        if isinstance(receiver, cst.Name):
            made = self.assignments().get(receiver.value, [])
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
            cls = self.self_class()
            made = list(self.attribute_assignments(cls).get(receiver.attr.value, [])) if cls is not None else []
        else:
            return
        constructors = [value for value in made if isinstance(value, cst.Call)
                        and _is_distribution(self.qualname(value.func) or "")]
        if not constructors or len(constructors) != len(made) or not all(self._validates(c) for c in constructors):
            return
        where = self._tensor_operands(positional_args(node)[:1])
        if where.on_device:
            self.report_where(
                node,
                f"`{one_line(self.code_of(node))}` checks the sample against the distribution's support on the host "
                "(`validate_args` is on by default), so the host waits for the GPU; build it with `validate_args=False`",
                where,
            )

    def _tensor_operands(self, operands: list[cst.BaseExpression]) -> Where:
        return combine([self.where(operand) for operand in operands])


class _ValidationSwitchFinder(cst.CSTVisitor):
    """Finds `Distribution.set_default_validate_args(False)` anywhere in a module."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func) or ""
        if name.rsplit(".", 1)[-1] == "set_default_validate_args" and node.args:
            value = node.args[0].value
            if isinstance(value, cst.Name) and value.value == "False":
                self.found = True


# What `except` catches the error a checked solver raises (torch.linalg.LinAlgError, a RuntimeError).
LINALG_ERROR_CATCHERS = frozenset("LinAlgError _LinAlgError RuntimeError Exception BaseException".split())


def _catches_linalg_error(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True  # a bare `except:`
    if isinstance(kind, cst.Tuple):
        return any(_catches_linalg_error(element.value) for element in kind.elements)
    name = dotted_name(kind)
    return name is not None and name.rsplit(".", 1)[-1] in LINALG_ERROR_CATCHERS


def _is_distribution(qual: str) -> bool:
    """`torch.distributions.Normal`, `torch.distributions.normal.Normal`: a Distribution class."""
    parts = qual.split(".")
    if len(parts) < 3 or parts[:2] != ["torch", "distributions"]:
        return False
    cls = parts[-1]
    return (
        cls[:1].isupper()
        and not cls.endswith("Transform")
        and cls not in ("Distribution", "ExponentialFamily")
        and not NOT_DISTRIBUTIONS.intersection(parts[2:-1])
    )





