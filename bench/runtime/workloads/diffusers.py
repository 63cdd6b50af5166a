"""diffusers: diffusion training and sampling the way its examples and pipelines do it, on tiny
random-weight models built from configs (nothing downloaded): the unconditional DDPM training loop
(add_noise, v-prediction, min-SNR weighting, EMAModel, get_scheduler, a pipeline call with the EMA
weights, save/from_pretrained), a latent text-to-image-style loop (AutoencoderKL + a
cross-attention UNet2DConditionModel), an SD3-style flow-matching loop, the sampling loop of 20
schedulers, and the pipelines that need no text encoder (DDPM, DDIM, PNDM, DiT, consistency
models, LDM with a VQ model)."""

import inspect
import os

import torch
import torch.nn.functional as F

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import diffusers

    return os.path.dirname(os.path.realpath(diffusers.__file__))


def _unet2d(sample=16, ch=3):
    from diffusers import UNet2DModel

    return UNet2DModel(sample_size=sample, in_channels=ch, out_channels=ch, layers_per_block=1,
                       block_out_channels=(32, 64), norm_num_groups=8,
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"))


def _cond_unet(sample=8, ch=4, cross=32):
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(sample_size=sample, in_channels=ch, out_channels=ch, layers_per_block=1,
                                block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=cross,
                                attention_head_dim=8,
                                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))


def _vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(32, 64),
                         norm_num_groups=8, layers_per_block=1,
                         down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                         up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))


def _images(n, size, ctx, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 3, size, size, generator=g) * 2 - 1)


@scenario
def train_unconditional(ctx):
    """examples/unconditional_image_generation/train_unconditional.py, rebuilt: DDPMScheduler.add_noise,
    epsilon and v-prediction (get_velocity), min-SNR loss weights (compute_snr), AdamW + get_scheduler
    (cosine with warmup), clip_grad_norm_, EMAModel with warm-up (step, store/copy_to/restore,
    state_dict), then a DDPMPipeline call with the EMA weights, save_pretrained and from_pretrained."""
    from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel
    from diffusers.optimization import get_scheduler
    from diffusers.training_utils import EMAModel, compute_snr

    data = _images(16, 16, ctx)

    def run():
        torch.manual_seed(0)
        for prediction_type in ("epsilon", "v_prediction"):
            model = _unet2d().to(ctx.device)
            sched = DDPMScheduler(num_train_timesteps=100, beta_schedule="squaredcos_cap_v2",
                                  prediction_type=prediction_type)
            ema = EMAModel(model.parameters(), decay=0.999, use_ema_warmup=True, inv_gamma=1.0, power=0.75,
                           model_cls=UNet2DModel, model_config=model.config)
            ema.to(ctx.device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-6)
            lr_sched = get_scheduler("cosine", optimizer=opt, num_warmup_steps=2, num_training_steps=8)
            logs = []
            for step in range(4):
                clean = data[step * 4:(step + 1) * 4].to(ctx.device)
                noise = torch.randn_like(clean)
                bsz = clean.shape[0]
                timesteps = torch.randint(0, sched.config.num_train_timesteps, (bsz,), device=clean.device).long()
                noisy = sched.add_noise(clean, noise, timesteps)
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=ctx.cuda):
                    pred = model(noisy, timesteps, return_dict=False)[0]
                target = noise if prediction_type == "epsilon" else sched.get_velocity(clean, noise, timesteps)
                snr = compute_snr(sched, timesteps)
                weights = torch.stack([snr, 5.0 * torch.ones_like(timesteps)], dim=1).min(dim=1)[0]
                weights = weights / snr if prediction_type == "epsilon" else weights / (snr + 1)
                loss = F.mse_loss(pred.float(), target.float(), reduction="none").mean(dim=[1, 2, 3])
                loss = (loss * weights).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                lr_sched.step()
                opt.zero_grad()
                ema.step(model.parameters())
                logs.append({"loss": loss.detach().item(), "lr": lr_sched.get_last_lr()[0], "step": step,
                             "ema_decay": ema.cur_decay_value})
            ema.store(model.parameters())
            ema.copy_to(model.parameters())
            pipe = DDPMPipeline(unet=model, scheduler=sched).to(ctx.device)
            pipe.set_progress_bar_config(disable=True)
            images = pipe(generator=torch.Generator(device="cpu").manual_seed(0), batch_size=2,
                          num_inference_steps=5, output_type="np").images
            ema.restore(model.parameters())
            out = os.path.join(ctx.tmp, f"ddpm-{prediction_type}")
            pipe.save_pretrained(out)
            ema.save_pretrained(os.path.join(out, "unet_ema"))
            EMAModel.from_pretrained(os.path.join(out, "unet_ema"), UNet2DModel)
            sd = ema.state_dict()
            ema.load_state_dict(sd)
            DDPMPipeline.from_pretrained(out).to(ctx.device)
            assert images.shape[0] == 2
    return run


@scenario
def train_latent_text2img(ctx):
    """The train_text_to_image.py loop on random text embeddings: AutoencoderKL encode (latent_dist.sample,
    scaling_factor), noise offset, DDPMScheduler/EulerDiscreteScheduler add_noise, a cross-attention
    UNet2DConditionModel, min-SNR, cast_training_params, EMA with foreach, VAE training with a KL term,
    then a hand-written classifier-free-guidance sampling loop with DPMSolverMultistepScheduler and VAE decode."""
    from diffusers import DDPMScheduler, DPMSolverMultistepScheduler, EulerDiscreteScheduler
    from diffusers.training_utils import EMAModel, cast_training_params, compute_snr, free_memory

    data = _images(8, 16, ctx, seed=1)

    def run():
        torch.manual_seed(0)
        vae, unet = _vae().to(ctx.device), _cond_unet().to(ctx.device)
        vae.requires_grad_(False)
        cast_training_params(unet, dtype=torch.float32)
        ema = EMAModel(unet.parameters(), foreach=True)
        opt = torch.optim.AdamW(unet.parameters(), lr=1e-4)
        for sched in (DDPMScheduler(num_train_timesteps=100), EulerDiscreteScheduler(num_train_timesteps=100)):
            for step in range(2):
                pixels = data[step * 4:(step + 1) * 4].to(ctx.device)
                text = torch.randn(4, 7, 32, device=ctx.device)
                latents = vae.encode(pixels).latent_dist.sample() * vae.config.scaling_factor
                noise = torch.randn_like(latents) + 0.05 * torch.randn(latents.shape[0], latents.shape[1], 1, 1,
                                                                       device=latents.device)
                t = torch.randint(0, sched.config.num_train_timesteps, (4,), device=latents.device).long()
                noisy = sched.add_noise(latents, noise, t)
                with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=ctx.cuda):
                    pred = unet(noisy, t, text, return_dict=False)[0]
                snr = compute_snr(sched, t) if isinstance(sched, DDPMScheduler) else torch.ones(4, device=t.device)
                w = torch.minimum(snr, torch.full_like(snr, 5.0)) / snr
                loss = (F.mse_loss(pred.float(), noise.float(), reduction="none").mean(dim=[1, 2, 3]) * w).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
                opt.step()
                opt.zero_grad()
                ema.step(unet.parameters())
        # VAE fine-tuning step: reconstruction + KL
        vae.requires_grad_(True)
        vopt = torch.optim.AdamW(vae.parameters(), lr=1e-4)
        for step in range(2):
            pixels = data[:4].to(ctx.device)
            post = vae.encode(pixels).latent_dist
            rec = vae.decode(post.sample()).sample
            loss = F.mse_loss(rec, pixels) + 1e-6 * post.kl().mean()
            loss.backward()
            vopt.step()
            vopt.zero_grad()
        vae.enable_slicing()
        vae.enable_tiling()
        # sampling with classifier-free guidance
        sched = DPMSolverMultistepScheduler(num_train_timesteps=100)
        sched.set_timesteps(6, device=ctx.device)
        unet.eval()
        with torch.no_grad():
            lat = torch.randn(2, 4, 8, 8, device=ctx.device) * sched.init_noise_sigma
            cond, uncond = torch.randn(2, 7, 32, device=ctx.device), torch.zeros(2, 7, 32, device=ctx.device)
            for t in sched.timesteps:
                inp = sched.scale_model_input(torch.cat([lat] * 2), t)
                eps = unet(inp, t, torch.cat([uncond, cond])).sample
                eu, ec = eps.chunk(2)
                lat = sched.step(eu + 4.0 * (ec - eu), t, lat).prev_sample
            img = vae.decode(lat / vae.config.scaling_factor).sample
        vae.disable_tiling()
        free_memory()
        assert img.shape == (2, 3, 16, 16)
    return run


@scenario
def train_flow_matching(ctx):
    """The SD3-style flow-matching training loop: FlowMatchEulerDiscreteScheduler, timestep density
    (compute_density_for_timestep_sampling: logit_normal and mode), loss weighting
    (compute_loss_weighting_for_sd3: sigma_sqrt, cosmap), a DiT transformer, then sampling with the
    flow-match Euler and Heun schedulers (shifted and dynamic-shift schedules)."""
    from diffusers import DiTTransformer2DModel, FlowMatchEulerDiscreteScheduler, FlowMatchHeunDiscreteScheduler
    from diffusers.training_utils import compute_density_for_timestep_sampling, compute_loss_weighting_for_sd3

    def run():
        torch.manual_seed(0)
        model = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=4,
                                      num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=1000,
                                      norm_num_groups=8).to(ctx.device)
        sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        sigmas_all = sched.sigmas.to(ctx.device)
        timesteps_all = sched.timesteps.to(ctx.device)
        for step, scheme in enumerate(("logit_normal", "mode", "sigma_sqrt", "cosmap")):
            lat = torch.randn(4, 4, 8, 8, device=ctx.device)
            noise = torch.randn_like(lat)
            u = compute_density_for_timestep_sampling(scheme, 4, logit_mean=0.0, logit_std=1.0, mode_scale=1.29)
            idx = (u * sched.config.num_train_timesteps).long()
            t = timesteps_all[idx.to(ctx.device)]
            sig = sigmas_all[idx.to(ctx.device)].view(-1, 1, 1, 1)
            noisy = (1.0 - sig) * lat + sig * noise
            labels = torch.randint(0, 10, (4,), device=ctx.device)
            pred = model(noisy, timestep=t, class_labels=labels).sample
            weighting = compute_loss_weighting_for_sd3(scheme, sigmas=sig)
            loss = (weighting.float() * (pred.float() - (noise - lat)) ** 2).reshape(4, -1).mean(1).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
        model.eval()
        with torch.no_grad():
            for s in (FlowMatchEulerDiscreteScheduler(shift=3.0),
                      FlowMatchEulerDiscreteScheduler(use_dynamic_shifting=True, base_shift=0.5, max_shift=1.15),
                      FlowMatchEulerDiscreteScheduler(invert_sigmas=False, stochastic_sampling=True),
                      FlowMatchHeunDiscreteScheduler()):
                kw = {"mu": 0.8} if s.config.get("use_dynamic_shifting", False) else {}
                s.set_timesteps(5, device=ctx.device, **kw)
                x = torch.randn(2, 4, 8, 8, device=ctx.device)
                labels = torch.tensor([1, 2], device=ctx.device)
                for t in s.timesteps:
                    v = model(x, timestep=t.expand(2), class_labels=labels).sample
                    x = s.step(v, t, x).prev_sample
    return run


SCHEDULERS = [
    ("DDPMScheduler", {}), ("DDPMScheduler", {"variance_type": "learned_range"}),
    ("DDIMScheduler", {}), ("DDIMScheduler", {"timestep_spacing": "trailing", "rescale_betas_zero_snr": True}),
    ("PNDMScheduler", {"skip_prk_steps": True}), ("PNDMScheduler", {}),
    ("EulerDiscreteScheduler", {}), ("EulerDiscreteScheduler", {"use_karras_sigmas": True}),
    ("EulerAncestralDiscreteScheduler", {}), ("HeunDiscreteScheduler", {}),
    ("DPMSolverMultistepScheduler", {}), ("DPMSolverMultistepScheduler", {"algorithm_type": "sde-dpmsolver++"}),
    ("DPMSolverSinglestepScheduler", {}), ("UniPCMultistepScheduler", {}), ("LMSDiscreteScheduler", {}),
    ("KDPM2DiscreteScheduler", {}), ("KDPM2AncestralDiscreteScheduler", {}), ("DEISMultistepScheduler", {}),
    ("LCMScheduler", {}), ("TCDScheduler", {}), ("SASolverScheduler", {}), ("IPNDMScheduler", {}),
    ("EDMEulerScheduler", {}), ("EDMDPMSolverMultistepScheduler", {}), ("DDIMInverseScheduler", {}),
    ("CMStochasticIterativeScheduler", {}),
]


@scenario
def schedulers_sampling(ctx):
    """The denoising loop of each scheduler with a tiny UNet2DModel (set_timesteps on the device,
    init_noise_sigma, scale_model_input, step with a generator where it takes one), add_noise with
    device timesteps, and a save_config/from_config round trip. `variance_type=learned_range` uses a
    UNet with twice the output channels."""
    import diffusers

    def run():
        torch.manual_seed(0)
        unet = _unet2d(sample=8).to(ctx.device).eval()
        unet6 = None
        failed = {}
        for name, kw in SCHEDULERS:
            try:
                cls = getattr(diffusers, name)
                kw = dict(kw)
                if "num_train_timesteps" in inspect.signature(cls.__init__).parameters:
                    kw.setdefault("num_train_timesteps", 100)
                s = cls(**kw)
                s = cls.from_config(s.config)
                learned = kw.get("variance_type") == "learned_range"
                if learned and unet6 is None:
                    from diffusers import UNet2DModel

                    unet6 = UNet2DModel(sample_size=8, in_channels=3, out_channels=6, layers_per_block=1,
                                        block_out_channels=(32, 64), norm_num_groups=8,
                                        down_block_types=("DownBlock2D", "DownBlock2D"),
                                        up_block_types=("UpBlock2D", "UpBlock2D")).to(ctx.device).eval()
                net = unet6 if learned else unet
                steps = 4
                s.set_timesteps(steps, device=ctx.device)
                g = torch.Generator(device=ctx.device).manual_seed(0)
                x = torch.randn(2, 3, 8, 8, device=ctx.device) * s.init_noise_sigma
                takes_gen = "generator" in inspect.signature(s.step).parameters
                with torch.no_grad():
                    for t in s.timesteps:
                        inp = s.scale_model_input(x, t)
                        out = net(inp, t).sample
                        x = s.step(out, t, x, **({"generator": g} if takes_gen else {})).prev_sample
                if hasattr(s, "add_noise") and name not in ("DDIMInverseScheduler",):
                    clean = torch.randn(2, 3, 8, 8, device=ctx.device)
                    tt = s.timesteps[:2].to(ctx.device)
                    s.add_noise(clean, torch.randn_like(clean), tt)
            except Exception as exc:  # noqa: BLE001
                failed[name + str(kw)] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("schedulers that failed:", failed)
    return run


@scenario
def pipelines(ctx):
    """The pipelines that need no text encoder, on tiny models: DDPMPipeline, DDIMPipeline (eta > 0),
    PNDMPipeline, DiTPipeline (DiT + AutoencoderKL, classifier-free guidance, get_label_ids),
    ConsistencyModelPipeline (one and two steps), LDMPipeline (VQModel), each with output_type np and pt,
    a callback-free progress bar, enable_model_cpu_offload-free plain .to(device); and a
    DiffusionPipeline save_pretrained/from_pretrained round trip."""
    from diffusers import (CMStochasticIterativeScheduler, ConsistencyModelPipeline, DDIMPipeline,
                           DDIMScheduler, DDPMPipeline, DDPMScheduler, DiffusionPipeline, DiTPipeline,
                           DiTTransformer2DModel, LDMPipeline, PNDMPipeline, PNDMScheduler, UNet2DModel, VQModel)

    def run():
        torch.manual_seed(0)
        failed = {}
        gen = lambda: torch.Generator(device="cpu").manual_seed(0)  # noqa: E731
        unet = _unet2d().to(ctx.device)

        def go(name, fn):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        def ddpm():
            p = DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=50)).to(ctx.device)
            p.set_progress_bar_config(disable=True)
            p(batch_size=2, num_inference_steps=4, generator=gen(), output_type="np")
            p(batch_size=1, num_inference_steps=3, generator=gen(), output_type="pt")
            out = os.path.join(ctx.tmp, "ddpm")
            p.save_pretrained(out)
            DiffusionPipeline.from_pretrained(out).to(ctx.device)

        def ddim():
            p = DDIMPipeline(unet=unet, scheduler=DDIMScheduler(num_train_timesteps=50)).to(ctx.device)
            p.set_progress_bar_config(disable=True)
            p(batch_size=2, num_inference_steps=4, eta=0.5, generator=gen(), output_type="np")

        def pndm():
            p = PNDMPipeline(unet=unet, scheduler=PNDMScheduler(num_train_timesteps=50)).to(ctx.device)
            p.set_progress_bar_config(disable=True)
            p(batch_size=1, num_inference_steps=4, generator=gen(), output_type="np")

        def dit():
            tr = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
                                       num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=1000,
                                       norm_num_groups=8)
            p = DiTPipeline(transformer=tr, vae=_vae(), scheduler=DDIMScheduler(num_train_timesteps=50),
                            id2label={0: "cat", 1: "dog, puppy"}).to(ctx.device)
            p.set_progress_bar_config(disable=True)
            ids = p.get_label_ids(["cat", "dog"])
            p(class_labels=ids, num_inference_steps=3, guidance_scale=4.0, generator=gen(), output_type="np")
            p(class_labels=ids, num_inference_steps=3, guidance_scale=1.0, generator=gen(), output_type="pt")

        def consistency():
            u = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                            block_out_channels=(32, 64), norm_num_groups=8, num_class_embeds=10,
                            down_block_types=("DownBlock2D", "DownBlock2D"),
                            up_block_types=("UpBlock2D", "UpBlock2D")).to(ctx.device)
            p = ConsistencyModelPipeline(unet=u, scheduler=CMStochasticIterativeScheduler(num_train_timesteps=40))
            p = p.to(ctx.device)
            p.set_progress_bar_config(disable=True)
            p(batch_size=2, num_inference_steps=1, class_labels=[1, 2], generator=gen(), output_type="np")
            p(batch_size=1, timesteps=[22, 0], class_labels=0, generator=gen(), output_type="pt")

        def ldm():
            vq = VQModel(in_channels=3, out_channels=3, latent_channels=3, block_out_channels=(32, 64),
                         norm_num_groups=8, layers_per_block=1, num_vq_embeddings=32,
                         down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                         up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"))
            u = _unet2d(sample=8)
            p = LDMPipeline(vqvae=vq, unet=u, scheduler=DDIMScheduler(num_train_timesteps=50)).to(ctx.device)
            p.set_progress_bar_config(disable=True)
            p(batch_size=2, num_inference_steps=3, generator=gen(), output_type="np")

        for name, fn in (("ddpm", ddpm), ("ddim", ddim), ("pndm", pndm), ("dit", dit), ("consistency", consistency),
                         ("ldm", ldm)):
            go(name, fn)
        if failed:
            print("pipelines that failed:", failed)
    return run
