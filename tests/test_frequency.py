"""How often a line runs, as each finding says it (`context`, and why in `because`), on small
scripts written for these tests: what runs once (a `__main__` block outside its loops, an
`except` block, checkpointing and teardown) is `init` and never above low; what runs once in a
while (a logging guard such as `every_n_steps(...)`, a per-epoch hook) is `interval` and never
high; the same line in a training loop stays `loop`, and in a loop of code that runs once (a `__main__`
block's loop that runs no model) runs once.
"""

from __future__ import annotations

import textwrap

from conftest import run_json

SCRIPT = '''
import torch


def every_n_steps(step, n):
    return step % n == 0


def train(model, loader, opt):
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        try:
            opt.step()
        except RuntimeError:
            print(f"step failed at loss {loss.item()}")
            raise
        if every_n_steps(step, 100):
            print(f"loss {loss.item():.4f}")
        print(loss.item())


class Trainer:
    def on_train_epoch_end(self):
        t = torch.ones(3, device="cuda")
        print(t.sum().item())

    def save_checkpoint(self):
        t = torch.ones(3, device="cuda")
        return t.sum().item()


if __name__ == "__main__":
    t = torch.ones(3, device="cuda")
    print(t.sum().item())
    for i in range(10):
        print(t.sum().item())
'''


def findings(tmp_path) -> list[tuple[int, str, str, str]]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT).lstrip("\n"), encoding="utf-8")
    _, found = run_json("check", "--no-cache", "--min-confidence", "low", "--select", "SYNC107", str(script),
                        cwd=tmp_path)
    return sorted((f["location"]["row"], f["context"], f["confidence"], f["because"]) for f in found)


def test_each_finding_says_how_often_its_line_runs(tmp_path):
    assert findings(tmp_path) == [
        (15, "init", "low", "model(...) is a module's output, in a file that puts its model or data on the GPU "
                            "(`x.cuda()`); in an `except` block, which runs only when an error is caught"),
        (18, "interval", "medium", "model(...) is a module's output, in a file that puts its model or data on the GPU "
                                   "(`x.cuda()`); only when `every_n_steps(step, 100)` holds"),
        (19, "loop", "medium", "model(...) is a module's output, in a file that puts its model or data on the GPU "
                               "(`x.cuda()`)"),
        (25, "interval", "medium", 'made by torch.ones(...) on "cuda"; once per epoch'),
        (29, "init", "low", 'made by torch.ones(...) on "cuda"; in set-up code, which runs once'),
        (34, "init", "low", 'made by torch.ones(...) on "cuda"; in an `if __name__ == "__main__":` block, which runs once'),
        (36, "init", "low", 'made by torch.ones(...) on "cuda"; in a loop at the top level of a module that runs no '
                            'model: once, when the module runs'),
    ]


def test_what_runs_once_is_dropped_with_its_context(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore-contexts = ["init"]\n', encoding="utf-8")
    assert [row for row, *_ in findings(tmp_path)] == [18, 19, 25]


FIRST_TIME = '''
import torch


class Warmup(torch.nn.Module):  # (a module lives as long as the model: what it keeps, it keeps once)
    def step(self, model, batch):
        out = model(batch.cuda(non_blocking=True))
        if not self._activated:
            print(out.sum().item())
            self._activated = True
        if self._table is None:
            self._table = out.max().item()
        return out.sum().item()


def scale(x, out=None):
    if out is None:
        out = torch.ones(3, device="cuda").sum().item()
    return x * out
'''


def test_a_block_that_keeps_what_it_computes_runs_the_first_time_only(tmp_path):
    script = tmp_path / "warmup.py"
    script.write_text(FIRST_TIME.lstrip("\n"), encoding="utf-8")
    _, found = run_json("check", "--no-cache", "--min-confidence", "low", str(script), cwd=tmp_path)
    assert sorted((f["location"]["row"], f["context"], f["confidence"]) for f in found) == [
        (8, "init", "low"),  # under `if not self._activated:`, which sets it
        (11, "init", "low"),  # under `if self._table is None:`, which fills it
        (12, "step", "medium"),
        (17, "code", "high"),  # `out` is a local: `if out is None:` runs on every call that passes none
    ]
    assert found[0]["because"].endswith("under `if not self._activated:`, whose block runs the first time only")


def test_what_a_plain_object_keeps_in_self_is_kept_per_object(tmp_path):
    # A scheduler is reset for each generation: its first-call block runs once per request, not once.
    script = tmp_path / "scheduler.py"
    script.write_text(
        "import torch\n\n\nclass Scheduler:\n    def step(self, t):\n"
        "        if self._step_index is None:\n"
        "            self._step_index = torch.ones(3, device='cuda').argmax().item()\n"
        "        return self._step_index\n",
        encoding="utf-8",
    )
    _, found = run_json("check", "--no-cache", str(script), cwd=tmp_path)
    assert [(f["location"]["row"], f["context"], f["confidence"]) for f in found] == [(7, "step", "high")]


FLAG = '''
import torch


def train(model, loader, opt, log_every: int):
    model.cuda()
    for step, batch in enumerate(loader):
        loss = model(batch).sum()
        is_log = step % log_every == 0
        if is_log:
            print(loss.item())
        if is_log and step > 0:
            print(loss.max().item())
        if step > 0:
            print(loss.min().item())
'''


def test_a_flag_set_to_a_periodic_test_guards_an_interval(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(FLAG).lstrip("\n"), encoding="utf-8")
    _, found = run_json("check", "--no-cache", "--min-confidence", "low", "--select", "SYNC107", str(script),
                        cwd=tmp_path)
    assert sorted((f["location"]["row"], f["context"]) for f in found) == [(10, "interval"), (12, "interval"),
                                                                        (14, "loop")]
    assert "once every `log_every` steps" in found[0]["because"]
