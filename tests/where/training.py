"""A training script: the model is put on the GPU, so what flows from it is on the GPU."""

import torch
import torch.nn.functional as F
from torch import nn

device = "cuda"
model = nn.Linear(4, 4)
model  # where: module low (Linear(...) is an nn.Module)
model.to(device)
model  # where: module high (moved by .to(device))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.AdamW(model.parameters())


def train(loader, steps: int):
    for x, y in loader:
        out = model(x)  # where: device medium (model(...) runs a module on the GPU)
        loss = criterion(out, y)  # where: device medium (criterion(...) is a module's output, in a file that puts)
        loss.backward()
        optimizer.step()
        loss.item()  # where: host high
        F.cross_entropy(out, y)  # where: device medium
        model.weight  # where: device medium (model.weight is a module's parameter)
        model.parameters()  # where: device high (moved by .to(device))


def evaluate(net, loader):
    net  # where: module low (net is a model by its name)
    for batch in loader:
        logits = net(batch["input_ids"])  # where: device medium (net(...) is a module's output, in a file that puts)
        batch["input_ids"]  # where: device medium (batch is a batch of a data loader)
        outputs = net(**batch)
        outputs.loss  # where: device medium
    return logits


def collate(batch):
    batch  # where: unknown


def accumulate(total, step_loss):
    step_loss.backward()
    step_loss  # where: device medium (step_loss is used as a tensor (`step_loss.backward()`))
    total  # where: unknown


def tokens(xs: list):
    [t.item() for t in xs]  # where: host high
    ids = torch.cat([model(x) for x in xs])  # where: device medium
    return ids
