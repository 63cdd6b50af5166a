"""timm: training and evaluation the way its train.py / validate.py do it, with timm's own
loaders (prefetcher), mixup/cutmix, losses, optimizers, schedulers, AMP scaler, EMA, metrics and
checkpoint saver, on small random-weight models and synthetic images (no downloads)."""

import os

import numpy as np
import torch
from PIL import Image

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import timm

    return os.path.dirname(os.path.realpath(timm.__file__))


class SyntheticImages(torch.utils.data.Dataset):
    """A folder-like dataset of random RGB images; timm's create_loader sets ``transform``."""

    def __init__(self, n=32, size=72, classes=10, seed=0):
        rng = np.random.default_rng(seed)
        self.imgs = [Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)) for _ in range(n)]
        self.targets = [int(t) for t in rng.integers(0, classes, n)]
        self.transform = None

    def __len__(self):
        return len(self.imgs)

    def __getitem__(self, i):
        img = self.imgs[i]
        if self.transform is not None:
            img = self.transform(img)
        return img, self.targets[i]


def _validate(model, loader, loss_fn, ctx, amp_dtype, channels_last=False, prefetcher=True):
    """timm validate(): AverageMeter, accuracy(topk=(1, 5)), loss.item() per batch."""
    from timm.utils import AverageMeter, accuracy

    losses_m, top1_m, top5_m = AverageMeter(), AverageMeter(), AverageMeter()
    model.eval()
    with torch.no_grad():
        for inp, target in loader:
            if not prefetcher:
                inp, target = inp.to(ctx.device), target.to(ctx.device)
            if channels_last:
                inp = inp.contiguous(memory_format=torch.channels_last)
            with torch.autocast(ctx.device.type, dtype=amp_dtype, enabled=ctx.cuda):
                out = model(inp)
                loss = loss_fn(out, target)
            acc1, acc5 = accuracy(out, target, topk=(1, 5))
            losses_m.update(loss.item(), inp.size(0))
            top1_m.update(acc1.item(), out.size(0))
            top5_m.update(acc5.item(), out.size(0))
    return {"loss": losses_m.avg, "top1": top1_m.avg, "top5": top5_m.avg}


def _train(ctx, *, model_name, model_kw, opt, opt_kw, sched, amp_dtype, mixup_kw, loss, prefetcher, clip_mode,
           channels_last=False, grad_ckpt=False, ema=True, epochs=2, img=64, bs=8):
    import timm
    from timm.data import FastCollateMixup, Mixup, create_loader, resolve_data_config
    from timm.loss import BinaryCrossEntropy, LabelSmoothingCrossEntropy, SoftTargetCrossEntropy
    from timm.optim import create_optimizer_v2
    from timm.scheduler import create_scheduler_v2
    from timm.utils import (AverageMeter, CheckpointSaver, ModelEmaV3, NativeScaler, dispatch_clip_grad,
                            get_outdir, random_seed, update_summary)

    calls = [0]

    def run():
        calls[0] += 1
        random_seed(0)
        model = timm.create_model(model_name, pretrained=False, num_classes=10, **model_kw)
        if grad_ckpt:
            model.set_grad_checkpointing(True)
        model.to(ctx.device)
        if channels_last:
            model.to(memory_format=torch.channels_last)
        data_config = resolve_data_config({"input_size": (3, img, img)}, model=model)
        optimizer = create_optimizer_v2(model, opt=opt, lr=1e-3, weight_decay=0.05, **opt_kw)
        use_scaler = amp_dtype == torch.float16  # on a CPU dry run the scaler runs too (fp32 grads)
        loss_scaler = NativeScaler(device=ctx.device.type) if use_scaler else None
        model_ema = ModelEmaV3(model, decay=0.99, use_warmup=True) if ema else None
        collate_fn, mixup_fn = None, None
        if mixup_kw:
            if prefetcher:
                collate_fn = FastCollateMixup(**mixup_kw, num_classes=10)
            else:
                mixup_fn = Mixup(**mixup_kw, num_classes=10)
        common = dict(input_size=data_config["input_size"], batch_size=bs, use_prefetcher=prefetcher,
                      mean=data_config["mean"], std=data_config["std"], num_workers=0, device=ctx.device,
                      persistent_workers=False, interpolation="bilinear")
        train_loader = create_loader(SyntheticImages(32), is_training=True, re_prob=0.25 if prefetcher else 0.,
                                     re_mode="pixel", collate_fn=collate_fn, **common)
        eval_loader = create_loader(SyntheticImages(20, seed=1), is_training=False, crop_pct=0.875, **common)
        updates_per_epoch = len(train_loader)
        scheduler, num_epochs = create_scheduler_v2(optimizer, sched=sched, num_epochs=epochs, warmup_epochs=1,
                                                    min_lr=1e-6, updates_per_epoch=updates_per_epoch,
                                                    step_on_epochs=True, patience_epochs=1)
        if mixup_kw:
            train_loss_fn = BinaryCrossEntropy(target_threshold=0.2) if loss == "bce" else SoftTargetCrossEntropy()
        else:
            train_loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
        eval_loss_fn = torch.nn.CrossEntropyLoss().to(ctx.device)
        out_dir = get_outdir(ctx.tmp, f"{model_name}-{calls[0]}")
        saver = CheckpointSaver(model=model, optimizer=optimizer, model_ema=model_ema, amp_scaler=loss_scaler,
                                checkpoint_dir=out_dir, recovery_dir=out_dir, decreasing=False, max_history=2)
        num_updates = 0
        for epoch in range(num_epochs):
            model.train()
            losses_m = AverageMeter()
            for inp, target in train_loader:
                if not prefetcher:
                    inp, target = inp.to(ctx.device), target.to(ctx.device)
                    if mixup_fn is not None:
                        inp, target = mixup_fn(inp, target)
                if channels_last:
                    inp = inp.contiguous(memory_format=torch.channels_last)
                with torch.autocast(ctx.device.type, dtype=amp_dtype, enabled=ctx.cuda):
                    output = model(inp)
                    loss_v = train_loss_fn(output, target)
                losses_m.update(loss_v.item(), inp.size(0))
                optimizer.zero_grad()
                if loss_scaler is not None:
                    loss_scaler(loss_v, optimizer, clip_grad=1.0, clip_mode=clip_mode,
                                parameters=model.parameters(), create_graph=False)
                else:
                    loss_v.backward()
                    dispatch_clip_grad(model.parameters(), value=1.0 if clip_mode != "agc" else 0.05, mode=clip_mode)
                    optimizer.step()
                if model_ema is not None:
                    model_ema.update(model, step=num_updates)
                num_updates += 1
                scheduler.step_update(num_updates=num_updates, metric=losses_m.avg)
            train_metrics = {"loss": losses_m.avg}
            eval_metrics = _validate(model, eval_loader, eval_loss_fn, ctx, amp_dtype, channels_last, prefetcher)
            if model_ema is not None:
                _validate(model_ema, eval_loader, eval_loss_fn, ctx, amp_dtype, channels_last, prefetcher)
            lrs = [pg["lr"] for pg in optimizer.param_groups]
            update_summary(epoch, train_metrics, eval_metrics, filename=os.path.join(out_dir, "summary.csv"),
                           lr=sum(lrs) / len(lrs), write_header=epoch == 0)
            saver.save_checkpoint(epoch, metric=eval_metrics["top1"])
            scheduler.step(epoch + 1, eval_metrics["top1"])
    return run


@scenario
def train_vit_mixup(ctx):
    """ViT-Tiny (64 px), grad checkpointing, no prefetcher + Mixup/CutMix on the GPU, SoftTargetCrossEntropy,
    AdamW with layer decay, cosine + warmup, fp16 autocast with NativeScaler (norm clipping), ModelEmaV3,
    accuracy/AverageMeter, CheckpointSaver, update_summary."""
    return _train(ctx, model_name="vit_tiny_patch16_224", model_kw={"img_size": 64, "drop_path_rate": 0.1},
                  opt="adamw", opt_kw={"layer_decay": 0.75}, sched="cosine", amp_dtype=torch.float16,
                  mixup_kw={"mixup_alpha": 0.8, "cutmix_alpha": 1.0, "label_smoothing": 0.1},
                  loss="soft", prefetcher=False, clip_mode="norm", grad_ckpt=True)


@scenario
def train_resnet_prefetch(ctx):
    """ResNet-18, channels_last, PrefetchLoader (GPU normalisation, random erasing), FastCollateMixup,
    BinaryCrossEntropy, SGD (nesterov), step schedule, bf16 autocast, AGC clipping, ModelEmaV3."""
    return _train(ctx, model_name="resnet18", model_kw={}, opt="sgd", opt_kw={"momentum": 0.9}, sched="step",
                  amp_dtype=torch.bfloat16, mixup_kw={"mixup_alpha": 0.2, "cutmix_alpha": 1.0, "label_smoothing": 0.1},
                  loss="bce", prefetcher=True, clip_mode="agc", channels_last=True)


@scenario
def train_efficientnet(ctx):
    """EfficientNet-B0 (drop path), PrefetchLoader, LabelSmoothingCrossEntropy, LAMB, plateau schedule on the
    eval metric, fp16 + NativeScaler with value clipping."""
    return _train(ctx, model_name="efficientnet_b0", model_kw={"drop_path_rate": 0.1}, opt="lamb", opt_kw={},
                  sched="plateau", amp_dtype=torch.float16, mixup_kw=None, loss="ls", prefetcher=True,
                  clip_mode="value", ema=False)


OPTIMIZERS = ["adabelief", "adafactor", "adafactorbv", "adamp", "adan", "adopt", "lamb", "lambc", "lars",
              "laprop", "lion", "lookahead_adamw", "madgrad", "mars", "muon", "nadamw", "nadam", "novograd",
              "radam", "rmsproptf", "sgdp", "sgdw", "adamw", "adamwlegacy", "cadamw", "cadopt",
              "adahessian"]


@scenario
def optimizers(ctx):
    """Three steps of each timm optimizer (create_optimizer_v2) on a small ResNet; one that fails is logged."""
    import timm
    from timm.optim import create_optimizer_v2

    torch.manual_seed(0)
    x = torch.randn(4, 3, 32, 32, device=ctx.device)
    y = torch.randint(0, 10, (4,), device=ctx.device)
    failed = {}

    def run():
        for name in OPTIMIZERS:
            model = timm.create_model("resnet10t", num_classes=10).to(ctx.device)
            try:
                opt = create_optimizer_v2(model, opt=name, lr=1e-3, weight_decay=0.01)
                for _ in range(3):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                    opt.zero_grad()
                    loss.backward(create_graph=(name == "adahessian"))
                    opt.step()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("optimizers that failed:", failed)
    return run


@scenario
def inference_features(ctx):
    """Inference paths: features_only models, forward_features/forward_head(pre_logits), reparameterize,
    torch.no_grad eval with accuracy, create_transform on PIL images."""
    import timm
    from timm.data import create_transform, resolve_data_config
    from timm.utils import accuracy, reparameterize_model

    torch.manual_seed(0)
    ds = SyntheticImages(8, size=80)
    m1 = timm.create_model("convnext_atto", num_classes=10).to(ctx.device).eval()
    m2 = timm.create_model("resnet18", features_only=True, out_indices=(1, 2, 3)).to(ctx.device).eval()
    m3 = timm.create_model("mobileone_s0", num_classes=10).to(ctx.device).eval()
    m4 = timm.create_model("vit_tiny_patch16_224", img_size=64, num_classes=10).to(ctx.device).eval()

    @torch.no_grad()
    def run():
        cfg = resolve_data_config({}, model=m1)
        tf = create_transform(**{**cfg, "input_size": (3, 64, 64)})
        x = torch.stack([tf(img) for img, _ in ds]).to(ctx.device)
        y = torch.tensor([t for _, t in ds], device=ctx.device)
        out = m1(x)
        accuracy(out, y, topk=(1, 5))
        feats = m1.forward_features(x)
        m1.forward_head(feats, pre_logits=True)
        [f.shape for f in m2(x)]
        reparameterize_model(m3)(x)
        m4.forward_intermediates(x, indices=2) if hasattr(m4, "forward_intermediates") else None
        probs = m4(x).softmax(-1)
        top5_prob, top5_idx = probs.topk(5)
        return top5_idx.cpu().tolist()
    return run


ZOO = [
    # convnets
    "resnet18", "resnet26d", "resnest14d", "res2net50_14w_8s", "ecaresnet26t", "seresnext26t_32x4d", "dla34",
    "densenet121", "dpn68", "regnety_002", "efficientnet_b0", "efficientnetv2_rw_t", "mobilenetv3_small_100",
    "mobilenetv4_conv_small", "ghostnetv2_100", "rexnet_100", "hrnet_w18_small", "cspresnet50", "gernet_s",
    "ese_vovnet19b_slim", "selecsls42b", "nf_resnet26", "eca_nfnet_l0", "lambda_resnet26t", "halonet26t",
    "botnet26t_256", "convnext_atto", "convnextv2_atto", "mambaout_femto", "inception_next_atto", "rdnet_tiny",
    "starnet_s1", "hgnetv2_b0", "repvit_m0_9", "fastvit_t8", "edgenext_xx_small", "mobilevit_xs",
    # transformers / hybrids / mlps
    "deit_tiny_patch16_224", "vit_relpos_small_patch16_224", "vit_small_patch16_rope_224", "flexivit_small",
    "eva02_tiny_patch14_224", "beitv2_base_patch16_224", "cait_xxs24_224", "xcit_nano_12_p16_224", "pit_ti_224",
    "levit_128s", "swin_tiny_patch4_window7_224", "swinv2_cr_tiny_ns_224", "maxvit_nano_rw_256",
    "coatnet_nano_rw_224", "efficientvit_b0", "efficientformer_l1", "efficientformerv2_s0", "tiny_vit_5m_224",
    "hiera_tiny_224", "pvt_v2_b0", "twins_svt_small", "focalnet_tiny_srf", "davit_tiny", "gcvit_xxtiny",
    "mvitv2_tiny", "volo_d1_224", "tnt_s_patch16_224", "crossvit_tiny_240", "nextvit_small", "visformer_tiny",
    "poolformer_s12", "mixer_s16_224", "resmlp_12_224", "gmlp_ti16_224", "sequencer2d_s", "convmixer_768_32",
]


def _zoo(ctx, names):
    import timm

    failed = {}

    def run():
        for name in names:
            try:
                torch.manual_seed(0)
                model = timm.create_model(name, pretrained=False, num_classes=10).to(ctx.device)
                size = model.pretrained_cfg.get("input_size", (3, 224, 224))
                x = torch.randn(2, *size, device=ctx.device)
                y = torch.randint(0, 10, (2,), device=ctx.device)
                opt = torch.optim.SGD(model.parameters(), lr=0.01)
                model.train()
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=ctx.cuda):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                model.eval()
                with torch.no_grad(), torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=ctx.cuda):
                    model(x)
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("models that failed:", failed)
    return run


@scenario
def zoo_convnets(ctx):
    """One bf16 training step and one eval forward of each of 37 convnet architectures (default input size)."""
    return _zoo(ctx, ZOO[:37])


@scenario
def zoo_transformers(ctx):
    """The same for 36 transformer, hybrid and MLP architectures."""
    return _zoo(ctx, ZOO[37:])
