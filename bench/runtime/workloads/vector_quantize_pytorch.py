"""vector-quantize-pytorch: its README recipes and examples/autoencoder.py at toy size on random
data (nothing downloaded): a conv autoencoder with a VQ bottleneck trained with the reconstruction
+ commitment loss and the percentage of active codes logged each step, and the other quantizers
(residual, grouped, FSQ, LFQ, latent, SimVQ, random projection) trained and decoded from indices."""

import os

import torch
from torch import nn

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import vector_quantize_pytorch

    return os.path.dirname(os.path.realpath(vector_quantize_pytorch.__file__))


def _autoencoder(vq):
    class AE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(1, 16, 3, stride=1, padding=1), nn.MaxPool2d(2, 2), nn.GELU(),
                                     nn.Conv2d(16, 32, 3, stride=1, padding=1), nn.MaxPool2d(2, 2))
            self.vq = vq
            self.dec = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(32, 16, 3, padding=1),
                                     nn.GELU(), nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(16, 1, 3, padding=1))

        def forward(self, x):
            x = self.enc(x)
            out = self.vq(x)
            x = self.dec(out[0])
            return (x.clamp(-1, 1), *out[1:])

    return AE()


@scenario
def vq_autoencoder_train(ctx):
    """examples/autoencoder.py: a conv autoencoder on 28x28 images with a VectorQuantize bottleneck
    (accept_image_fmap, EMA codebook, kmeans init, dead-code expiry, orthogonal regularisation,
    rotation trick), AdamW, loss = L1 reconstruction + alpha * commit loss; each step prints
    rec_loss.item(), cmt_loss.item() and the active-code percentage from indices.unique().numel();
    then the same with cosine-similarity codebooks, a learnable codebook,
    stochastic code sampling and 2 heads, then eval: get_codes_from_indices decoded by the decoder."""
    from vector_quantize_pytorch import VectorQuantize

    dev = ctx.device
    torch.manual_seed(0)
    configs = [
        dict(kmeans_init=True, kmeans_iters=4, threshold_ema_dead_code=2, orthogonal_reg_weight=0.01),
        dict(use_cosine_sim=True, decay=0.9, commitment_weight=0.25, codebook_diversity_loss_weight=0.1),
        dict(learnable_codebook=True, ema_update=False, rotation_trick=False,
             stochastic_sample_codes=True, sample_codebook_temp=0.1, heads=2, separate_codebook_per_head=True),
    ]
    models = [_autoencoder(VectorQuantize(dim=32, codebook_size=64, accept_image_fmap=True, **c)).to(dev)
              for c in configs]
    opts = [torch.optim.AdamW(m.parameters(), lr=3e-4) for m in models]
    data = torch.rand(32, 1, 28, 28, device=dev) * 2 - 1

    def run():
        for model, opt in zip(models, opts):
            model.train()
            for i in range(4):
                x = data[torch.randint(0, 32, (8,), device=dev)]
                out, indices, cmt_loss = model(x)[:3]
                if isinstance(cmt_loss, tuple):
                    cmt_loss = cmt_loss[0]
                rec_loss = (out - x).abs().mean()
                (rec_loss + 10 * cmt_loss).backward()
                opt.step()
                opt.zero_grad()
                print(f"rec loss: {rec_loss.item():.3f} | cmt loss: {cmt_loss.item():.3f} | "
                      f"active %: {indices.unique().numel() / 64 * 100:.3f}")
            model.eval()
            with torch.no_grad():
                _, indices, _ = model(data[:4])[:3]
                codes = model.vq.get_codes_from_indices(indices)  # (get_output_from_indices projects the wrong axis of image maps)
                outs = model.dec(model.vq.project_out(codes.movedim(1, -1)).movedim(-1, 1))
        return outs.sum().item()

    return run


@scenario
def quantizer_zoo(ctx):
    """The README's other quantizers, each trained 3 steps behind a linear layer (loss + aux loss,
    backward, Adam, loss.item()) and then run in eval and decoded from indices: ResidualVQ (kmeans
    init, shared codebook, quantize dropout, return_all_codes), GroupedResidualVQ, FSQ,
    ResidualFSQ, GroupedResidualFSQ, LFQ (entropy and commitment losses, spherical), ResidualLFQ,
    LatentQuantize, SimVQ, ResidualSimVQ, RandomProjectionQuantizer."""
    import vector_quantize_pytorch as V

    dev = ctx.device
    torch.manual_seed(0)
    D = 32
    qs = {
        "rvq": V.ResidualVQ(dim=D, num_quantizers=4, codebook_size=64, kmeans_init=True, kmeans_iters=3,
                            shared_codebook=True, quantize_dropout=True, threshold_ema_dead_code=1),
        "grvq": V.GroupedResidualVQ(dim=D, num_quantizers=2, groups=2, codebook_size=32),
        "fsq": V.FSQ(levels=[8, 5, 5, 5], dim=D),
        "rfsq": V.ResidualFSQ(dim=D, levels=[8, 5, 5, 3], num_quantizers=3, quantize_dropout=True),
        "grfsq": V.GroupedResidualFSQ(dim=D, levels=[8, 5, 5, 3], num_quantizers=2, groups=2),
        "lfq": V.LFQ(codebook_size=256, dim=D, entropy_loss_weight=0.1, diversity_gamma=1.0,
                     commitment_loss_weight=0.25),
        "lfq_sph": V.LFQ(codebook_size=256, dim=D, spherical=True, num_codebooks=2),
        "rlfq": V.ResidualLFQ(dim=D, codebook_size=256, num_quantizers=2, quantize_dropout=True),
        "latent": V.LatentQuantize(levels=[5, 5, 8], dim=D, commitment_loss_weight=0.1, quantization_loss_weight=0.1),
        "simvq": V.SimVQ(dim=D, codebook_size=64),
        "rsimvq": V.ResidualSimVQ(dim=D, num_quantizers=3, codebook_size=64),
    }
    qs = {k: q.to(dev) for k, q in qs.items()}
    heads = {k: nn.Linear(D, D).to(dev) for k in qs}
    rpq = V.RandomProjectionQuantizer(dim=D, num_codebooks=2, codebook_dim=16, codebook_size=64).to(dev)
    params = [p for m in list(qs.values()) + list(heads.values()) for p in m.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3)
    x = torch.randn(4, 64, D, device=dev)

    def aux_of(out):
        rest = out[2:] if len(out) > 2 else ()
        aux = [a for a in rest if torch.is_tensor(a)]
        return sum(a.sum() for a in aux) if aux else 0.0

    def run():
        losses = {}
        for k, q in qs.items():
            q.train()
            for _ in range(3):
                h = heads[k](x)
                out = q(h.transpose(1, 2)) if k == "latent" else q(h)  # LatentQuantize takes channels first
                y = out[0].transpose(1, 2) if k == "latent" else out[0]
                loss = (y - x).pow(2).mean() + aux_of(out)
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses[k] = loss.item()
            q.eval()
            with torch.no_grad():
                h = heads[k](x)
                out = q(h.transpose(1, 2)) if k == "latent" else q(h)
                idx = out[1]
                if hasattr(q, "get_output_from_indices"):
                    q.get_output_from_indices(idx)
                elif hasattr(q, "indices_to_codes"):
                    q.indices_to_codes(idx)
        with torch.no_grad():
            out, _, _, all_codes = qs["rvq"](heads["rvq"](x), return_all_codes=True)
            idx = rpq(x)
        print(losses)
        return idx.float().mean().item()

    return run
