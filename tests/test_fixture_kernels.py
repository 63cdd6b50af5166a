"""The fixture kernels run on the CPU, and each fixed kernel computes what the original computed."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")

PAIRS = sorted(p for p in (REPO / "fixtures").iterdir() if (p / "after.py").is_file())


def load(path):
    spec = importlib.util.spec_from_file_location(f"fixture_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("folder", PAIRS, ids=lambda p: p.name)
def test_fixed_kernels_compute_the_same_on_cpu(folder):
    torch.set_num_threads(1)
    before, after = load(folder / "before.py"), load(folder / "after.py")
    assert before.KERNELS == after.KERNELS
    device = torch.device("cpu")
    for name in before.KERNELS:
        # Fresh inputs for each run: some kernels update their arguments in place.
        expected = getattr(before, name)(*before.make_inputs(device)[name])
        actual = getattr(after, name)(*after.make_inputs(device)[name])
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=f"{folder.name}.{name}")
