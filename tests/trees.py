"""The small package trees of the differential (bench/differential.py, tests/test_differential.py).

The tree tests/test_determinism.py builds, and frozen copies of the trees tests/test_project.py
builds: a differential compares the findings of two commits of synclint on the same bytes, so
the trees must not change with the tests that inspired them. Stdlib only: the bench script loads this
file by its path.

`build(label, parent)` writes one tree under `parent` and returns its package folder; every
folder of a package gets an `__init__.py`, as `make_package` of tests/test_project.py does.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

# tests/test_determinism.py builds this one: a pipeline whose own method's parameter is on the GPU only because
# its caller in the same file passes one (issue 30), helpers and a tracker in other modules, and
# 17 plain files that use them, enough for a pool of workers to share them out.
PIPELINE = '''\
from typing import Optional

import torch

from pkg.helpers import grad_norm
from pkg.state import Tracker


class Pipeline(Tracker):
    def prepare_latents(self, shape, device, latents=None):
        if latents is None:
            latents = torch.randn(shape, device=device)
        else:
            latents = latents.to(device)
            if latents.abs().max() > 1e4:
                latents = latents / 2
        return latents * 2

    def __call__(self, prompt, latents: Optional[torch.Tensor] = None):
        latents = self.prepare_latents((1, 4), "cuda", latents)
        for t in range(10):
            latents = self.unet(latents)
            norm = grad_norm(latents)
            if self.best_loss > 0:
                print(norm)
        return latents
'''

HELPERS = '''\
import torch


def grad_norm(x):
    total = torch.linalg.vector_norm(x)
    return total.item()


def clip(x, limit):
    return x.clamp(max=limit)
'''

STATE = '''\
import torch


class Tracker:
    def __init__(self):
        self.losses = torch.zeros(8, device="cuda")

    @property
    def best_loss(self):
        return self.losses.min().item()
'''

USER = '''\
import torch

from pkg.helpers import clip, grad_norm
from pkg.state import Tracker


class Trainer{n}(Tracker):
    def step(self, batch: torch.Tensor):
        for x in batch:
            y = clip(x, {n})
            if grad_norm(y) > {n}:
                return self.best_loss
        return None
'''

USERS = 17


def _determinism() -> dict[str, str]:
    files = {"pipeline.py": PIPELINE, "helpers.py": HELPERS, "state.py": STATE}
    files.update({f"user{n}.py": USER.format(n=n) for n in range(USERS)})
    return files


# tests/test_project.py: each test's package `app/`, by what it shows.
PROJECT: dict[str, dict[str, str]] = {
    "properties": {
        "metadata.py": '''\
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
''',
        "backends/readers.py": '''\
import torch

from app.metadata import AttnMetadata


def max_len(meta: AttnMetadata) -> int:
    return int(meta.seq_lens_cpu.max())


def computed(meta: AttnMetadata):
    return meta.num_computed_tokens_cpu


def unannotated(meta):
    return meta.seq_lens_cpu
''',
    },
    "chain": {
        "engine.py": '''\
import torch

from app.prepare import prepare


class Engine:
    def step(self, batch):
        return prepare(batch)

    def run(self, batches):
        for batch in batches:
            self.step(batch)
''',
        "prepare.py": '''\
import torch

from .helpers import lengths


def prepare(batch):
    return lengths(batch) + 1
''',
        "helpers.py": '''\
import torch


def lengths(batch) -> int:
    return _count(batch)


def _count(batch) -> int:
    counts = torch.zeros(4, device="cuda") + batch
    return int(counts.sum().item())
''',
    },
    "chain-quoted": {
        "helpers.py": '''\
import torch

def staged(values):
    host = torch.ones(4)
    return host.to("cuda")
''',
        "engine.py": '''\
import torch

from app.helpers import staged

def train(model, loader):
    for batch in loader:
        loss = model(staged(batch))
        loss.backward()
''',
    },
    "cached": {
        "attention.py": '''\
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
''',
    },
    "recursive": {
        "walk.py": '''\
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
''',
        "loop.py": '''\
import torch

from app.walk import down, up


def drive(ts):
    for t in ts:
        down(t, 3)
''',
    },
    "base-buffers": {
        "base.py": '''\
import torch


class Sampler:
    def __init__(self, device):
        self.penalties = torch.zeros(16, device=device)
''',
        "greedy.py": '''\
import torch

from app.base import Sampler


class Greedy(Sampler):
    def sample(self, logits):
        if self.penalties.any():
            logits = logits - self.penalties
        return logits.argmax(-1)
''',
    },
    "returned": {
        "buffers.py": '''\
import torch


def make_mask(n, device):
    return torch.ones(n, dtype=torch.bool, device=device)


def forwarded(n, device):
    return make_mask(n, device)
''',
        "use.py": '''\
import torch

from app import buffers


def check(n, device):
    mask = buffers.forwarded(n, device)
    if mask.all():
        return 1
    return 0
''',
    },
    "relative": {
        "a.py": '''\
import torch
from .... import nothing
from . import b
''',
        "b.py": '''\
import torch
''',
    },
    "caller-params": {
        "utils.py": '''\
import torch


def cast_overflow_tensors(tensors: torch.Tensor, offset: float = 1000) -> torch.Tensor:
    if tensors.isinf().any():
        clamp = torch.finfo(tensors.dtype).max - offset
        tensors = torch.clamp(tensors, min=-clamp, max=clamp)
    return tensors


def count(mask: torch.Tensor) -> int:
    return int(mask.sum().item())
''',
        "models/layer.py": '''\
import torch
from torch import nn

from ..utils import cast_overflow_tensors, count


class Layer(nn.Module):
    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return cast_overflow_tensors(hidden_states * 2)


def preprocess(mask):
    return count(mask)
''',
    },
    "moved-params": {
        "helpers.py": '''\
import torch


def add_newline(features: torch.Tensor, newline: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return torch.cat([features, newline.to(features.device), scale.to(features.device)])
''',
        "model.py": '''\
import torch
from torch import nn

from .helpers import add_newline


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.newline = nn.Parameter(torch.zeros(8))

    def forward(self, hidden_states: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return add_newline(hidden_states, self.newline, scale.cpu())
''',
    },
    "multimodal": {
        "processing.py": '''\
from vllm.multimodal.inputs import MultiModalFieldConfig


def field_config(hf_inputs):
    return dict(
        pixel_values=MultiModalFieldConfig.flat_from_sizes("image", sizes),
        image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
        image_embeds=MultiModalFieldConfig.batched("image"),
    )
''',
        "model.py": '''\
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
''',
    },
    "helpers-step": {
        "helpers.py": '''\
import torch


def count(n: int) -> int:
    return int(torch.ones(n, device="cuda").sum().item())


def same(n: int) -> int:
    return n
''',
        "step.py": '''\
import torch

from app.helpers import count, same


def step(sizes: list[int]):
    for n in sizes:
        same(n)
''',
        "other.py": '''\
import torch

from app.helpers import count, same


def other(sizes: list[int]):
    for n in sizes:
        same(n)
''',
    },
    "host-keyword": {
        "runner.py": '''\
import torch


class Runner:
    def step(self, input_ids: torch.Tensor):
        mask = torch.zeros(input_ids.shape[0], dtype=torch.bool, device="cpu", pin_memory=True)
        return self.model.embed_input_ids(input_ids, is_multimodal=mask)
''',
        "model.py": '''\
import torch
from torch import nn


class Model(nn.Module):
    def embed_input_ids(self, input_ids: torch.Tensor, *, is_multimodal: torch.Tensor | None = None):
        if is_multimodal is not None and is_multimodal.any():
            return input_ids
        return super().embed_input_ids(input_ids, is_multimodal=is_multimodal)
''',
    },
}

# label -> (package folder name, files relative to the package folder)
TREES: dict[str, tuple[str, dict[str, str]]] = {
    "determinism": ("pkg", _determinism()),
    **{f"project/{name}": ("app", files) for name, files in PROJECT.items()},
}


def build(label: str, parent: Path) -> Path:
    """Write the tree `label` under `parent` (which must not hold it yet); its package folder."""
    package, files = TREES[label]
    top = parent / package
    for name, text in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    for folder in [top, *(p for p in top.rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return top
