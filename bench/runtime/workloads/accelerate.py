"""accelerate: an Accelerator training loop as its examples write it (single process), big-model
inference (dispatch/offload hooks) and the public utilities, on plain torch models."""

import os
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import accelerate

    return os.path.dirname(os.path.realpath(accelerate.__file__))


class DictData(Dataset):
    def __init__(self, n=64, d=32, classes=5, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, d, generator=g)
        self.y = torch.randint(0, classes, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


class MLP(nn.Module):
    def __init__(self, d=32, h=64, classes=5, layers=4):
        super().__init__()
        self.inp = nn.Linear(d, h)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(h), nn.Linear(h, h), nn.GELU()) for _ in range(layers)])
        self.head = nn.Linear(h, classes)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x)


def _reset_state():
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    PartialState._reset_state()


def _train_loop(ctx, mixed_precision, tag):
    from accelerate import Accelerator
    from accelerate.utils import ProjectConfiguration, set_seed

    calls = [0]

    def run():
        calls[0] += 1
        _reset_state()
        out = Path(ctx.tmp) / f"{tag}{calls[0]}"
        accelerator = Accelerator(
            mixed_precision=mixed_precision if ctx.cuda else "no", gradient_accumulation_steps=2,
            log_with="tensorboard", cpu=not ctx.cuda,
            project_config=ProjectConfiguration(project_dir=str(out), automatic_checkpoint_naming=True,
                                                total_limit=2))
        set_seed(0)
        accelerator.init_trackers("rt", config={"lr": 1e-3, "bs": 8})
        model = MLP()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
        train_dl = DataLoader(DictData(64), batch_size=8, shuffle=True)
        eval_dl = DataLoader(DictData(20, seed=1), batch_size=8)  # 20 % 8 != 0: gather_for_metrics drops padding
        model, opt, train_dl, eval_dl, sched = accelerator.prepare(model, opt, train_dl, eval_dl, sched)
        accelerator.register_for_checkpointing(sched)
        model.train()
        for step, batch in enumerate(train_dl):
            with accelerator.accumulate(model):
                with accelerator.autocast():
                    logits = model(batch["x"])
                    loss = F.cross_entropy(logits, batch["labels"])
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    if accelerator.mixed_precision != "fp16":  # a second unscale_ in one step would raise
                        accelerator.clip_grad_value_(model.parameters(), 5.0)
                opt.step()
                sched.step()
                opt.zero_grad()
                if accelerator.optimizer_step_was_skipped:
                    accelerator.print("skipped")
            avg = accelerator.reduce(loss.detach(), reduction="mean")
            accelerator.log({"train_loss": avg, "lr": sched.get_last_lr()[0]}, step=step)
            if step % 4 == 0:
                accelerator.print(f"step {step} loss {loss.item():.4f}")
        model.eval()
        correct, total, losses = 0, 0, []
        for batch in eval_dl:
            with torch.no_grad():
                logits = model(batch["x"])
            losses.append(accelerator.gather_for_metrics(F.cross_entropy(logits, batch["labels"]).repeat(len(logits))))
            preds, refs = accelerator.gather_for_metrics((logits.argmax(-1), batch["labels"]))
            correct += (preds == refs).sum().item()
            total += refs.numel()
        eval_loss = torch.cat(losses).mean()
        accelerator.log({"eval_loss": eval_loss, "acc": correct / total}, step=100)
        accelerator.print(f"eval loss {eval_loss:.4f} acc {correct / total:.3f}")
        accelerator.wait_for_everyone()
        accelerator.save_state()
        accelerator.load_state()
        for batch in accelerator.skip_first_batches(train_dl, 6):
            model(batch["x"])
        state = accelerator.get_state_dict(model)
        accelerator.save_model(model, out / "model", safe_serialization=True)
        accelerator.save(state, out / "state.pt")
        accelerator.unwrap_model(model)
        accelerator.end_training()
        accelerator.free_memory()
    return run


@scenario
def train_bf16(ctx):
    """prepare, accumulate, autocast, backward, clip_grad_norm_/value_, reduce, log(tensor) to TensorBoard,
    gather_for_metrics with an uneven last batch, save_state/load_state, skip_first_batches, save_model."""
    return _train_loop(ctx, "bf16", "bf16")


@scenario
def train_fp16(ctx):
    """The same loop with mixed_precision='fp16' (GradScaler; optimizer_step_was_skipped)."""
    return _train_loop(ctx, "fp16", "fp16")


@scenario
def big_model_inference(ctx):
    """init_empty_weights + load_checkpoint_and_dispatch with a GPU/CPU/disk device map, cpu_offload,
    infer_auto_device_map, compute_module_sizes."""
    from accelerate import cpu_offload, disk_offload, init_empty_weights, load_checkpoint_and_dispatch
    from accelerate.utils import compute_module_sizes, get_balanced_memory, infer_auto_device_map
    from safetensors.torch import save_file

    torch.manual_seed(0)
    ref = MLP(layers=6)
    ckpt = Path(ctx.tmp) / "mlp.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(ckpt))
    x = torch.randn(4, 32)
    dev = 0 if ctx.cuda else "cpu"

    def run():
        with init_empty_weights():
            model = MLP(layers=6)
        sizes = compute_module_sizes(model)
        if ctx.cuda:
            get_balanced_memory(model, max_memory={0: sizes[""] // 2, "cpu": 10**9})
        device_map = infer_auto_device_map(model, max_memory={dev: sizes[""] // 2, "cpu": 10**9} if ctx.cuda else None)
        model = load_checkpoint_and_dispatch(model, str(ckpt), device_map=device_map,
                                             offload_folder=str(Path(ctx.tmp) / "offload"))
        with torch.no_grad():
            for _ in range(3):
                model(x.to(dev if ctx.cuda else "cpu"))
        m2 = MLP(layers=6)
        m2.load_state_dict(ref.state_dict())
        cpu_offload(m2, execution_device=torch.device("cuda" if ctx.cuda else "cpu"))
        with torch.no_grad():
            m2(x)
        m3 = MLP(layers=2)
        disk_offload(m3, str(Path(ctx.tmp) / "disk"), execution_device=torch.device("cuda" if ctx.cuda else "cpu"))
        with torch.no_grad():
            m3(x)
    return run


@scenario
def utils_operations(ctx):
    """accelerate.utils operations on nested batches: send_to_device, find_batch_size, pad_across_processes,
    gather/gather_object/reduce/broadcast, concatenate, listify, convert_to_fp32, find_device,
    find_executable_batch_size, release_memory, get_max_memory, set_seed."""
    from accelerate import Accelerator
    from accelerate.utils import (broadcast, concatenate, convert_outputs_to_fp32, find_batch_size, find_device,
                                  find_executable_batch_size, gather, gather_object, get_max_memory, listify,
                                  pad_across_processes, reduce, release_memory, send_to_device, set_seed)
    from accelerate.utils.operations import convert_to_fp32, pad_input_tensors

    _reset_state()
    accelerator = Accelerator(cpu=not ctx.cuda)
    dev = accelerator.device

    def run():
        set_seed(1)
        batch = {"input_ids": torch.randint(0, 100, (4, 7)), "mask": torch.ones(4, 7, dtype=torch.bool),
                 "meta": {"len": torch.tensor([7, 7, 5, 3])}, "names": ["a", "b", "c", "d"],
                 "pair": (torch.randn(4, 3), torch.randn(4, 3, dtype=torch.float16))}
        b1 = send_to_device(batch, dev)
        b2 = send_to_device(batch, dev, non_blocking=True, skip_keys="names")
        find_batch_size(b1)
        find_device(b2)
        padded = pad_across_processes(b1["input_ids"], dim=1, pad_index=0)
        accelerator.pad_across_processes(b1["pair"], dim=0, pad_first=True)
        pad_input_tensors(b1["input_ids"], batch_size=4, num_processes=1)
        gather(padded)
        accelerator.gather(b1["meta"])
        gather_object([{"x": 1}])
        reduce(b1["pair"][0], reduction="sum")
        broadcast(b1["input_ids"])
        concatenate([b1["input_ids"], b2["input_ids"]])
        listify({"loss": b1["pair"][0].sum(), "vals": b1["meta"]["len"]})
        convert_to_fp32(b1["pair"])
        fwd = convert_outputs_to_fp32(lambda t: t.half() * 2)
        fwd(b1["pair"][0])
        get_max_memory()

        @find_executable_batch_size(starting_batch_size=8)
        def probe(batch_size):
            return torch.zeros(batch_size, 16, device=dev).sum()

        probe()
        a, b = torch.randn(64, 64, device=dev), torch.randn(64, 64, device=dev)
        release_memory(a, b)
    return run


@scenario
def dataloaders_and_triggers(ctx):
    """DataLoaderConfiguration variants (split_batches, non_blocking, seedable sampler, uneven batches),
    an IterableDataset, gather_for_metrics(use_gather_object), no_sync/accumulate(sync_each_batch),
    set_trigger/check_trigger early stopping, split_between_processes, LocalSGD."""
    from accelerate import Accelerator, DataLoaderConfiguration
    from accelerate.local_sgd import LocalSGD
    from accelerate.utils import GradientAccumulationPlugin

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            g = torch.Generator().manual_seed(0)
            for _ in range(20):
                yield {"x": torch.randn(32, generator=g), "labels": torch.randint(0, 5, (), generator=g)}

    def run():
        for dl_cfg in (DataLoaderConfiguration(split_batches=True, non_blocking=True, use_seedable_sampler=True),
                       DataLoaderConfiguration(even_batches=False, non_blocking=False)):
            _reset_state()
            acc = Accelerator(cpu=not ctx.cuda, dataloader_config=dl_cfg,
                              gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=2, sync_each_batch=True))
            model = MLP()
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            dl = DataLoader(DictData(36), batch_size=8, shuffle=True, pin_memory=ctx.cuda)
            sdl = DataLoader(Stream(), batch_size=6)
            model, opt, dl, sdl = acc.prepare(model, opt, dl, sdl)
            with LocalSGD(accelerator=acc, model=model, local_sgd_steps=2, enabled=True) as local_sgd:
                for step, batch in enumerate(dl):
                    with acc.accumulate(model):
                        loss = F.cross_entropy(model(batch["x"]), batch["labels"])
                        acc.backward(loss)
                        opt.step()
                        opt.zero_grad()
                    local_sgd.step()
                    if loss < 0.5:  # early stopping through the trigger, as the docs show
                        acc.set_trigger()
                    if acc.check_trigger():
                        break
            with acc.no_sync(model):
                for batch in sdl:
                    loss = F.cross_entropy(model(batch["x"]), batch["labels"])
                    acc.backward(loss)
            opt.zero_grad()
            model.eval()
            outs = []
            for batch in sdl:
                with torch.no_grad():
                    preds = model(batch["x"]).argmax(-1)
                outs += acc.gather_for_metrics(preds.tolist(), use_gather_object=True)
            with acc.split_between_processes(list(range(10)), apply_padding=True) as part:
                len(part)
            acc.end_training()
    return run
