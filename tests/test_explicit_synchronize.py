"""SYNC110 explicit-synchronize: how receivers and local helpers are recognised."""

from __future__ import annotations

from synclint.model import Confidence
from synclint.rules.explicit_synchronize import ExplicitSynchronize
from synclint.testing import check_snippet


def findings(code: str):
    return check_snippet(ExplicitSynchronize, code)


def rows(code: str) -> list[tuple[int, Confidence]]:
    return [(f.location.row, f.confidence) for f in findings(code)]


def test_parameter_annotated_as_an_event_is_proven():
    code = "import torch\n\ndef wait(ev: torch.cuda.Event | None):\n    ev.synchronize()\n"
    assert rows(code) == [(4, Confidence.HIGH)]


def test_attribute_assigned_an_event_in_a_conditional_expression_is_proven():
    code = (
        "import torch\n\nclass Out:\n    def __init__(self, use_event):\n"
        "        self.ready = torch.Event() if use_event else None\n\n"
        "    def get(self):\n        self.ready.synchronize()\n"
    )
    (finding,) = findings(code)
    assert finding.confidence == Confidence.HIGH
    assert finding.because == "self.ready = torch.Event() if use_event else None"
    assert "recorded before the event" in finding.message


def test_unknown_receiver_without_a_telling_name_is_quiet():
    assert findings("import torch\n\ndef f(handle, lock):\n    handle.synchronize()\n    lock.synchronize()\n") == []


def test_indexed_container_of_events_is_judged_by_its_name():
    code = "import torch\n\ndef f(done_events, i):\n    done_events[i].synchronize()\n"
    assert rows(code) == [(4, Confidence.MEDIUM)]


def test_a_project_platform_helper_imported_from_elsewhere_is_quiet():
    code = "import torch\nfrom vllm.platforms import current_platform\n\ndef f():\n    current_platform.synchronize()\n"
    assert findings(code) == []


def test_call_of_a_module_function_that_always_synchronizes_is_high():
    code = (
        "import torch\n\ndef sync_all():\n    \"\"\"Wait for the GPU.\"\"\"\n    torch.cuda.synchronize()\n\n"
        "def step(x):\n    y = x * 2\n    sync_all()\n    return y\n"
    )
    assert rows(code) == [(5, Confidence.HIGH), (9, Confidence.HIGH)]


def test_call_of_a_long_function_that_happens_to_synchronize_is_not_a_helper_call():
    code = (
        "import torch\n\ndef benchmark(model, x):\n    model(x)\n    model(x)\n    model(x)\n"
        "    torch.cuda.synchronize()\n\ndef main(model, x):\n    benchmark(model, x)\n"
    )
    assert rows(code) == [(7, Confidence.HIGH)]


def test_a_helper_that_only_waits_for_an_event_is_not_a_device_wide_sync():
    code = (
        "import torch\n\nclass R:\n    def _wait(self):\n        self.copy_event.synchronize()\n\n"
        "    def step(self):\n        self._wait()\n"
    )
    assert rows(code) == [(5, Confidence.MEDIUM)]


def test_a_short_function_whose_loops_do_the_work_is_not_a_helper_call():
    code = (
        "import torch\n\ndef condition(configs, run):\n    for config in configs:\n        for _ in range(3):\n"
        "            run(config)\n    torch.cuda.synchronize()\n\ndef main(configs, run):\n    condition(configs, run)\n"
    )
    assert rows(code) == [(7, Confidence.HIGH)]


def test_code_for_another_accelerator_is_reported_only_at_low_confidence():
    code = "import torch\n\ndef step(x):\n    torch.accelerator.synchronize()\n"
    for name, accelerator in [("vllm/device_allocator/xpumem.py", "XPU"), ("vllm/v1/worker/tpu_model_runner.py", "TPU"),
                              ("backends/hpu/attn.py", "HPU")]:
        found = check_snippet(ExplicitSynchronize, code, filename=name, min_confidence=Confidence.LOW)
        assert [(f.confidence, f.because) for f in found] == [
            (Confidence.LOW, f"{accelerator} code, not CUDA; torch.accelerator.synchronize() is the device-wide synchronize")]
        assert check_snippet(ExplicitSynchronize, code, filename=name) == []
    assert len(check_snippet(ExplicitSynchronize, code, filename="vllm/v1/worker/rocm_runner.py")) == 1


def test_classes_and_custom_op_methods_named_for_another_platform_are_reported_only_at_low_confidence():
    code = (
        "import torch\n\nclass INCXPULinearBase:\n    def apply(self, x):\n        torch.accelerator.synchronize()\n\n"
        "class RMSNorm(CustomOp):\n    def forward_xpu(self, x):\n        torch.accelerator.synchronize()\n\n"
        "    def forward_cpu(self, x):\n        def inner():\n            torch.accelerator.synchronize()\n\n"
        "    def forward_cuda(self, x):\n        torch.accelerator.synchronize()\n\n"
        "class Output:\n    def step(self):\n        torch.accelerator.synchronize()\n"
    )
    found = check_snippet(ExplicitSynchronize, code, min_confidence=Confidence.LOW)
    wait = "torch.accelerator.synchronize() is the device-wide synchronize"
    assert [(f.location.row, f.confidence, f.because) for f in found] == [
        (5, Confidence.LOW, f"XPU code, not CUDA; {wait}"),
        (9, Confidence.LOW, f"XPU code, not CUDA; {wait}"),
        (13, Confidence.LOW, f"CPU code, not CUDA; {wait}"),
        (16, Confidence.HIGH, wait),
        (20, Confidence.HIGH, wait),
    ]


def test_every_finding_says_why():
    code = ("import torch\n\ndef wait(s):\n    torch.cuda.synchronize()\n    torch.cuda.synchronize(0)\n"
            "    torch.cuda.Stream.synchronize(s)\n")
    assert [(f.location.row, f.because) for f in findings(code)] == [
        (4, "torch.cuda.synchronize() is the device-wide synchronize"),
        (5, "torch.cuda.synchronize() is the device-wide synchronize"),
        (6, "torch.cuda.Stream.synchronize() waits for a stream"),
    ]


def test_a_name_bound_to_a_device_synchronize_is_one_when_called():
    # nanochat's training scripts: the alias is a no-op off CUDA, the device-wide wait on it.
    code = ("import torch\n\ndevice_type = 'cuda'\n"
            "synchronize = torch.cuda.synchronize if device_type == 'cuda' else lambda: None\n"
            "wait = torch.cuda.synchronize\n\n"
            "for step in range(10):\n    synchronize()\n    wait()\n    print(step)\n")
    assert [(f.location.row, f.confidence, f.because) for f in findings(code)] == [
        (8, Confidence.MEDIUM, "synchronize = torch.cuda.synchronize if device_type == 'cuda' else lambda: None"),
        (9, Confidence.HIGH, "wait = torch.cuda.synchronize"),
    ]
    assert findings(code)[0].message == (
        "`synchronize()` calls `torch.cuda.synchronize`, which blocks the host until all work queued on the device "
        "finishes")
    assert findings("import torch\n\nsynchronize = lambda: None\nsynchronize()\n") == []
