"""Everyday PyTorch code that is not vLLM: generation loops, helpers, other accelerators."""

import torch
from torch import nn


def generate(model: nn.Module, idx: torch.Tensor, steps: int):
    model.cuda()
    for _ in range(steps):
        logits = model(idx)  # where: device medium (model(...) runs a module on the GPU)
        next_id = torch.argmax(logits[:, -1], dim=-1, keepdim=True)  # where: device medium
        idx = torch.cat([idx, next_id], dim=1)
    [token.item() for token in idx[0]]  # where: host high
    tokens = [token for token in idx[0]]
    tokens  # where: host high
    return idx


def pad(x, device=None):
    x  # where: unknown
    return torch.zeros(4, device=device)  # where: device medium (a parameter that defaults to None)


def either(x):
    if isinstance(x, torch.Tensor):
        x  # where: device low
    return x


def counts(args):
    args.num_gpus  # where: host medium (args.num_gpus is a setting)
    args.multi_gpu  # where: host medium (args.multi_gpu is a setting)


def batch_of(features: list):
    batch = {"input_ids": torch.stack(features)}
    batch["input_ids"]  # where: device low (torch.stack(...) is a tensor, of unknown device)



class Wrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.base_model = model
        self.base_prepare = self.base_model.prepare_inputs_for_generation

    def prepare(self, *args):
        self.base_prepare(*args)  # where: unknown
        self.base_model(*args)  # where: device medium (self.base_model(...) is a module's output)


def loaded(name: str):
    import importlib

    mod = importlib.import_module(name)
    mod  # where: unknown


def unpacked(x: torch.Tensor):
    first, *rest = x.cuda().split(2)
    rest  # where: host high


def weight_loader(param: nn.Parameter, loaded_weight: torch.Tensor):
    loaded_weight  # where: host-tensor medium (loaded_weight is a checkpoint tensor given to the weight loader)
    param.data  # where: device


def launch(args, cfg):
    args.gpu  # where: host medium (args.gpu is a setting)
    cfg.batch_gpu  # where: host medium
    torch.zeros(2, device=args.device)  # where: device medium


def tokenized(tokenizer, text):
    batch = tokenizer(text, return_tensors="pt")
    batch["input_ids"]  # where: host-tensor high (tokenizer(..., return_tensors="pt") makes CPU tensors)


def evaluated(outputs, cpu_device):
    instances = outputs["instances"].to(cpu_device)
    instances.pred_boxes  # where: host-tensor high (instances.pred_boxes is a field of a value moved to the host)
