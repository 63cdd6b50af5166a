"""pyro (pyro-ppl): probabilistic programs on the GPU the way its tutorials run them: SVI with
autoguides and hand-written guides (Trace_ELBO, TraceMeanField_ELBO, TraceGraph_ELBO,
TraceEnum_ELBO with enumerated discrete sites), pyro.optim Adam/ClippedAdam and schedulers,
Predictive, a Bayesian neural network (PyroModule), a Gaussian mixture, a variational autoencoder,
and MCMC (HMC, NUTS) with few samples. Synthetic data, nothing downloaded."""

import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import pyro

    return os.path.dirname(os.path.realpath(pyro.__file__))


def _regression_data(dev, n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 + 0.1 * torch.randn(n, generator=g)
    return x.to(dev), y.to(dev)


@scenario
def svi_regression_bnn(ctx):
    """Bayesian regression (the 'Bayesian Regression' tutorial): a PyroModule with PyroSample priors,
    AutoNormal / AutoDiagonalNormal / AutoMultivariateNormal / AutoLowRankMultivariateNormal /
    AutoDelta guides, SVI with Trace_ELBO and TraceMeanField_ELBO, Adam and ClippedAdam, loss logged
    every step, guide.quantiles/median, Predictive over the guide with return_sites, a hand-written
    guide with pyro.param constraints, and a BNN with a StepLR scheduler and TraceGraph_ELBO."""
    import pyro
    import pyro.distributions as dist
    from pyro.infer import SVI, Predictive, Trace_ELBO, TraceGraph_ELBO, TraceMeanField_ELBO
    from pyro.infer.autoguide import (AutoDelta, AutoDiagonalNormal, AutoLowRankMultivariateNormal,
                                      AutoMultivariateNormal, AutoNormal)
    from pyro.nn import PyroModule, PyroSample
    from torch.distributions import constraints

    dev = ctx.device
    x, y = _regression_data(dev)

    class BayesianRegression(PyroModule):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.linear = PyroModule[torch.nn.Linear](in_features, out_features)
            self.linear.weight = PyroSample(dist.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev))
                                            .expand([out_features, in_features]).to_event(2))
            self.linear.bias = PyroSample(dist.Normal(torch.tensor(0.0, device=dev), torch.tensor(10.0, device=dev))
                                          .expand([out_features]).to_event(1))

        def forward(self, x, y=None):
            sigma = pyro.sample("sigma", dist.Uniform(torch.tensor(0.0, device=dev), torch.tensor(10.0, device=dev)))
            mean = self.linear(x).squeeze(-1)
            with pyro.plate("data", x.shape[0]):
                pyro.sample("obs", dist.Normal(mean, sigma), obs=y)
            return mean

    class BNN(PyroModule):
        def __init__(self, h=16):
            super().__init__()
            z, o = torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)
            self.l1 = PyroModule[torch.nn.Linear](3, h)
            self.l1.weight = PyroSample(dist.Normal(z, o).expand([h, 3]).to_event(2))
            self.l1.bias = PyroSample(dist.Normal(z, o).expand([h]).to_event(1))
            self.l2 = PyroModule[torch.nn.Linear](h, 1)
            self.l2.weight = PyroSample(dist.Normal(z, o).expand([1, h]).to_event(2))
            self.l2.bias = PyroSample(dist.Normal(z, o).expand([1]).to_event(1))

        def forward(self, x, y=None):
            mu = self.l2(torch.relu(self.l1(x))).squeeze(-1)
            sigma = pyro.sample("sigma", dist.Gamma(torch.tensor(0.5, device=dev), torch.tensor(1.0, device=dev)))
            with pyro.plate("data", x.shape[0]):
                pyro.sample("obs", dist.Normal(mu, sigma * sigma), obs=y)
            return mu

    def model_fn(x, y=None):
        w = pyro.sample("w", dist.Normal(torch.zeros(3, device=dev), torch.ones(3, device=dev)).to_event(1))
        b = pyro.sample("b", dist.Normal(torch.tensor(0.0, device=dev), torch.tensor(5.0, device=dev)))
        s = pyro.sample("s", dist.HalfCauchy(torch.tensor(1.0, device=dev)))
        with pyro.plate("data", x.shape[0], subsample_size=64) as idx:
            pyro.sample("obs", dist.Normal(x[idx] @ w + b, s), obs=y[idx])

    def guide_fn(x, y=None):
        w_loc = pyro.param("w_loc", torch.zeros(3, device=dev))
        w_scale = pyro.param("w_scale", torch.ones(3, device=dev), constraint=constraints.positive)
        b_loc = pyro.param("b_loc", torch.tensor(0.0, device=dev))
        s_loc = pyro.param("s_loc", torch.tensor(1.0, device=dev), constraint=constraints.positive)
        pyro.sample("w", dist.Normal(w_loc, w_scale).to_event(1))
        pyro.sample("b", dist.Delta(b_loc))
        pyro.sample("s", dist.Delta(s_loc))

    def run():
        pyro.set_rng_seed(0)
        for guide_cls, elbo in [(AutoNormal, Trace_ELBO()), (AutoDiagonalNormal, TraceMeanField_ELBO()),
                                (AutoMultivariateNormal, Trace_ELBO(num_particles=4)),
                                (AutoLowRankMultivariateNormal, Trace_ELBO()), (AutoDelta, Trace_ELBO())]:
            pyro.clear_param_store()
            model = BayesianRegression(3, 1)
            guide = guide_cls(model)
            svi = SVI(model, guide, pyro.optim.Adam({"lr": 0.03}), loss=elbo)
            for j in range(6):
                loss = svi.step(x, y)
                if j % 3 == 0:
                    print("[iteration %04d] loss: %.4f" % (j + 1, loss / len(y)))
            if guide_cls is not AutoDelta:
                guide.quantiles([0.25, 0.5, 0.75])
            guide.median()
            predictive = Predictive(model, guide=guide, num_samples=20, return_sites=("linear.weight", "obs", "_RETURN"))
            samples = predictive(x)
            {k: (v.mean(0), v.std(0)) for k, v in samples.items()}
        pyro.clear_param_store()
        svi = SVI(model_fn, guide_fn, pyro.optim.ClippedAdam({"lr": 0.05, "clip_norm": 5.0, "lrd": 0.99}), Trace_ELBO())
        for j in range(6):
            svi.step(x, y)
        print({k: v.detach().cpu().numpy() for k, v in pyro.get_param_store().items()})
        svi.evaluate_loss(x, y)
        pyro.clear_param_store()
        bnn = BNN()
        guide = AutoDiagonalNormal(bnn)
        sched = pyro.optim.StepLR({"optimizer": torch.optim.Adam, "optim_args": {"lr": 0.01}, "step_size": 3,
                                   "gamma": 0.5})
        svi = SVI(bnn, guide, sched, loss=TraceGraph_ELBO())
        for j in range(6):
            loss = svi.step(x, y)
            sched.step()
        Predictive(bnn, guide=guide, num_samples=10)(x)["obs"].mean(0)

    return run


@scenario
def enum_gmm_vae(ctx):
    """The 'Gaussian Mixture Model' tutorial: config_enumerate, TraceEnum_ELBO with parallel
    enumeration, global/local guides with AutoDelta + poutine.block, gradient norms through
    hooks, infer_discrete for MAP assignments; a hidden-Markov model with markov plates and
    enumeration; the VAE tutorial (pyro.module, encoder/decoder, Bernoulli likelihood, plates),
    evaluated with Trace_ELBO.evaluate_loss; poutine.trace/replay/condition log_prob_sum."""
    import pyro
    import pyro.distributions as dist
    from pyro import poutine
    from pyro.infer import SVI, Trace_ELBO, TraceEnum_ELBO, config_enumerate, infer_discrete
    from pyro.infer.autoguide import AutoDelta, AutoNormal
    from torch.distributions import constraints

    dev = ctx.device
    data = torch.tensor([0.0, 1.0, 10.0, 11.0, 12.0, -1.0, 0.5, 10.5] * 8, device=dev)
    K = 2

    @config_enumerate
    def gmm(data):
        weights = pyro.sample("weights", dist.Dirichlet(0.5 * torch.ones(K, device=dev)))
        scale = pyro.sample("scale", dist.LogNormal(torch.tensor(0.0, device=dev), torch.tensor(2.0, device=dev)))
        with pyro.plate("components", K):
            locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0, device=dev), torch.tensor(10.0, device=dev)))
        with pyro.plate("data", len(data)):
            assignment = pyro.sample("assignment", dist.Categorical(weights))
            pyro.sample("obs", dist.Normal(locs[assignment], scale), obs=data)

    def hmm(sequence, hidden=3):
        probs_x = pyro.param("probs_x", lambda: (torch.eye(hidden, device=dev) * 0.8 + 0.2 / hidden),
                             constraint=constraints.simplex)
        locs_y = pyro.param("locs_y", lambda: torch.arange(hidden, device=dev).float())
        x = 0
        for t in pyro.markov(range(len(sequence))):
            x = pyro.sample(f"x_{t}", dist.Categorical(probs_x[x]), infer={"enumerate": "parallel"})
            pyro.sample(f"y_{t}", dist.Normal(locs_y[x], torch.tensor(1.0, device=dev)), obs=sequence[t])

    class Encoder(torch.nn.Module):
        def __init__(self, z_dim=4, h=32):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = torch.nn.Linear(64, h), torch.nn.Linear(h, z_dim), torch.nn.Linear(h, z_dim)

        def forward(self, x):
            hid = torch.nn.functional.softplus(self.fc1(x))
            return self.fc21(hid), torch.exp(self.fc22(hid))

    class Decoder(torch.nn.Module):
        def __init__(self, z_dim=4, h=32):
            super().__init__()
            self.fc1, self.fc21 = torch.nn.Linear(z_dim, h), torch.nn.Linear(h, 64)

        def forward(self, z):
            return torch.sigmoid(self.fc21(torch.nn.functional.softplus(self.fc1(z))))

    class VAE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()

        def model(self, x):
            pyro.module("decoder", self.decoder)
            with pyro.plate("data", x.shape[0]):
                z_loc = torch.zeros(x.shape[0], 4, device=dev)
                z = pyro.sample("latent", dist.Normal(z_loc, torch.ones_like(z_loc)).to_event(1))
                pyro.sample("obs", dist.Bernoulli(self.decoder(z), validate_args=False).to_event(1), obs=x)

        def guide(self, x):
            pyro.module("encoder", self.encoder)
            with pyro.plate("data", x.shape[0]):
                z_loc, z_scale = self.encoder(x)
                pyro.sample("latent", dist.Normal(z_loc, z_scale).to_event(1))

    def run():
        pyro.set_rng_seed(0)
        pyro.clear_param_store()
        global_guide = AutoDelta(poutine.block(gmm, expose=["weights", "locs", "scale"]))
        elbo = TraceEnum_ELBO(max_plate_nesting=1)
        svi = SVI(gmm, global_guide, pyro.optim.Adam({"lr": 0.1, "betas": [0.8, 0.99]}), loss=elbo)
        gradient_norms = {}
        global_guide(data)
        for name, value in pyro.get_param_store().named_parameters():
            value.register_hook(lambda g, name=name: gradient_norms.setdefault(name, []).append(g.norm().item()))
        losses = [svi.step(data) for _ in range(8)]
        map_estimates = global_guide(data)
        print("weights", map_estimates["weights"].data.cpu().numpy(), "locs", map_estimates["locs"].data.cpu().numpy())
        guide_trace = poutine.trace(global_guide).get_trace(data)
        trained = poutine.replay(gmm, trace=guide_trace)
        inferred = infer_discrete(trained, temperature=0, first_available_dim=-2)
        tr = poutine.trace(inferred).get_trace(data)
        print("assignment", tr.nodes["assignment"]["value"].tolist()[:8])
        tr.log_prob_sum().item()
        # HMM with enumeration over a markov chain
        pyro.clear_param_store()
        seq = torch.cat([torch.zeros(6, device=dev), 2 * torch.ones(6, device=dev)]) + 0.1 * torch.randn(12, device=dev)
        svi = SVI(hmm, lambda s: None, pyro.optim.Adam({"lr": 0.05}), TraceEnum_ELBO(max_plate_nesting=0))
        for _ in range(4):
            svi.step(seq)
        # VAE
        pyro.clear_param_store()
        vae = VAE().to(dev)
        svi = SVI(vae.model, vae.guide, pyro.optim.Adam({"lr": 1e-3}), loss=Trace_ELBO())
        xs = (torch.rand(256, 64, device=dev) > 0.5).float()
        for epoch in range(2):
            epoch_loss = 0.0
            for xb in xs.split(64):
                epoch_loss += svi.step(xb)
            test_loss = sum(svi.evaluate_loss(xb) for xb in xs[:128].split(64))
            print(f"[epoch {epoch}] train loss {epoch_loss / 256:.4f} test loss {test_loss / 128:.4f}")
        cond = poutine.condition(vae.model, data={"latent": torch.zeros(8, 4, device=dev)})
        poutine.trace(cond).get_trace(xs[:8]).log_prob_sum()
        return losses

    return run


@scenario
def mcmc_and_distributions(ctx):
    """MCMC with HMC (fixed steps) and NUTS (small tree depth, step-size and mass-matrix adaptation,
    dense and diagonal) on a logistic regression, MCMC.summary/get_samples, diagnostics
    (effective_sample_size, gelman_rubin, hpdi), Predictive from posterior samples; then sample,
    rsample and log_prob of 25 pyro.distributions on the device and an importance sampler."""
    import pyro
    import pyro.distributions as dist
    from pyro.infer import MCMC, NUTS, HMC, Importance, EmpiricalMarginal, Predictive
    from pyro.ops.stats import effective_sample_size, gelman_rubin, hpdi, quantile

    dev = ctx.device
    g = torch.Generator().manual_seed(0)
    X = torch.randn(100, 3, generator=g).to(dev)
    true_w = torch.tensor([1.0, -1.0, 0.5], device=dev)
    Y = torch.bernoulli(torch.sigmoid(X @ true_w)).to(dev)

    def logreg(X, Y=None):
        w = pyro.sample("w", dist.Normal(torch.zeros(3, device=dev), torch.ones(3, device=dev)).to_event(1))
        b = pyro.sample("b", dist.Normal(torch.tensor(0.0, device=dev), torch.tensor(1.0, device=dev)))
        with pyro.plate("data", X.shape[0]):
            return pyro.sample("y", dist.Bernoulli(logits=X @ w + b), obs=Y)

    def dists():
        z = lambda *s: torch.zeros(*s, device=dev)  # noqa: E731
        o = lambda *s: torch.ones(*s, device=dev)  # noqa: E731
        return [dist.Normal(z(4), o(4)), dist.LogNormal(z(4), o(4)), dist.Gamma(o(4) * 2, o(4)),
                dist.Beta(o(4) * 2, o(4) * 3), dist.Dirichlet(o(4)), dist.Bernoulli(probs=o(4) * 0.3),
                dist.Categorical(logits=z(3, 5)), dist.Poisson(o(4) * 3), dist.Binomial(10, o(4) * 0.4),
                dist.MultivariateNormal(z(3), torch.eye(3, device=dev)), dist.StudentT(3.0, z(4), o(4)),
                dist.Laplace(z(4), o(4)), dist.Exponential(o(4)), dist.Uniform(z(4), o(4)),
                dist.HalfNormal(o(4)), dist.HalfCauchy(o(4)), dist.LKJCholesky(3, torch.tensor(1.0, device=dev)),
                dist.VonMises(z(4), o(4)), dist.ZeroInflatedPoisson(o(4), gate=o(4) * 0.2),
                dist.NegativeBinomial(o(4) * 5, probs=o(4) * 0.3), dist.BetaBinomial(o(4), o(4), total_count=5),
                dist.LowRankMultivariateNormal(z(3), torch.randn(3, 2, device=dev), o(3)),
                dist.OneHotCategorical(logits=z(5)), dist.RelaxedBernoulliStraightThrough(
                    torch.tensor(0.5, device=dev), probs=o(4) * 0.4),
                dist.MixtureSameFamily(dist.Categorical(logits=z(3)), dist.Normal(z(3), o(3)))]

    def run():
        pyro.set_rng_seed(0)
        res = {}
        for kernel in [HMC(logreg, step_size=0.1, num_steps=4, adapt_step_size=True),
                       NUTS(logreg, max_tree_depth=3, adapt_mass_matrix=True),
                       NUTS(logreg, max_tree_depth=3, full_mass=True, jit_compile=False)]:
            mcmc = MCMC(kernel, num_samples=12, warmup_steps=12, disable_progbar=True)
            mcmc.run(X, Y)
            samples = mcmc.get_samples()
            mcmc.summary(prob=0.9)
            res[type(kernel).__name__] = samples["w"].mean(0).tolist()
            grouped = mcmc.get_samples(group_by_chain=True)
            effective_sample_size(grouped["w"]), gelman_rubin(torch.cat([grouped["w"]] * 2, 0))
            hpdi(samples["w"], 0.9), quantile(samples["b"], [0.1, 0.9])
        pred = Predictive(logreg, samples)(X)
        print("accuracy", (pred["y"].mean(0).round() == Y).float().mean().item())
        for d in dists():
            s = d.rsample((5,)) if d.has_rsample else d.sample((5,))
            d.log_prob(s).sum()
            try:
                d.mean, d.variance
            except NotImplementedError:
                pass
        imp = Importance(logreg, guide=None, num_samples=20)
        post = imp.run(X, Y)
        EmpiricalMarginal(post, sites="b").mean
        return res

    return run
