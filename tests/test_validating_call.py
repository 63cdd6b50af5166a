"""SYNC109 validating-call: the cases where device inference and argument shapes decide."""

from __future__ import annotations

from synclint.rules.validating_call import ValidatingCall
from synclint.model import Applicability, Confidence
from synclint.testing import check_snippet


def findings(code: str, **kwargs):
    return check_snippet(ValidatingCall, code, **kwargs)


def test_isin_against_a_name_bound_once_to_a_short_literal_is_quiet():
    code = (
        "import torch\n\ndef mask(ids: torch.Tensor):\n"
        "    stop = torch.tensor([1, 2, 3], device=ids.device)\n    return torch.isin(ids, stop)\n"
    )
    assert findings(code, min_confidence=Confidence.LOW) == []


def test_isin_against_a_name_bound_twice_is_a_low_confidence_finding():
    code = (
        "import torch\n\ndef mask(ids: torch.Tensor, extra: list[int]):\n"
        "    stop = torch.tensor([1, 2], device=ids.device)\n"
        "    if extra:\n        stop = torch.tensor(extra, device=ids.device)\n"
        "    return torch.isin(ids, stop)\n"
    )
    (finding,) = findings(code, min_confidence=Confidence.LOW)
    assert finding.confidence == Confidence.LOW
    assert "inside aten" in finding.message
    assert findings(code) == []  # hidden at the default medium confidence


def test_equal_on_two_device_tensors_is_high_but_on_one_tensor_with_itself_is_quiet():
    code = "import torch\na = torch.ones(3, device='cuda')\nb = a * 2\nx = torch.equal(a, b)\ny = torch.equal(a, a)\n"
    (finding,) = findings(code)
    assert finding.location.row == 4 and finding.confidence == Confidence.HIGH


def test_equal_on_host_tensors_is_quiet():
    assert findings("import torch\na = torch.ones(3)\nb = torch.zeros(3)\nok = torch.equal(a, b)\n") == []


def test_set_default_validate_args_false_later_in_the_module_turns_distributions_off():
    code = (
        "import torch\nfrom torch import distributions as D\n\ndef sample(p: torch.Tensor):\n"
        "    return D.Categorical(probs=p).sample()\n\nD.Distribution.set_default_validate_args(False)\n"
    )
    assert findings(code) == []


def test_distribution_validate_args_true_is_reported_and_an_expression_is_not():
    code = (
        "import torch\n\nclass Head(torch.nn.Module):\n    def f(self, mu: torch.Tensor, sigma: torch.Tensor, check: bool):\n"
        "        a = torch.distributions.Normal(mu, sigma, validate_args=True)\n"
        "        b = torch.distributions.normal.Normal(mu, sigma, validate_args=check)\n"
    )
    (finding,) = findings(code)
    assert finding.location.row == 5 and finding.confidence == Confidence.MEDIUM


def test_transforms_and_kl_of_torch_distributions_are_not_constructors_that_validate():
    code = (
        "import torch\np = torch.rand(4, device='cuda')\n"
        "t = torch.distributions.transforms.ExpTransform()\n"
        "c = torch.distributions.constraints.Positive()\n"
    )
    assert findings(code) == []


def test_distribution_of_host_tensors_is_quiet():
    assert findings("import torch\np = torch.rand(4)\nd = torch.distributions.Categorical(probs=p)\n") == []


def test_inv_fix_keeps_the_module_alias_and_inverse_moves_to_linalg():
    code = "import torch as T\nA = T.eye(3, device='cuda')\nB = T.inverse(A)\n"
    (finding,) = findings(code)
    assert finding.fix.applicability is Applicability.UNSAFE
    assert [e.content for e in finding.fix.edits] == ["T.linalg.inv_ex(A).inverse"]
    assert finding.fix.imports == ()


def test_bare_name_without_import_torch_imports_the_ex_variant():
    code = "from torch.linalg import cholesky\nfrom torch import eye\nA = eye(3, device='cuda')\nL = cholesky(A)\n"
    (finding,) = findings(code)
    assert [e.content for e in finding.fix.edits] == ["cholesky_ex(A).L"]
    assert finding.fix.imports == ("from torch.linalg import cholesky_ex",)


def test_out_argument_and_tensor_methods_get_no_fix():
    code = (
        "import torch\nA = torch.eye(3, device='cuda')\nB = torch.empty(3, 3, device='cuda')\n"
        "torch.linalg.inv(A, out=B)\nC = A.inverse()\n"
    )
    found = findings(code)
    assert [f.location.row for f in found] == [4, 5]
    assert all(f.fix is None for f in found)


def test_linalg_on_host_tensor_or_unknown_value_is_quiet():
    code = "import torch\n\ndef f(a, b):\n    A = torch.eye(3)\n    return torch.linalg.inv(A), torch.linalg.solve(a, b)\n"
    assert findings(code, min_confidence=Confidence.LOW) == []


def test_clip_grad_norm_of_parameters_of_an_unknown_module_is_medium():
    code = (
        "import torch\n\ndef step(model, opt):\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    )
    (finding,) = findings(code)
    assert finding.location.row == 4 and finding.confidence == Confidence.MEDIUM
    assert finding.because == "model.parameters() are a module's tensors"


RETRY = """\
import torch
A = torch.eye(3, device='cuda')
for jitter in (1e-6, 1e-4, 1e-2):
    try:
        L = torch.linalg.cholesky(A + jitter * torch.eye(3, device='cuda'))
        break
    except {caught}:
        continue
"""


def test_a_solver_in_a_try_that_catches_its_error_gets_no_fix():
    # `cholesky_ex` would not raise: the retry with more jitter would silently accept a bad factor.
    for caught in ("RuntimeError", "torch.linalg.LinAlgError", "(ValueError, RuntimeError) as error", "Exception"):
        (finding,) = findings(RETRY.format(caught=caught))
        assert (finding.location.row, finding.fix) == (5, None), caught


def test_a_solver_in_a_try_that_catches_other_errors_keeps_its_fix():
    (finding,) = findings(RETRY.format(caught="KeyError"))
    assert [e.content for e in finding.fix.edits] == ["torch.linalg.cholesky_ex(A + jitter * torch.eye(3, device='cuda')).L"]
