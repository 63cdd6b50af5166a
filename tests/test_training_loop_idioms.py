"""Two idioms of training loops, checked as a user runs synclint (`synclint check`, default
confidence), on small scripts written for these tests:

- a device chosen on a condition (`"cuda" if torch.cuda.is_available() else "cpu"`): the GPU on
  one path, so a blocking copy of host data to it may wait, what `.to(dev)` returns is on the GPU
  for every later read, and a copy to it is never a device-to-host copy;
- losses kept in a dict a trainer's own method returns: the values come out where they were put
  (`popitem()`, `values()`, `items()`, `d[k]`), and `loss.backward()` proves a tensor.
"""

from __future__ import annotations

import textwrap

from conftest import run_json


def found(tmp_path, code: str) -> list[tuple[str, int, int, str]]:
    """(code, row, column, confidence) of each finding of `synclint check` on `code`, at the default confidence."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    _, findings = run_json("check", "--no-cache", str(script), cwd=tmp_path)
    return sorted((f["code"], f["location"]["row"], f["location"]["column"], f["confidence"]) for f in findings)


def messages(tmp_path, code: str) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    _, findings = run_json("check", "--no-cache", "--min-confidence", "low", str(script), cwd=tmp_path)
    return [f["message"] for f in findings]


CONDITIONAL_DEVICE = """
    import torch
    from torch import nn


    def fit(net: nn.Module, loader, epochs: int):
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        net.to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        jitter = torch.randn(8)
        for _ in range(epochs):
            for batch in loader:
                inputs = batch["x"].to(dev)
                noise = jitter.to(dev)
                pred = net(inputs + noise)
                loss = (pred - batch["y"].to(dev)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if inputs.isnan().any():
                    continue
                print(f"loss {loss.item():.4f}")
"""


def test_a_device_chosen_on_a_condition_is_the_gpu_on_one_path(tmp_path):
    assert found(tmp_path, CONDITIONAL_DEVICE) == [
        ("SYNC101", 19, 16, "medium"),  # `if inputs.isnan().any():` of what `.to(dev)` returned
        ("SYNC102", 13, 28, "medium"),  # `jitter.to(dev)`: a host tensor copied to what may be the GPU
        ("SYNC107", 21, 27, "medium"),  # `loss.item()`
    ]


def test_a_copy_to_a_device_that_may_be_the_gpu_is_no_device_to_host_copy(tmp_path):
    said = messages(tmp_path, CONDITIONAL_DEVICE)
    assert said and not any("device-to-host" in message or "the CPU here" in message for message in said)


def test_the_copy_says_the_device_is_the_gpu_on_one_path(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(CONDITIONAL_DEVICE).lstrip("\n"), encoding="utf-8")
    _, findings = run_json("check", "--no-cache", str(script), cwd=tmp_path)
    copy = next(f for f in findings if f["code"] == "SYNC102")
    assert "on one path" in copy["because"]


def test_a_module_level_torch_device_of_a_condition(tmp_path):
    code = """
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def train(model, batches, optimizer):
        model.to(device)
        mask = torch.ones(16, dtype=torch.bool)
        for step, (x, y) in enumerate(batches):
            x = x.to(device)
            keep = mask.to(device)
            out = model(x[keep])
            err = torch.nn.functional.cross_entropy(out, y.to(device))
            err.backward()
            optimizer.step()
            running = err.item()
            print(step, running)
    """
    assert found(tmp_path, code) == [
        ("SYNC102", 11, 21, "medium"),  # `mask.to(device)`: the GPU on one path
        ("SYNC107", 16, 19, "medium"),  # `err.item()`
    ]


def test_a_device_chosen_by_a_command_line_flag(tmp_path):
    code = """
    import argparse

    import torch


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--cuda", action="store_true")
        args = parser.parse_args()
        where_to = "cuda" if args.cuda else "cpu"
        model = torch.nn.Linear(4, 2).to(where_to)
        offsets = torch.arange(4)
        for _ in range(100):
            feats = torch.rand(3, 4).to(where_to)
            shift = offsets.to(where_to)
            score = model(feats + shift).sum()
            score.backward()
            if score.isinf():
                break
            print(score.item())
    """
    assert found(tmp_path, code) == [
        ("SYNC101", 18, 12, "medium"),  # `if score.isinf():`
        ("SYNC102", 14, 34, "medium"),  # `torch.rand(3, 4).to(where_to)`
        ("SYNC102", 15, 25, "medium"),  # `offsets.to(where_to)`
        ("SYNC107", 20, 15, "medium"),  # `score.item()`
    ]


def test_a_device_of_each_rank_is_the_gpu_surely(tmp_path):
    code = """
    import torch


    def worker(rank: int, model, data):
        mine = torch.device(f"cuda:{rank}")
        model.to(mine)
        table = torch.arange(10)
        for inputs in data:
            inputs = inputs.to(mine)
            index = table.to(mine)
            logits = model(inputs)[index]
            print(logits.argmax(-1).tolist())
    """
    assert found(tmp_path, code) == [
        ("SYNC102", 10, 23, "high"),  # `table.to(mine)`: a host tensor copied to `cuda:{rank}`
        ("SYNC107", 12, 15, "medium"),  # `.tolist()` of the model's output
    ]


def test_a_loss_popped_from_a_dict_a_trainer_method_returns(tmp_path):
    code = """
    import torch
    from torch import nn


    class LossTrainer:
        def __init__(self, net: nn.Module, optimizer):
            self.net = net.cuda()
            self.optimizer = optimizer

        def compute_losses(self, batch):
            pred = self.net(batch)
            main = pred.square().mean()
            extra = pred.abs().mean() * 0.1
            return {"aux": extra, "loss": main}

        def fit(self, loader):
            for batch in loader:
                loss_dict = self.compute_losses(batch)
                key, loss = loss_dict.popitem()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                print(key, loss.item())
    """
    assert found(tmp_path, code) == [("SYNC107", 23, 24, "medium")]


def test_losses_summed_from_the_values_of_a_dict_and_logged_by_name(tmp_path):
    code = """
    import torch


    class Runner:
        def __init__(self, model):
            self.model = model.cuda()

        def objectives(self, x):
            y = self.model(x)
            return {"mse": (y - x).pow(2).mean(), "l1": (y - x).abs().mean()}

        def run(self, data, opt, log):
            for x in data:
                losses = self.objectives(x)
                total = sum(losses.values())
                total.backward()
                opt.step()
                log(total.item())
                for name in losses:
                    log(name.upper())
                for name, value in losses.items():
                    log(name, value.item())
    """
    assert found(tmp_path, code) == [
        ("SYNC107", 18, 17, "medium"),  # `total.item()`
        ("SYNC107", 22, 27, "medium"),  # `value.item()`: a value half of `items()`
    ]


def test_a_loss_read_by_key_from_a_dict_of_mixed_values(tmp_path):
    code = """
    import torch


    def evaluate_step(model, x):
        out = model(x)
        return {"acc": (out.argmax(-1) == 0).float().mean(), "size": len(x)}


    def loop(model, stream, log):
        model.cuda()
        for x in stream:
            stats = evaluate_step(model, x)
            acc = stats["acc"]
            log(acc.item())
            size = stats["size"]
            log(size * 2)
            if size > 3:
                continue
    """
    assert found(tmp_path, code) == [("SYNC107", 14, 13, "medium")]


def test_backward_proves_a_tensor_over_a_value_of_a_helper_object(tmp_path):
    code = """
    import torch


    class Objective:
        def __call__(self, pred, target):
            return (pred - target).abs().mean()

        def measure(self, pred, target):
            return (pred - target).abs().mean()


    def train(model, data, opt):
        model.cuda()
        objective = Objective()
        for x, y in data:
            loss = objective.measure(model(x), y)
            loss.backward()
            opt.step()
            print(loss.item())
    """
    assert found(tmp_path, code) == [("SYNC107", 19, 15, "medium")]


def test_a_batch_of_a_torch_data_loader_is_host_data_copied_to_the_gpu(tmp_path):
    code = """
    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def run(model, xs, ys, epochs):
        target = torch.device("cuda")
        model.to(target)
        loader = DataLoader(TensorDataset(xs, ys), batch_size=32, shuffle=True)
        for _ in range(epochs):
            for step, (x, y) in enumerate(loader):
                print(x.sum().item())
                x = x.to(target)
                y = y.to(target)
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                print(step, loss.item())
    """
    assert found(tmp_path, code) == [
        ("SYNC102", 12, 19, "medium"),  # `x.to(target)`: a loader's batch, in host memory
        ("SYNC102", 13, 19, "medium"),
        ("SYNC107", 16, 25, "medium"),  # `loss.item()`; `x.sum().item()` on the host batch is no wait
    ]


LOSSES_BY_NAME = """
    import numpy as np
    import torch
    import torch.nn.functional as F


    def update(critic, batches, gamma: float):
        critic_losses, td_errors = [], []
        for obs, target in batches:
            q = torch.cat([critic(obs)], dim=1)
            critic_loss = F.mse_loss(q, target)
            critic_losses.append(critic_loss.item())
            spread = q.std()
            td_errors.append(spread.item())
            host_loss = np.mean(np.abs(np.asarray(target)))
            print(host_loss.item())
        return critic_losses, td_errors
"""


def test_a_tensor_named_as_a_loss_is_on_the_models_device(tmp_path):
    # `critic_loss` and `spread` are tensors of unknown device (this file moves nothing to the GPU):
    # the loss by its name is medium, the other stays low; numpy's `host_loss` is no tensor at all.
    assert found(tmp_path, LOSSES_BY_NAME) == [("SYNC107", 11, 30, "medium")]
    assert "critic_loss is a loss by its name" in " ".join(messages_because(tmp_path, LOSSES_BY_NAME))


def messages_because(tmp_path, code: str) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")
    _, findings = run_json("check", "--no-cache", str(script), cwd=tmp_path)
    return [f["because"] for f in findings]
