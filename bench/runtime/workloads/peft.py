"""peft: adapters on plain torch models (no transformers model): LoRA training, save/load,
merge/unmerge, mixed-adapter batches, LoRA initialisations that decompose weights (PiSSA, OLoRA),
and a few steps of each of many other tuners."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import peft

    return os.path.dirname(os.path.realpath(peft.__file__))


class Net(nn.Module):
    def __init__(self, d=64, h=128, classes=8):
        super().__init__()
        self.emb = nn.Embedding(100, d)
        self.lin1 = nn.Linear(d, h)
        self.norm = nn.LayerNorm(h)
        self.lin2 = nn.Linear(h, h)
        self.conv = nn.Conv1d(h, h, 3, padding=1)
        self.head = nn.Linear(h, classes)

    def forward(self, ids):
        x = self.emb(ids)
        x = F.gelu(self.lin1(x))
        x = self.norm(x)
        x = F.gelu(self.lin2(x))
        x = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.head(x.mean(1))


def _steps(model, ctx, n=3, lr=1e-3):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        ids = torch.randint(0, 100, (8, 12), generator=g).to(ctx.device)
        y = torch.randint(0, 8, (8,), generator=g).to(ctx.device)
        loss = F.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss


@scenario
def lora_train_save_merge(ctx):
    """get_peft_model(LoRA), train, save_pretrained / from_pretrained, second adapter,
    add_weighted_adapter, mixed-adapter batch, merge/unmerge, merge_and_unload, state-dict utilities."""
    from peft import LoraConfig, PeftModel, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

    def run():
        torch.manual_seed(0)
        base = Net().to(ctx.device)
        cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.1, target_modules=["lin1", "lin2", "conv"])
        model = get_peft_model(base, cfg)
        model.print_trainable_parameters()
        model.get_nb_trainable_parameters()
        _steps(model, ctx)
        out = os.path.join(ctx.tmp, "lora")
        model.save_pretrained(out)
        sd = get_peft_model_state_dict(model)
        set_peft_model_state_dict(model, sd)
        model.add_adapter("second", LoraConfig(r=4, lora_alpha=8, target_modules=["lin1", "lin2"]))
        model.set_adapter("second")
        _steps(model, ctx, n=2)
        model.base_model.add_weighted_adapter(["default", "second"], [0.7, 0.3], "mix", combination_type="cat")
        model.eval()
        ids = torch.randint(0, 100, (4, 12), device=ctx.device)
        with torch.no_grad():
            model(ids, adapter_names=["default", "second", "__base__", "default"])
            model.set_adapter("default")
            model.merge_adapter()
            model(ids)
            model.unmerge_adapter()
            with model.disable_adapter():
                model(ids)
        loaded = PeftModel.from_pretrained(Net().to(ctx.device), out)
        merged = loaded.merge_and_unload(safe_merge=True)
        with torch.no_grad():
            merged(ids)
        model.delete_adapter("second")
    return run


@scenario
def lora_variants(ctx):
    """LoRA with DoRA, rsLoRA, PiSSA and OLoRA initialisation, rank patterns, an embedding target and
    modules_to_save; a few training steps and merge_and_unload each."""
    from peft import LoraConfig, get_peft_model

    configs = {
        "dora": LoraConfig(r=8, target_modules=["lin1", "lin2"], use_dora=True),
        "rslora": LoraConfig(r=8, target_modules=["lin1", "lin2"], use_rslora=True, rank_pattern={"lin2": 4}),
        "pissa": LoraConfig(r=8, target_modules=["lin1", "lin2"], init_lora_weights="pissa_niter_4"),
        "olora": LoraConfig(r=8, target_modules=["lin1", "lin2"], init_lora_weights="olora"),
        "gaussian": LoraConfig(r=8, target_modules=["lin1", "lin2", "emb"], init_lora_weights="gaussian",
                               modules_to_save=["head"]),
    }
    failed = {}

    def run():
        for name, cfg in configs.items():
            try:
                torch.manual_seed(0)
                model = get_peft_model(Net().to(ctx.device), cfg)
                _steps(model, ctx)
                model.merge_and_unload()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("variants that failed:", failed)
    return run


@scenario
def other_tuners(ctx):
    """A few steps and a merge of each of IA3, LoHa, LoKr, OFT, VeRA, FourierFT, LN tuning, VB-LoRA,
    HRA, MiSS, C3A, RandLoRA, SHiRA. BOFT is left out: on CUDA it JIT-compiles an extension with ninja first."""
    import peft

    specs = [
        ("IA3Config", dict(target_modules=["lin1", "lin2"], feedforward_modules=["lin2"])),
        ("LoHaConfig", dict(r=4, target_modules=["lin1", "lin2"])),
        ("LoKrConfig", dict(r=4, target_modules=["lin1", "lin2"])),
        ("OFTConfig", dict(r=0, oft_block_size=16, target_modules=["lin1", "lin2"])),
        ("VeraConfig", dict(r=8, target_modules=["lin2"])),
        ("FourierFTConfig", dict(n_frequency=50, target_modules=["lin1", "lin2"])),
        ("LNTuningConfig", dict(target_modules=["norm"])),
        ("VBLoRAConfig", dict(r=4, target_modules=["lin1", "lin2"], vector_length=16, num_vectors=32)),
        ("HRAConfig", dict(r=4, target_modules=["lin1", "lin2"])),
        ("MissConfig", dict(r=16, target_modules=["lin1", "lin2"])),
        ("C3AConfig", dict(block_size=16, target_modules=["lin1", "lin2"])),
        ("RandLoraConfig", dict(r=8, target_modules=["lin1", "lin2"])),
        ("ShiraConfig", dict(r=8, target_modules=["lin1", "lin2"])),
    ]
    failed = {}

    def run():
        for cls_name, kw in specs:
            cls = getattr(peft, cls_name, None)
            if cls is None:
                failed[cls_name] = "not in this peft"
                continue
            try:
                torch.manual_seed(0)
                model = peft.get_peft_model(Net().to(ctx.device), cls(**kw))
                _steps(model, ctx)
                model.eval()
                with torch.no_grad():
                    model(torch.randint(0, 100, (2, 12), device=ctx.device))
                if hasattr(model, "merge_and_unload"):
                    model.merge_and_unload()
            except Exception as exc:  # noqa: BLE001
                failed[cls_name] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("tuners that failed:", failed)
    return run
