"""Project-wide analysis: syncs behind properties, helpers and calls into other files."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_cli, run_json


def make_package(root, files: dict[str, str]) -> None:
    """Write a package `app/` (every folder gets an __init__.py) under root."""
    for name, code in files.items():
        path = root / "app" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    for folder in [root / "app", *(p for p in (root / "app").rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()


def by_code(findings, code):
    return [f for f in findings if f["code"] == code]


METADATA = """
    from dataclasses import dataclass

    import torch
    from typing_extensions import deprecated


    @dataclass
    class AttnMetadata:
        seq_lens: torch.Tensor
        query_start_loc_cpu: torch.Tensor

        @property
        @deprecated("Use seq_lens on the device; this copies it to the host.")
        def seq_lens_cpu(self) -> torch.Tensor:
            return self.seq_lens.to("cpu")

        @property
        def num_computed_tokens_cpu(self) -> torch.Tensor:
            query_lens = self.query_start_loc_cpu[1:] - self.query_start_loc_cpu[:-1]
            return self.seq_lens_cpu - query_lens
"""

READERS = """
    import torch

    from app.metadata import AttnMetadata


    def max_len(meta: AttnMetadata) -> int:
        return int(meta.seq_lens_cpu.max())


    def computed(meta: AttnMetadata):
        return meta.num_computed_tokens_cpu


    def unannotated(meta):
        return meta.seq_lens_cpu
"""


@pytest.fixture
def properties_project(tmp_path):
    make_package(tmp_path, {"metadata.py": METADATA, "backends/readers.py": READERS})
    return tmp_path


def test_a_property_that_syncs_is_found_from_readers_in_other_modules(properties_project):
    code, findings = run_json("check", ".", cwd=properties_project)
    assert code == 1
    reads = by_code(findings, "SYNC105")
    assert [(f["filename"], f["location"]["row"]) for f in reads] == [
        ("app/backends/readers.py", 7),
        ("app/backends/readers.py", 11),
        ("app/backends/readers.py", 15),
        ("app/metadata.py", 20),  # `self.seq_lens_cpu` inside the other property
    ]
    first = reads[0]["message"]
    assert "`meta.seq_lens_cpu` reads the property `AttnMetadata.seq_lens_cpu` (app/metadata.py:14)" in first
    assert '`self.seq_lens.to("cpu")` at app/metadata.py:15' in first
    assert "deprecated: Use seq_lens on the device; this copies it to the host." in first
    # A property built on a syncing property: the chain names the inner one.
    assert "AttnMetadata.seq_lens_cpu: `self.seq_lens.to(\"cpu\")`" in reads[1]["message"]
    assert reads[0]["confidence"] == "medium"  # seq_lens is a torch.Tensor field of unknown device


def test_pre_commit_passes_one_file_and_the_package_is_still_indexed(properties_project):
    code, findings = run_json("check", "app/backends/readers.py", cwd=properties_project)
    assert code == 1
    assert {f["filename"] for f in findings} == {"app/backends/readers.py"}  # only the file asked about is reported
    assert len(by_code(findings, "SYNC105")) == 3


def test_a_plain_field_of_the_same_name_elsewhere_makes_unknown_receivers_low(properties_project):
    (properties_project / "app" / "batch.py").write_text(
        "import numpy as np\nimport torch\n\n\nclass InputBatch:\n    def __init__(self):\n        self.seq_lens_cpu = np.zeros(4)\n"
    )
    _, findings = run_json("check", "--min-confidence", "low", ".", cwd=properties_project)
    rows = {f["location"]["row"]: f["confidence"] for f in by_code(findings, "SYNC105")}
    assert rows == {7: "medium", 11: "medium", 15: "low", 20: "medium"}  # annotated readers keep theirs


def test_without_project_analysis_other_files_are_not_looked_at(properties_project):
    code, findings = run_json("check", "--no-project-analysis", ".", cwd=properties_project)
    assert by_code(findings, "SYNC105") == []
    (properties_project / "pyproject.toml").write_text("[tool.synclint]\nproject-analysis = false\n")
    assert by_code(run_json("check", ".", cwd=properties_project)[1], "SYNC105") == []


def test_editing_the_property_rechecks_its_readers(properties_project):
    assert len(by_code(run_json("check", ".", cwd=properties_project)[1], "SYNC105")) == 4
    metadata = properties_project / "app" / "metadata.py"
    metadata.write_text(metadata.read_text().replace('self.seq_lens.to("cpu")', "self.seq_lens"))
    # The readers' bytes did not change, but what they read did: the cache must not serve them.
    assert by_code(run_json("check", ".", cwd=properties_project)[1], "SYNC105") == []


CHAIN = {
    "engine.py": """
        import torch

        from app.prepare import prepare


        class Engine:
            def step(self, batch):
                return prepare(batch)

            def run(self, batches):
                for batch in batches:
                    self.step(batch)
    """,
    "prepare.py": """
        import torch

        from .helpers import lengths


        def prepare(batch):
            return lengths(batch) + 1
    """,
    "helpers.py": """
        import torch


        def lengths(batch) -> int:
            return _count(batch)


        def _count(batch) -> int:
            counts = torch.zeros(4, device="cuda") + batch
            return int(counts.sum().item())
    """,
}


def test_a_helper_chain_three_calls_deep_across_files_is_named(tmp_path):
    make_package(tmp_path, CHAIN)
    code, findings = run_json("check", ".", cwd=tmp_path)
    calls = by_code(findings, "SYNC112")
    assert [(f["filename"], f["location"]["row"]) for f in calls] == [
        ("app/engine.py", 8),  # `prepare(batch)` in the per-step method
        ("app/engine.py", 12),  # `self.step(batch)` in a loop
    ]
    assert calls[0]["message"].endswith(
        "prepare -> lengths -> _count: `counts.sum().item()` at app/helpers.py:10"
    )
    assert "Engine.step -> prepare -> lengths -> _count" in calls[1]["message"]
    assert calls[0]["context"] == "step" and calls[1]["context"] == "loop"
    assert {f["confidence"] for f in calls} == {"high"}


def test_a_chain_quotes_the_expression_that_syncs_not_the_name_it_is_reported_at(tmp_path):
    # SYNC102 marks the method's name (`to`), the line that copies in a chain; the chain quotes the call.
    make_package(tmp_path, {
        "helpers.py": """
            import torch

            def staged(values):
                host = torch.ones(4)
                return host.to("cuda")
        """,
        "engine.py": """
            import torch

            from app.helpers import staged

            def train(model, loader):
                for batch in loader:
                    loss = model(staged(batch))
                    loss.backward()
        """,
    })
    code, findings = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    [call] = by_code(findings, "SYNC112")
    assert call["message"] == ("`staged(...)` in a loop calls a function that makes the host wait for the GPU: "
                               'staged: `host.to("cuda")` at app/helpers.py:5')


def test_a_sync_on_a_tensor_of_unknown_device_travels_at_low_confidence(tmp_path):
    files = dict(CHAIN)
    files["helpers.py"] = files["helpers.py"].replace('torch.zeros(4, device="cuda") + batch', "batch")
    files["helpers.py"] = files["helpers.py"].replace("def _count(batch)", "def _count(batch: torch.Tensor)")
    make_package(tmp_path, files)
    assert by_code(run_json("check", ".", cwd=tmp_path)[1], "SYNC112") == []
    calls = by_code(run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)[1], "SYNC112")
    assert [f["confidence"] for f in calls] == ["low", "low"]


CACHED = """
    import torch

    _SIGNS = {}


    class Attention:
        def __init__(self):
            self._table = None

        def _lazy_table(self):
            if self._table is None or self._table.device.index != 0:
                self._table = torch.ones(4).to("cuda")
            return self._table

        def _signs(self, n):
            if n not in _SIGNS:
                _SIGNS[n] = torch.tensor([1, -1] * n, device="cuda")
            return _SIGNS[n]

        def _scales(self, n):
            return torch.tensor([1.0] * n, device="cuda")

        def forward(self, x):
            for n in range(3):
                self._lazy_table()
                self._signs(n)
                self._scales(n)
            return x
"""


def test_a_sync_that_fills_a_cache_costs_callers_nothing_per_step(tmp_path):
    make_package(tmp_path, {"attention.py": CACHED})
    _, findings = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    calls = [(f["location"]["row"], f["confidence"], f["because"]) for f in by_code(findings, "SYNC112")]
    # All three chains end in this file, where the syncs are reported themselves: low. The two
    # through a cache say that only the first call pays; the third does not.
    assert [(row, confidence) for row, confidence, _ in calls] == [(25, "low"), (26, "low"), (27, "low")]
    assert "only the first time: under `if self._table is None" in calls[0][2]
    assert "only the first time: under `if n not in _SIGNS:`" in calls[1][2]
    assert "only the first time" not in calls[2][2] and "reported itself, in this file" in calls[2][2]
    # The syncs themselves are still reported where they are: the first call does wait.
    assert {(f["code"], f["location"]["row"]) for f in findings if f["code"] != "SYNC112"} >= {("SYNC102", 12), ("SYNC103", 17)}


FLAGGED = {
    "checks.py": """
        import torch


        def scale(x, strict: bool = False):
            if strict:
                if torch.ones(1, device="cuda").isnan().any():
                    raise ValueError("nan")
            return x * 2


        def report(x, verbose):
            if verbose and x is not None:
                print(torch.ones(1, device="cuda").sum().item())
            return x
    """,
    "train.py": """
        import torch

        from app.checks import report, scale


        def train(model, loader, verbose):
            for b in loader:
                a = scale(b)
                c = scale(b, strict=True)
                d = scale(b, False)
                e = report(b, verbose)
                f = report(b, 0)
                model(b).sum().backward()
    """,
}


def test_a_helper_that_syncs_on_one_branch_is_as_sure_as_that_branch_at_each_call(tmp_path):
    make_package(tmp_path, FLAGGED)
    _, findings = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    calls = [(f["location"]["row"], f["confidence"], f["because"]) for f in by_code(findings, "SYNC112")]
    # `scale(b)` and `scale(b, False)` leave the branch off, `report(b, 0)` turns it off: no wait.
    assert calls == [
        (9, "high", "SYNC101 at app/checks.py:6"),
        (11, "medium", "SYNC107 at app/checks.py:13; only when `verbose` is true in report()"),
    ]


SET_UP_ONLY = {
    "model.py": """
        import torch
        from torch import nn

        from app.checks import _validate_config, report


        class Net(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.lin = nn.Linear(4, 4).cuda()
                _validate_config(self.lin.weight)

            def forward(self, x):
                y = self.lin(x)
                report(y)
                return y
    """,
    "checks.py": """
        import torch


        def _validate_config(w: torch.Tensor):
            if w.isnan().any():
                raise ValueError("nan weights")
            print(_norm(w))


        def _norm(w):
            return w.norm().item()


        def report(y: torch.Tensor):
            print(y.sum().item())
    """,
}


def test_a_function_that_only_set_up_code_calls_runs_once(tmp_path):
    make_package(tmp_path, SET_UP_ONLY)
    _, findings = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    found = {(f["filename"], f["location"]["row"]): (f["context"], f["confidence"], f["because"]) for f in findings}
    # Only `Net.__init__` calls _validate_config, and only _validate_config calls _norm: both run once.
    assert found["app/checks.py", 5][:2] == ("init", "low")
    assert found["app/checks.py", 5][2].endswith("once, in set-up code: Net.__init__() -> _validate_config()")
    assert found["app/checks.py", 11][:2] == ("init", "low")
    assert found["app/checks.py", 11][2].endswith("once, in set-up code: Net.__init__() -> _validate_config() -> _norm()")
    # `forward` calls report: it runs per step, which the solve says of it (its own file cannot).
    assert found["app/checks.py", 15][:2] == ("step", "medium")
    # The same, checked alone against the kept index (pre-commit) and on standard input.
    _, alone = run_json("check", "--min-confidence", "low", "app/checks.py", cwd=tmp_path)
    assert {(f["location"]["row"], f["context"], f["confidence"]) for f in alone} == {
        (row, context, confidence) for (path, row), (context, confidence, _) in found.items() if path == "app/checks.py"}


def test_a_silenced_sync_does_not_travel_to_callers(tmp_path):
    files = dict(CHAIN)
    files["helpers.py"] = files["helpers.py"].replace(".item())", ".item())  # noqa: SYNC107")
    assert "# noqa" in files["helpers.py"]
    make_package(tmp_path, files)
    assert by_code(run_json("check", ".", cwd=tmp_path)[1], "SYNC112") == []


def test_a_recursive_pair_terminates_and_is_reported_once_per_call(tmp_path):
    make_package(tmp_path, {
        "walk.py": """
            import torch


            def down(t: torch.Tensor, n: int):
                if n:
                    return up(t, n - 1)
                return t


            def up(t, n: int):
                t = t.cuda()
                if t.max().item() > 0:
                    return down(t, n)
                return t
        """,
        "loop.py": """
            import torch

            from app.walk import down, up


            def drive(ts):
                for t in ts:
                    down(t, 3)
        """,
    })
    _, findings = run_json("check", ".", cwd=tmp_path)
    calls = by_code(findings, "SYNC112")
    assert [(f["filename"], f["location"]["row"]) for f in calls] == [("app/loop.py", 8)]
    assert "down -> up: `t.max().item()` at app/walk.py:12" in calls[0]["message"]


def test_device_buffers_set_in_a_base_class_are_known_in_a_subclass_elsewhere(tmp_path):
    make_package(tmp_path, {
        "base.py": """
            import torch


            class Sampler:
                def __init__(self, device):
                    self.penalties = torch.zeros(16, device=device)
        """,
        "greedy.py": """
            import torch

            from app.base import Sampler


            class Greedy(Sampler):
                def sample(self, logits):
                    if self.penalties.any():
                        logits = logits - self.penalties
                    return logits.argmax(-1)
        """,
    })
    _, findings = run_json("check", "app/greedy.py", cwd=tmp_path)
    conditions = by_code(findings, "SYNC101")
    assert [(f["location"]["row"], f["confidence"]) for f in conditions] == [(8, "high")]
    assert "torch.zeros" in conditions[0]["because"]
    _, alone = run_json("check", "--no-project-analysis", "app/greedy.py", cwd=tmp_path)
    assert [f["confidence"] for f in by_code(alone, "SYNC101")] in ([], ["low"])


def test_a_device_tensor_returned_by_another_module_is_a_device_tensor_at_the_caller(tmp_path):
    make_package(tmp_path, {
        "buffers.py": """
            import torch


            def make_mask(n, device):
                return torch.ones(n, dtype=torch.bool, device=device)


            def forwarded(n, device):
                return make_mask(n, device)
        """,
        "use.py": """
            import torch

            from app import buffers


            def check(n, device):
                mask = buffers.forwarded(n, device)
                if mask.all():
                    return 1
                return 0
        """,
    })
    _, findings = run_json("check", "app/use.py", cwd=tmp_path)
    conditions = by_code(findings, "SYNC101")
    assert len(conditions) == 1 and conditions[0]["location"]["row"] == 8
    assert "returned by forwarded() (app/buffers.py:8)" in conditions[0]["because"]


def test_relative_imports_climbing_out_of_the_package_are_ignored(tmp_path):
    make_package(tmp_path, {"a.py": "import torch\nfrom .... import nothing\nfrom . import b\n", "b.py": "import torch\n"})
    code, findings = run_json("check", ".", cwd=tmp_path)
    assert code == 0 and findings == []


def test_a_later_run_on_one_file_starts_from_the_saved_index_and_agrees(properties_project):
    _, whole = run_json("check", ".", cwd=properties_project)
    _, again = run_json("check", ".", cwd=properties_project)
    _, one = run_json("check", "app/backends/readers.py", cwd=properties_project)
    assert again == whole
    assert one == [f for f in whole if f["filename"] == "app/backends/readers.py"]


def test_a_helper_learns_from_its_callers_that_its_parameter_is_on_the_gpu(tmp_path):
    # vLLM 0.21.0 models/utils.py (PR #42347, the guarded clamp): a helper outside any nn.Module,
    # called from models' forward with their hidden states.
    make_package(tmp_path, {
        "utils.py": """
            import torch


            def cast_overflow_tensors(tensors: torch.Tensor, offset: float = 1000) -> torch.Tensor:
                if tensors.isinf().any():
                    clamp = torch.finfo(tensors.dtype).max - offset
                    tensors = torch.clamp(tensors, min=-clamp, max=clamp)
                return tensors


            def count(mask: torch.Tensor) -> int:
                return int(mask.sum().item())
        """,
        "models/layer.py": """
            import torch
            from torch import nn

            from ..utils import cast_overflow_tensors, count


            class Layer(nn.Module):
                def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
                    return cast_overflow_tensors(hidden_states * 2)


            def preprocess(mask):
                return count(mask)
        """,
    })
    _, findings = run_json("check", ".", cwd=tmp_path)
    (clamp,) = by_code(findings, "SYNC101")
    assert clamp["filename"].endswith("app/utils.py") and clamp["confidence"] == "medium"
    assert clamp["because"].startswith("Layer.forward() passes `hidden_states * 2` here")
    # `count` is only called with a value of unknown device: low, hidden by default.
    assert by_code(findings, "SYNC107") == []
    _, everything = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    assert [f["confidence"] for f in by_code(everything, "SYNC107")] == ["low"]
    # Alone, the helper's parameter is a tensor of unknown device outside an nn.Module.
    _, alone = run_json("check", "--no-project-analysis", ".", cwd=tmp_path)
    assert by_code(alone, "SYNC101") == []


def test_a_gpu_tensor_passed_on_through_a_helper_that_does_not_sync_reaches_the_one_that_does(tmp_path):
    # A per-step function hands its GPU tensor to a helper, which passes it on unchanged to another
    # file's helper: the summaries say "passes its parameter on", and one solve follows it.
    make_package(tmp_path, {
        "train.py": """
            import torch

            from app.stages import scale


            def run(model, steps):
                x = torch.randn(4, device="cuda")
                for _ in range(steps):
                    model(x).sum().backward()
                    scale(x)
        """,
        "stages.py": """
            import torch

            from app.checks import overflowed


            def scale(t):
                return overflowed(t * 2)
        """,
        "checks.py": """
            import torch


            def overflowed(values):
                if values.isinf().any():
                    return True
                return False
        """,
    })
    _, findings = run_json("check", "--no-cache", ".", cwd=tmp_path)
    (check,) = by_code(findings, "SYNC101")
    assert (check["filename"], check["location"]["row"], check["confidence"]) == ("app/checks.py", 5, "medium")
    assert check["because"] == ("scale() passes it here (scale() is given `t` on the GPU (run() passes `x` here"
                                " (made by torch.randn(...) on \"cuda\"))); every step, in a loop that runs a model:"
                                " run() -> scale() -> overflowed()")
    assert check["context"] == "step"  # run() calls scale() in a training loop, and scale() calls overflowed()
    # The file checked alone by path, and on standard input as that path, gives the same finding
    # as the run over the package (all three with no cache: each works out what it needs).
    _, alone = run_json("check", "--no-cache", "app/checks.py", cwd=tmp_path)
    assert alone == [check]
    text = (tmp_path / "app" / "checks.py").read_text(encoding="utf-8")
    piped = run_cli("check", "--no-cache", "--output-format", "json", "-", "--stdin-filename", "app/checks.py",
                    cwd=tmp_path, stdin=text)
    assert json.loads(piped.stdout) == [check]


def test_a_sync_on_what_a_helper_elsewhere_returns_is_as_sure_as_that_helper(tmp_path):
    # `count` syncs on what `make` (another file) returns; alone, that value's device is
    # unknown. The solve makes the sync, and the chain callers in loops report, as sure as `make`.
    make_package(tmp_path, {
        "factory.py": """
            import torch


            def make(n):
                return torch.zeros(n, device="cuda")
        """,
        "counts.py": """
            import torch

            from app.factory import make


            def count(n):
                t = make(n)
                return t.sum().item()
        """,
        "loop.py": """
            import torch

            from app.counts import count


            def total(steps):
                return sum(count(i) for i in range(steps))


            def per_step(steps):
                seen = 0
                for i in range(steps):
                    seen += count(i)
                return seen
        """,
    })
    _, findings = run_json("check", "--no-cache", ".", cwd=tmp_path)
    chains = by_code(findings, "SYNC112")
    assert [(f["filename"], f["location"]["row"], f["confidence"], f["because"]) for f in chains] == [
        ("app/loop.py", 7, "high", "SYNC107 at app/counts.py:8"),  # a generator expression is a loop too
        ("app/loop.py", 13, "high", "SYNC107 at app/counts.py:8"),
    ]


def test_moving_a_tensor_that_callers_pass_on_the_gpu_is_no_copy(tmp_path):
    # vLLM 0.33.0 llava_onevision.py: a helper `.to(device)`s a module parameter its caller passes.
    make_package(tmp_path, {
        "helpers.py": """
            import torch


            def add_newline(features: torch.Tensor, newline: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
                return torch.cat([features, newline.to(features.device), scale.to(features.device)])
        """,
        "model.py": """
            import torch
            from torch import nn

            from .helpers import add_newline


            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.newline = nn.Parameter(torch.zeros(8))

                def forward(self, hidden_states: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
                    return add_newline(hidden_states, self.newline, scale.cpu())
        """,
    })
    _, findings = run_json("check", "--min-confidence", "low", ".", cwd=tmp_path)
    # `newline` is a GPU parameter by its caller: moving it is no copy. `scale` is a host tensor
    # by its caller... which a caller's facts do not say (only GPU tensors travel): low, by annotation.
    messages = [f["message"] for f in by_code(findings, "SYNC102")]
    assert not any("newline.to(" in m for m in messages)
    assert [m.split("`")[1] for m in messages] == ["scale.to(features.device)"]
    _, alone = run_json("check", "--min-confidence", "low", "--no-project-analysis", ".", cwd=tmp_path)
    assert len(by_code(alone, "SYNC102")) == 2


# vLLM's multimodal inputs declared `keep_on_cpu=True` reach the model as host tensors, in
# the file that declares them and in the vision towers of other files that take them.
MM_PROCESSING = """
    from vllm.multimodal.inputs import MultiModalFieldConfig


    def field_config(hf_inputs):
        return dict(
            pixel_values=MultiModalFieldConfig.flat_from_sizes("image", sizes),
            image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
            image_embeds=MultiModalFieldConfig.batched("image"),
        )
"""

MM_MODEL = """
    import torch
    from torch import nn

    from app.processing import field_config


    class VisionTower(nn.Module):  # SupportsMultiModal
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
            sizes = [int(t * h * w) for t, h, w in grid_thw]
            total = grid_thw.prod(-1).sum().item()
            return x.split(sizes)


    class Model(nn.Module):  # SupportsMultiModal
        def parse(self, **kwargs) -> torch.Tensor:
            grid = kwargs.pop("image_grid_thw")
            return int(grid[0, 0])

        def embed(self, image_input: dict, pixel_values: torch.Tensor, image_embeds: torch.Tensor):
            grid_thw = image_input["image_grid_thw"]
            first = int(grid_thw[0, 1])
            return image_embeds.sum().item()
"""


def test_multimodal_fields_kept_on_the_cpu_are_host_tensors_across_files(tmp_path):
    make_package(tmp_path, {"processing.py": MM_PROCESSING, "model.py": MM_MODEL})
    _, findings = run_json("check", "--min-confidence", "medium", "app/model.py", cwd=tmp_path)
    # Only the field left on the device is read on the host.
    assert [(f["code"], f["location"]["row"]) for f in findings] == [("SYNC107", 22)]
    _, alone = run_json("check", "--no-project-analysis", "app/model.py", cwd=tmp_path)
    assert len(alone) > 1  # without the declaration, grid_thw is a tensor like any other


def test_a_field_some_declaration_leaves_on_the_device_stays_a_device_tensor(tmp_path):
    other = MM_PROCESSING.replace("    )\n", "        grid_thw=MultiModalFieldConfig.batched('image'),\n    )\n")
    make_package(tmp_path, {"processing.py": other, "model.py": MM_MODEL})
    _, findings = run_json("check", "app/model.py", cwd=tmp_path)
    rows = {f["location"]["row"] for f in findings}
    assert 10 in rows and not {15, 19} & rows  # `grid_thw` may be on the device; `image_grid_thw` is not


def test_a_field_the_files_own_processor_keeps_on_the_cpu_is_a_host_tensor_there(tmp_path):
    # Another model's processor leaves `grid_thw` on the device; this model imports its own.
    other = MM_PROCESSING.replace("image_grid_thw=MultiModalFieldConfig.batched(\"image\", keep_on_cpu=True)",
                                  "grid_thw=MultiModalFieldConfig.batched('image')")
    make_package(tmp_path, {"processing.py": MM_PROCESSING, "other.py": other,
                            "model.py": MM_MODEL.replace("from app.processing import", "from .processing import")})
    _, findings = run_json("check", "app/model.py", cwd=tmp_path)
    assert not {10, 11} & {f["location"]["row"] for f in findings}  # `grid_thw` is this model's host field
    make_package(tmp_path, {"model.py": MM_MODEL.replace("from app.processing import field_config", "import os")})
    _, findings = run_json("check", "app/model.py", cwd=tmp_path)
    assert 10 in {f["location"]["row"] for f in findings}  # not imported: the project disagrees, a guess again


def test_field_declarations_read_keywords_and_dict_keys():
    from synclint.devices.conventions import field_declarations, host_field_names

    source = b"""
        return {
            "speech_attention_mask": MultiModalFieldConfig.batched("audio", keep_on_cpu=True),
            "input_features": MultiModalFieldConfig.batched("audio"),
        }
        return dict(video_grid_thw=MultiModalFieldConfig.flat_from_sizes("video", sizes(hf_inputs), keep_on_cpu=True))
    """
    kept, left = field_declarations(source)
    assert kept == {"speech_attention_mask", "video_grid_thw", "grid_thw"} and left == {"input_features"}
    # A name another file leaves on the device is a host name only where it is declared so.
    assert host_field_names([(kept, left), (frozenset(), frozenset({"grid_thw"}))]) == {"speech_attention_mask", "video_grid_thw"}
    # Items of a dict built statement by statement, one named by a loop over names.
    kept, left = field_declarations(b"""
        fields["image_grid_thw"] = MultiModalFieldConfig.batched("image", keep_on_cpu=True)
        fields["pixel_values"] = MultiModalFieldConfig.flat_from_sizes("image", sizes)
        for key in ("video_frame_counts", "video_audio_counts"):
            fields[key] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)
        fields["video_input_ids"] = MultiModalFieldConfig.flat_from_sizes("video", sizes, keep_on_cpu=True)
    """)
    # `video_input_ids` does not make the model's own `input_ids` a host tensor.
    assert kept == {"image_grid_thw", "grid_thw", "video_frame_counts", "frame_counts", "video_audio_counts", "audio_counts",
                    "video_input_ids"}
    assert left == {"pixel_values"}


HELPERS = """
    import torch


    def count(n: int) -> int:
        return int(torch.ones(n, device="cuda").sum().item())


    def same(n: int) -> int:
        return n
"""

STEP = """
    import torch

    from app.helpers import count, same


    def step(sizes: list[int]):
        for n in sizes:
            same(n)
"""


def test_an_edited_checked_file_is_rechecked_against_the_facts_of_the_unchanged_others(tmp_path):
    make_package(tmp_path, {"helpers.py": HELPERS, "step.py": STEP})
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert run_json("check", *cache, "app/step.py", cwd=tmp_path)[1] == []
    step = tmp_path / "app" / "step.py"
    step.write_text(step.read_text().replace("same(n)", "count(n)"))  # now a call that syncs, in a loop
    _, edited = run_json("check", *cache, "app/step.py", cwd=tmp_path)
    assert [(f["code"], f["location"]["row"]) for f in edited] == [("SYNC112", 8)]
    assert run_json("check", "--no-cache", "app/step.py", cwd=tmp_path)[1] == edited
    # An edit of a file only indexed is seen too: its facts are not taken from the snapshot.
    helpers = tmp_path / "app" / "helpers.py"
    helpers.write_text(helpers.read_text().replace('int(torch.ones(n, device="cuda").sum().item())', "n"))
    assert run_json("check", *cache, "app/step.py", cwd=tmp_path)[1] == []


def test_a_file_is_looked_at_again_only_for_facts_that_can_change_its_findings(tmp_path):
    # A helper elsewhere that syncs matters to a caller only where the call may repeat (SYNC112,
    # here or through the file's own functions); a helper that returns a GPU tensor only where
    # the result is used; a base class's GPU attribute only where the file names it.
    from pathlib import Path

    from synclint.config import build_settings
    from synclint.engine import analyse
    from synclint.project.facts import ProjectFile
    from synclint.project.index import ProjectIndex

    helpers = (
        "import torch\n\n"
        "def count(x: torch.Tensor) -> int:\n    return int(torch.zeros(3, device='cuda').sum().item())\n\n"
        "def make() -> torch.Tensor:\n    return torch.zeros(3, device='cuda')\n\n"
        "class Base(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.table = torch.zeros(3, device='cuda')\n"
    )
    callers = {
        "once": "from app.helpers import count, make, Base\n\nclass M(Base):\n    def setup(self, x):\n"
                "        count(x)\n        make()\n",
        "loop": "from app.helpers import count\n\ndef run(xs):\n    for x in xs:\n        count(x)\n",
        "through_own": "from app.helpers import count\n\ndef _inner(x):\n    return count(x)\n\n"
                       "def run(xs):\n    for x in xs:\n        _inner(x)\n",
        "value": "from app.helpers import make\n\ndef setup():\n    t = make()\n    return t\n",
        "named": "from app.helpers import Base\n\nclass M(Base):\n    def setup(self):\n        return self.table\n",
    }
    callers = {name: "import torch\n" + text for name, text in callers.items()}  # files without torch go unread
    settings = build_settings({}, Path(tmp_path), None)

    def summary(name, text):
        return analyse(text, f"app/{name}.py", settings, project=ProjectFile(f"app.{name}", "app"))[1]

    summaries = {name: summary(name, text) for name, text in {"helpers": helpers, **callers}.items()}
    index = ProjectIndex(summaries.values())
    views = {name: index.answers_for(summaries[name]) for name in callers}
    assert not views["once"]  # called once, result unused, base attribute never named: no second look
    assert views["loop"].functions["app.helpers.count"].chain is not None
    assert views["through_own"].functions["app.helpers.count"].chain is not None
    assert views["value"].functions["app.helpers.make"].returns.on_device
    assert "table" in views["named"].class_attrs["app.helpers.Base"]


def test_after_a_run_over_the_package_an_edited_file_is_checked_without_reading_the_others(tmp_path, monkeypatch):
    # Pre-commit after an edit: the package state a whole run left answers for the unchanged
    # files (a stat each), so only the edited file is read, and the findings are a full run's.
    import os
    import time
    from pathlib import Path

    import synclint.project.run as project_run
    import synclint.runner as runner
    from synclint.cache.store import Cache
    from synclint.config import SettingsResolver

    make_package(tmp_path, {"helpers.py": HELPERS, "step.py": STEP, "other.py": STEP.replace("step(", "other(")})
    old = time.time() - 60  # not "racily clean": a stat can tell an edit from these files
    for path in (tmp_path / "app").rglob("*.py"):
        os.utime(path, (old, old))
    monkeypatch.chdir(tmp_path)
    cache = Cache(tmp_path / "cache")
    resolver = SettingsResolver(None, {}, tmp_path)

    def run(*paths):
        return runner.run_paths([Path(p) for p in paths], resolver, runner.Mode(), jobs=1, cwd=tmp_path, cache=cache)

    assert [f.code for f in run("app").findings] == ["SYNC107"]  # the helper's own sync
    walks = []
    walk = project_run._package_files
    monkeypatch.setattr(project_run, "_package_files", lambda *args: walks.append(args) or walk(*args))
    step = tmp_path / "app" / "step.py"
    step.write_text(step.read_text().replace("same(n)", "count(n)"))  # now a call that syncs, in a loop
    edited = run("app/step.py")
    assert [(f.code, f.location.row) for f in edited.findings] == [("SYNC112", 8)]
    assert walks == []  # the package was not walked, nor its other files read
    # An edit of a file not checked makes the state stale: the package is indexed again.
    helpers = tmp_path / "app" / "helpers.py"
    helpers.write_text(helpers.read_text().replace('int(torch.ones(n, device="cuda").sum().item())', "n"))
    assert run("app/step.py").findings == []
    assert len(walks) == 1


RUNNER = """
    import torch


    class Runner:
        def step(self, input_ids: torch.Tensor):
            mask = torch.zeros(input_ids.shape[0], dtype=torch.bool, device="cpu", pin_memory=True)
            return self.model.embed_input_ids(input_ids, is_multimodal=mask)
"""

MODEL = """
    import torch
    from torch import nn


    class Model(nn.Module):
        def embed_input_ids(self, input_ids: torch.Tensor, *, is_multimodal: torch.Tensor | None = None):
            if is_multimodal is not None and is_multimodal.any():
                return input_ids
            return super().embed_input_ids(input_ids, is_multimodal=is_multimodal)
"""


def test_a_keyword_only_parameter_every_call_fills_with_a_host_tensor_is_a_host_tensor(tmp_path):
    # vLLM's model runner passes its pinned CPU mask to every model's
    # `embed_input_ids(..., *, is_multimodal=...)` through `self.model`, whose class no
    # annotation names: the calls, by the keyword, tell what the parameter holds.
    make_package(tmp_path, {"runner.py": RUNNER, "model.py": MODEL})
    assert run_json("check", "--no-cache", "app", cwd=tmp_path)[1] == []
    cache = ["--cache-dir", str(tmp_path / "cache")]  # and from what a run keeps: the same
    assert run_json("check", *cache, "app", cwd=tmp_path)[1] == []
    assert run_json("check", *cache, "app", cwd=tmp_path)[1] == []
    assert run_json("check", *cache, "app/model.py", cwd=tmp_path)[1] == []
    gpu = tmp_path / "app" / "gpu_runner.py"
    gpu.write_text(textwrap.dedent(RUNNER).replace('device="cpu", pin_memory=True', 'device="cuda"'))
    found = run_json("check", "--no-cache", "app", cwd=tmp_path)[1]  # one call passes a GPU mask: no longer sure
    assert [(f["code"], f["filename"], f["location"]["row"]) for f in found] == [("SYNC101", "app/model.py", 7)]
    gpu.unlink()
    positional = tmp_path / "app" / "model.py"  # a parameter calls may fill by position says nothing by keyword
    positional.write_text(textwrap.dedent(MODEL).replace("*, is_multimodal", "is_multimodal"))
    assert [f["code"] for f in run_json("check", "--no-cache", "app", cwd=tmp_path)[1]] == ["SYNC101"]


def test_equal_views_have_one_digest_however_their_facts_share_objects():
    # A view made from a just-solved index shares fact objects; the same view from an index kept
    # in the cache has its own copies. The digest keys cache entries: it must not tell them apart,
    # or a warm run misses the entries its first run wrote (23 of vLLM's files did).
    from synclint.devices.lattice import Place, Where
    from synclint.model import Confidence
    from synclint.project.facts import Answers

    def gpu():
        return Where(Place.DEVICE, Confidence.HIGH, "x.cuda() is on the device")

    shared = gpu()
    assert (Answers(device_params={"app.f": {"a": shared, "b": shared}}).digest()
            == Answers(device_params={"app.f": {"a": gpu(), "b": gpu()}}).digest())
    assert Answers(device_params={"app.f": {"a": gpu()}}).digest() != Answers(device_params={"app.f": {"b": gpu()}}).digest()


def test_the_example_of_a_host_keyword_does_not_depend_on_the_order_of_the_files():
    # Another look at one file can add or drop its example; if the index kept the first one in
    # the files' order, every other file's view (which quotes it) would change, and each would
    # be looked at again (vLLM: 27 of 117 third looks).
    from synclint.project.facts import ModuleSummary
    from synclint.project.index import ProjectIndex

    one = ModuleSummary("app.a", "app/a.py", keyword_args={("embed", "mask"): ("`m` in a()", False)})
    other = ModuleSummary("app.b", "app/b.py", keyword_args={("embed", "mask"): ("`cpu_mask` in b()", False)})
    assert (ProjectIndex([one, other]).host_keywords == ProjectIndex([other, one]).host_keywords
            == {("embed", "mask"): "`cpu_mask` in b()"})


def test_verbose_counts_each_phase_and_every_file_is_analysed_at_most_twice(tmp_path):
    # Three files (and the package's __init__.py, which mentions no torch: only the private names it uses are summarised):
    # a helper that returns a GPU tensor, a user of it (a fact from another file:
    # checked a second time, with it) and a file that uses nothing of the others (checked once).
    make_package(tmp_path, {
        "factory.py": """
            import torch


            def make(n):
                return torch.zeros(n, device="cuda")
        """,
        "user.py": """
            import torch

            from app.factory import make


            def count(n):
                return make(n).sum().item()
        """,
        "alone.py": """
            import torch


            def norm(x: torch.Tensor) -> float:
                return x.norm().item()
        """,
    })
    cache = str(tmp_path / "cache")
    cold = run_cli("check", "-v", "-q", "--exit-zero", "--cache-dir", cache, ".", cwd=tmp_path)
    lines = cold.stderr.splitlines()
    assert [line.split(" s  ", 1)[1] for line in lines[:-1]] == [
        "checking; indexing app once for project analysis: 4 files (0 from the cache, 4 analysed)",
        "project analysis: one solve: 4 summaries",
        "project analysis: a second look at the files that use other files' facts: 1 files (0 from the cache,"
        " 1 analysed)",
    ]
    assert lines[-1] == "synclint: 5 analyses; 4 files indexed, 4 checked"
    # Warm: the same files from the cache, with the solved index the cold run kept: nothing analysed.
    warm = run_cli("check", "-v", "-q", "--exit-zero", "--cache-dir", cache, ".", cwd=tmp_path)
    assert warm.stderr.splitlines()[-1] == "synclint: 0 analyses; 4 files indexed, 4 checked"


SCRIPT = """import torch


def summarize(mask):
    return mask.sum().item()


def helper(x):
    if x.any():
        return 1
    return 0


def main(model):
    for _ in range(10):
        m = torch.ones(4, device="cuda") > 0
        print(summarize(m))
        print(helper(m))
        model(m)


if __name__ == "__main__":
    main(torch.nn.Identity())
"""


def test_a_script_outside_any_package_gives_the_same_findings_by_path_and_on_standard_input(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "probe.py").write_text(SCRIPT)
    code, by_path = run_json("check", "--no-cache", "--min-confidence", "low", "tools/probe.py", cwd=tmp_path)
    assert code == 1
    # Its own calls pass `summarize` and `helper` a GPU mask: medium, by path as on stdin.
    assert [(f["code"], f["location"]["row"], f["context"], f["confidence"]) for f in by_path] == [
        ("SYNC107", 5, "step", "medium"), ("SYNC101", 9, "step", "medium"), ("SYNC112", 17, "loop", "low"),
        ("SYNC112", 18, "loop", "low")]
    for cache in (["--no-cache"], []):
        piped = run_cli("check", *cache, "--min-confidence", "low", "--output-format", "json", "-", "--stdin-filename",
                        "tools/probe.py", cwd=tmp_path, stdin=SCRIPT)
        assert json.loads(piped.stdout) == by_path
    unnamed = run_cli("check", "--no-cache", "--min-confidence", "low", "--output-format", "json", "-", cwd=tmp_path,
                      stdin=SCRIPT)
    shape = [(f["code"], f["location"]["row"], f["context"], f["confidence"]) for f in by_path]
    assert [(f["code"], f["location"]["row"], f["context"], f["confidence"]) for f in json.loads(unnamed.stdout)] == shape


def test_a_device_a_base_class_keeps_from_a_parameter_that_defaults_to_the_cpu_is_no_gpu(tmp_path):
    # A metric's base class keeps `self._device` from `device=torch.device("cpu")`, which no call in
    # its file sets; a subclass in another file makes its state there: the CPU, as the code runs unless
    # a user asks, not a GPU by the attribute's name. A device parameter with no default is still a
    # guess of the GPU.
    make_package(tmp_path, {
        "base.py": """
            import torch


            class Metric:
                def __init__(self, device=torch.device("cpu")):
                    self._device = torch.device(device)


            class Meter:
                def __init__(self, device):
                    self._device = torch.device(device)
        """,
        "accuracy.py": """
            import torch

            from app.base import Meter, Metric


            class Accuracy(Metric):
                def reset(self):
                    self._correct = torch.tensor([0, 0], device=self._device)

                def update(self, logits):
                    self._correct += logits.cuda().argmax(-1).to(self._device)


            class Counter(Meter):
                def reset(self):
                    self._seen = torch.tensor([0, 0], device=self._device)
        """,
    })
    _, findings = run_json("check", "--no-cache", "--min-confidence", "low", ".", cwd=tmp_path)
    assert [(f["filename"], f["location"]["row"]) for f in by_code(findings, "SYNC103")] == [("app/accuracy.py", 16)]
    # And a GPU value moved there is a copy to the host, which waits, as a user who keeps the default runs it.
    (copy,) = by_code(findings, "SYNC107")
    assert copy["location"]["row"] == 11
    assert copy["message"].startswith("`logits.cuda().argmax(-1).to(self._device)` copies the values to `self._device`, "
                                      "which is the CPU here: a blocking device-to-host copy")
