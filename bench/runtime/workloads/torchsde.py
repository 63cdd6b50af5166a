"""torchsde: its examples at toy size (nothing downloaded): a neural SDE fitted to random paths
with sdeint and sdeint_adjoint (loss, backward, Adam, loss.item()), the latent-SDE example with
logqp (KL term), and a sweep of solvers, noise types, Brownian motions and adaptive stepping
on the GPU."""

import os

import torch
from torch import nn

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import torchsde

    return os.path.dirname(os.path.realpath(torchsde.__file__))


class NeuralSDE(nn.Module):
    def __init__(self, d=4, m=None, noise_type="diagonal", sde_type="ito"):
        super().__init__()
        self.noise_type, self.sde_type = noise_type, sde_type
        self.d, self.m = d, m or d
        self.drift = nn.Sequential(nn.Linear(d + 1, 32), nn.Tanh(), nn.Linear(32, d))
        out = {"diagonal": d, "general": d * self.m, "scalar": d, "additive": d * self.m}[noise_type]
        self.diff = nn.Sequential(nn.Linear(d + 1, 32), nn.Tanh(), nn.Linear(32, out), nn.Sigmoid())

    def _tx(self, t, y):
        return torch.cat([y, t.expand(y.shape[0], 1)], 1)

    def f(self, t, y):
        return self.drift(self._tx(t, y))

    def g(self, t, y):
        out = self.diff(self._tx(t, y if self.noise_type != "additive" else torch.zeros_like(y))) * 0.3
        if self.noise_type in ("general", "additive"):
            return out.view(-1, self.d, self.m)
        if self.noise_type == "scalar":
            return out.view(-1, self.d, 1)
        return out


@scenario
def neural_sde_fit(ctx):
    """examples/sde_gan-style fitting at toy size: a NeuralSDE (Ito, diagonal) trained 4 steps with
    sdeint (euler, srk) against target paths, MSE loss, Adam, loss.item() printed; the same
    Stratonovich SDE trained with sdeint_adjoint (midpoint and reversible_heun with
    adjoint_reversible_heun) using a BrownianInterval on the device; an evaluation with
    adaptive stepping (rtol/atol) and extra solver state carried across calls."""
    import torchsde

    dev = ctx.device
    torch.manual_seed(0)
    B, D = 16, 4
    ts = torch.linspace(0, 1, 10, device=dev)
    y0 = torch.randn(B, D, device=dev)
    target = torch.cumsum(torch.randn(10, B, D, device=dev) * 0.1, 0) + y0
    ito = NeuralSDE(D).to(dev)
    strat = NeuralSDE(D, sde_type="stratonovich").to(dev)
    opt = torch.optim.Adam(list(ito.parameters()) + list(strat.parameters()), lr=1e-3)

    def run():
        for method in ("euler", "srk"):
            for i in range(2):
                ys = torchsde.sdeint(ito, y0, ts, method=method, dt=0.05)
                loss = (ys - target).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                print(f"{method} step {i}: {loss.item():.4f}")
        for method, adj in (("midpoint", None), ("reversible_heun", "adjoint_reversible_heun")):
            for i in range(2):
                bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(B, D), device=dev, levy_area_approximation="none")
                ys = torchsde.sdeint_adjoint(strat, y0, ts, bm=bm, method=method, adjoint_method=adj, dt=0.05)
                loss = (ys - target).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                print(f"adjoint {method} step {i}: {loss.item():.4f}")
        with torch.no_grad():
            ys = torchsde.sdeint(ito, y0, ts, method="euler", dt=0.1, adaptive=True, rtol=1e-3, atol=1e-3)
            bm = torchsde.BrownianInterval(t0=0.0, t1=2.0, size=(B, D), device=dev)
            ys1, extra = torchsde.sdeint(ito, y0, ts, bm=bm, method="euler", dt=0.05, extra=True)
            ys2 = torchsde.sdeint(ito, ys1[-1], ts + 1.0, bm=bm, method="euler", dt=0.05, extra_solver_state=extra)
        return (ys.mean() + ys2.mean()).item()

    return run


class LatentSDE(nn.Module):
    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, d=4):
        super().__init__()
        self.theta, self.sigma = 1.0, 0.5
        self.net = nn.Sequential(nn.Linear(d + 1, 32), nn.Tanh(), nn.Linear(32, d))
        self.py0_mean = nn.Parameter(torch.zeros(1, d))
        self.qy0_mean = nn.Parameter(torch.zeros(1, d))
        self.qy0_logstd = nn.Parameter(torch.zeros(1, d))

    def f(self, t, y):  # posterior drift
        return self.net(torch.cat([y, torch.sin(t).expand(y.shape[0], 1)], 1))

    def h(self, t, y):  # prior drift (OU)
        return self.theta * (0.0 - y)

    def g(self, t, y):
        return torch.full_like(y, self.sigma)


@scenario
def latent_sde_solvers(ctx):
    """examples/latent_sde.py at toy size: a latent SDE with an OU prior trained 4 steps with
    sdeint(logqp=True) (euler and milstein), the posterior y0 sampled, a Normal likelihood,
    KL(qy0||py0) + logqp KL, Adam, loss.item(); then a sweep under no_grad of solvers x noise
    types x Brownian motions: euler/milstein/srk (Ito diagonal), milstein derivative-free,
    euler/srk (additive), euler (general, scalar), heun/midpoint/log_ode/reversible_heun
    (Stratonovich), with BrownianPath, BrownianTree, BrownianInterval (space-time Levy area), and
    sdeint with names= for renamed drift/diffusion."""
    import torchsde

    dev = ctx.device
    torch.manual_seed(0)
    B, D = 16, 4
    ts = torch.linspace(0, 1, 8, device=dev)
    ys_obs = torch.randn(8, B, D, device=dev) * 0.3
    model = LatentSDE(D).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sdes = {(nt, st): NeuralSDE(D, m=2 if nt in ("general", "additive") else None, noise_type=nt, sde_type=st).to(dev)
            for nt, st in [("diagonal", "ito"), ("additive", "ito"), ("general", "ito"), ("scalar", "ito"),
                           ("diagonal", "stratonovich"), ("general", "stratonovich")]}

    class Renamed(nn.Module):
        noise_type, sde_type = "diagonal", "ito"

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def drift(self, t, y):
            return self.inner.f(t, y)

        def diffusion(self, t, y):
            return self.inner.g(t, y)

    renamed = Renamed(sdes[("diagonal", "ito")])

    def run():
        for method in ("euler", "milstein"):
            for i in range(2):
                eps = torch.randn(B, D, device=dev)
                y0 = model.qy0_mean + eps * model.qy0_logstd.exp()
                qy0 = torch.distributions.Normal(model.qy0_mean, model.qy0_logstd.exp())
                py0 = torch.distributions.Normal(model.py0_mean, torch.ones_like(model.py0_mean))
                logqp0 = torch.distributions.kl_divergence(qy0, py0).sum()
                ys, logqp_path = torchsde.sdeint(model, y0, ts, method=method, dt=0.05, logqp=True)
                lik = torch.distributions.Normal(ys, 0.1).log_prob(ys_obs).sum(0).mean()
                loss = -lik + logqp0 + logqp_path.sum(0).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                print(f"{method} {i}: loss {loss.item():.3f} kl {logqp_path.sum(0).mean().item():.3f}")
        out = []
        with torch.no_grad():
            y0 = torch.randn(B, D, device=dev)
            runs = [(("diagonal", "ito"), m, {}) for m in ("euler", "milstein", "srk")]
            runs += [(("diagonal", "ito"), "milstein", {"options": {"grad_free": True}})]
            runs += [(("additive", "ito"), m, {}) for m in ("euler", "srk")]
            runs += [(("general", "ito"), "euler", {}), (("scalar", "ito"), "euler", {})]
            runs += [(("diagonal", "stratonovich"), m, {}) for m in ("heun", "midpoint", "log_ode", "reversible_heun")]
            runs += [(("general", "stratonovich"), "midpoint", {})]
            for key, method, kw in runs:
                sde = sdes[key]
                m = sde.m if key[0] in ("general", "additive") else (1 if key[0] == "scalar" else D)
                for bm in (torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(B, m), device=dev,
                                                     levy_area_approximation="space-time"),
                           torchsde.BrownianPath(t0=0.0, w0=torch.zeros(B, m, device=dev)),
                           torchsde.BrownianTree(t0=0.0, t1=1.0, w0=torch.zeros(B, m, device=dev), tol=1e-3)):
                    try:
                        ys = torchsde.sdeint(sde, y0, ts, bm=bm, method=method, dt=0.1, **kw)
                    except ValueError as e:  # a solver that needs Levy area the BM lacks: skipped like a user would
                        print(key, method, type(bm).__name__, "skipped:", e)
                        continue
                    out.append(ys[-1].mean())
            ys = torchsde.sdeint(renamed, y0, ts, method="euler", dt=0.1, names={"drift": "drift", "diffusion": "diffusion"})
        return torch.stack(out).sum().item() + ys.mean().item()

    return run
