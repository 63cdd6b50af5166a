"""How often a line runs, as each finding says it (`context`, and why in `because`), on small
scripts written for these tests: what runs once (a `__main__` block outside its loops, an
`except` block, checkpointing and teardown) is `init` and never above low; what runs once in a
while (a logging guard such as `every_n_steps(...)`, a per-epoch hook) is `interval` and never
high; the same line in a loop stays `loop`.
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
        (36, "loop", "high", 'made by torch.ones(...) on "cuda"'),
    ]


def test_what_runs_once_is_dropped_with_its_context(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.synclint]\nignore-contexts = ["init"]\n', encoding="utf-8")
    assert [row for row, *_ in findings(tmp_path)] == [18, 19, 25, 36]
