"""zuko: its tutorials at toy size on synthetic 2-D/3-D data (nothing downloaded): conditional
normalizing flows trained by maximum likelihood (-flow(c).log_prob(x).mean(), backward, Adam,
loss.item()), then sampling and log-density evaluation; variational inference of an unnormalised
posterior with rsample_and_log_prob; Gaussian mixtures with k-means initialisation; and zuko's
distributions and transforms on device tensors."""

import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import zuko

    return os.path.dirname(os.path.realpath(zuko.__file__))


def _two_moons(n, dev, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(n, generator=g) * torch.pi
    side = (torch.rand(n, generator=g) > 0.5).float()
    x = torch.stack([torch.cos(t) + side * (1 - 2 * torch.cos(t)) + side, torch.sin(t) * (1 - 2 * side) + side * 0.5], 1)
    x = x + 0.05 * torch.randn(n, 2, generator=g)
    return x.to(dev), side[:, None].to(dev)


@scenario
def flows_train_sample(ctx):
    """The "learn the flow" tutorial: 11 conditional flows (NSF, NCSF, MAF, RealNVP, NICE, SOSPF,
    BPF, GF, NAF, UNAF, CNF with an exact and a Hutchinson trace), each trained 3 steps on two
    moons with the label as context (Adam, gradient clipping, loss.item() per step), then under
    no_grad: flow(c).sample((n,)), log_prob of a grid, and the transform's inverse and
    log_abs_det_jacobian; an unconditional NSF's sample / rsample / rsample_and_log_prob."""
    import zuko

    dev = ctx.device
    torch.manual_seed(0)
    flows = {
        "NSF": zuko.flows.NSF(2, 1, transforms=2, hidden_features=[32, 32]),
        "NCSF": zuko.flows.NCSF(2, 1, transforms=2, hidden_features=[32, 32]),
        "MAF": zuko.flows.MAF(2, 1, transforms=2, hidden_features=[32, 32]),
        "RealNVP": zuko.flows.RealNVP(2, 1, transforms=2, hidden_features=[32, 32]),
        "NICE": zuko.flows.NICE(2, 1, transforms=2, hidden_features=[32, 32]),
        "SOSPF": zuko.flows.SOSPF(2, 1, transforms=2, hidden_features=[32, 32]),
        "BPF": zuko.flows.BPF(2, 1, transforms=2, hidden_features=[32, 32]),
        "GF": zuko.flows.GF(2, 1, transforms=2, components=4),
        "NAF": zuko.flows.NAF(2, 1, transforms=2, hidden_features=[32, 32], signal=8),
        "UNAF": zuko.flows.UNAF(2, 1, transforms=2, hidden_features=[32, 32], signal=8),
        "CNF": zuko.flows.CNF(2, 1, hidden_features=[32, 32]),
        "CNF-hutch": zuko.flows.CNF(2, 1, hidden_features=[32, 32], exact=False),
    }
    flows = {k: f.to(dev) for k, f in flows.items()}
    uncond = zuko.flows.NSF(3, transforms=2, hidden_features=[32]).to(dev)
    opts = {k: torch.optim.Adam(f.parameters(), lr=1e-3) for k, f in flows.items()}
    x, c = _two_moons(256, dev)
    grid = torch.stack(torch.meshgrid(torch.linspace(-2, 3, 16), torch.linspace(-1, 2, 16), indexing="ij"), -1)
    grid = grid.reshape(-1, 2).to(dev)

    def run():
        stats = {}
        for k, flow in flows.items():
            flow.train()
            for i in range(3):
                idx = torch.randint(0, 256, (64,), device=dev)
                loss = -flow(c[idx]).log_prob(x[idx]).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(flow.parameters(), 1.0)
                opts[k].step()
                opts[k].zero_grad()
                stats[k] = loss.item()
            flow.eval()
            with torch.no_grad():
                d = flow(torch.ones(1, device=dev))
                s = d.sample((32,))
                lp = flow(torch.zeros(1, device=dev)).log_prob(grid)
                t = d.transform
                z = t(s)
                if k not in ("NAF", "UNAF", "SOSPF", "BPF", "GF"):  # their inverses are iterative: done below once
                    back = t.inv(z)
                ladj = t.log_abs_det_jacobian(s, z)
            print(k, stats[k], lp.exp().mean().item())
        with torch.no_grad():
            t = flows["NAF"](torch.ones(1, device=dev)).transform
            back = t.inv(t(x[:16]))
        d = uncond()
        y = d.rsample((16,))
        y2, lp2 = d.rsample_and_log_prob((16,))
        return sum(stats.values()) + lp2.mean().item() + back.sum().item()

    return run


@scenario
def vi_mixtures_distributions(ctx):
    """The variational-inference tutorial: an NSF posterior q(theta|x) fitted 6 steps by the ELBO
    from rsample_and_log_prob against an unnormalised log-density (a BoxUniform prior + Gaussian
    likelihood), loss.item(); a conditional GMM (full, diagonal, spherical, tied) initialised with
    kmeans and kmeans++ and random, then trained 3 steps; distributions on the device:
    DiagNormal, BoxUniform, Joint, Mixture, GeneralizedNormal, Truncated (sample, log_prob, cdf),
    Sort/TopK/Minimum/Maximum, TransformedUniform; and zuko.transforms
    (MonotonicRQSTransform, SOSPolynomialTransform with bisection inverse, CircularShift,
    SignedPowerTransform, SoftclipTransform, FreeFormJacobianTransform, PermutationTransform)."""
    import zuko
    from zuko import distributions as Z
    from zuko import transforms as T

    dev = ctx.device
    torch.manual_seed(0)
    prior = Z.BoxUniform(torch.full((3,), -2.0, device=dev), torch.full((3,), 2.0, device=dev))
    x_obs = torch.tensor([0.5, -0.3, 1.0], device=dev)

    def log_joint(theta):
        return prior.log_prob(theta) + torch.distributions.Normal(theta, 0.5).log_prob(x_obs).sum(-1)

    post = zuko.flows.NSF(3, transforms=2, hidden_features=[32, 32]).to(dev)
    opt = torch.optim.Adam(post.parameters(), lr=1e-3)
    gmms = {(ct, tied): zuko.mixtures.GMM(3, 1, components=3, covariance_type=ct, tied=tied).to(dev)
            for ct in ("full", "diagonal", "spherical") for tied in (False, True)}
    gopt = torch.optim.Adam([p for g in gmms.values() for p in g.parameters()], lr=1e-3)
    data = torch.randn(128, 3, device=dev) + torch.randint(0, 3, (128, 1), device=dev) * 2.0
    ctxv = torch.randn(128, 1, device=dev)

    def run():
        for i in range(6):
            theta, lq = post().rsample_and_log_prob((64,))
            loss = (lq - log_joint(theta).clamp(min=-1e3)).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            print(f"elbo step {i}: {loss.item():.3f}")
        for (ct, tied), g in gmms.items():
            for strategy in ("random", "kmeans", "kmeans++"):
                g.initialize(data, strategy=strategy)
            for _ in range(3):
                loss = -g(ctxv).log_prob(data).mean()
                loss.backward()
                gopt.step()
                gopt.zero_grad()
            print(ct, tied, loss.item())
        out = []
        with torch.no_grad():
            mu, sig = torch.zeros(3, device=dev), torch.ones(3, device=dev)
            dn = Z.DiagNormal(mu, sig)
            j = Z.Joint(Z.DiagNormal(mu[:2], sig[:2]), prior)
            mix = Z.Mixture(torch.distributions.Normal(torch.tensor([-1.0, 1.0], device=dev),
                                                       torch.tensor([0.5, 0.5], device=dev)),
                            torch.zeros(2, device=dev))
            gn = Z.GeneralizedNormal(torch.tensor(3.0, device=dev))
            tr = Z.Truncated(torch.distributions.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)),
                             lower=torch.tensor(-1.0, device=dev), upper=torch.tensor(2.0, device=dev))
            srt = Z.Sort(torch.distributions.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)), n=4)
            topk = Z.TopK(torch.distributions.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)), k=2, n=4)
            mn = Z.Minimum(torch.distributions.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)), n=3)
            mx = Z.Maximum(torch.distributions.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)), n=3)
            tu = Z.TransformedUniform(T.SoftclipTransform(), torch.tensor(-1.0, device=dev), torch.tensor(1.0, device=dev))
            for d in (dn, prior, j, mix, gn, tr, srt, topk, mn, mx, tu):
                s = d.sample((32,))
                out.append(d.log_prob(s).mean())
            out.append(tr.cdf(torch.tensor([0.0, 1.0], device=dev)).sum())
            y = torch.randn(16, 4, device=dev)
            rqs = T.MonotonicRQSTransform(torch.randn(16, 4, 8, device=dev), torch.randn(16, 4, 8, device=dev),
                                          torch.randn(16, 4, 7, device=dev))
            sosp = T.SOSPolynomialTransform(torch.randn(16, 4, 2, 3, device=dev), torch.randn(16, 4, device=dev))
            ffj = T.FreeFormJacobianTransform(lambda t, x: -x * t, t0=0.0, t1=1.0, exact=True)
            ts = [rqs, sosp, T.CircularShiftTransform(bound=3.0), T.SignedPowerTransform(torch.ones(4, device=dev)),
                  T.SoftclipTransform(), ffj, T.PermutationTransform(torch.randperm(4, device=dev))]
            for t in ts:
                z = t(y)
                out.append(t.inv(z).mean())
                out.append(t.log_abs_det_jacobian(y, z).mean())
        return torch.stack(out).sum().item()

    return run
