"""gpytorch: Gaussian-process regression and classification on the GPU the way its tutorials do it
(examples/01_Exact_GPs, 04_Variational_and_Approximate_GPs, 06_PyTorch_NN_Integration_DKL,
02_Scalable_Exact_GPs, 03_Multitask_Exact_GPs): Adam on the negative marginal log likelihood with
loss.item() and hyperparameters printed, eval with fast_pred_var, confidence regions; Cholesky and
CG/Lanczos paths; SVGP, natural gradients, classification, deep kernel learning with KISS-GP, and
a zoo of kernels. Synthetic data, nothing downloaded."""

import math
import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import gpytorch

    return os.path.dirname(os.path.realpath(gpytorch.__file__))


def _data(dev, n=100, d=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g)
    y = torch.sin(x.sum(-1) * (2 * math.pi)) + 0.2 * torch.randn(n, generator=g)
    return x.to(dev), y.to(dev)


@scenario
def exact_regression(ctx):
    """Simple GP regression (ScaleKernel(RBF), GaussianLikelihood, ExactMarginalLogLikelihood), trained
    with Adam printing loss and lengthscale/noise per iteration; predictive distribution with
    fast_pred_var, confidence_region; the same with max_cholesky_size(0) (CG, Lanczos); fixed-noise
    likelihood; multitask GP (MultitaskKernel, MultitaskGaussianLikelihood); batch-independent GP."""
    import gpytorch

    dev = ctx.device
    train_x, train_y = _data(dev, 100)
    test_x = torch.linspace(0, 1, 51, device=dev).unsqueeze(-1)

    class ExactGPModel(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood, kernel=None):
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = kernel or gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    class MultitaskGPModel(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.MultitaskMean(gpytorch.means.ConstantMean(), num_tasks=2)
            self.covar_module = gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), num_tasks=2, rank=1)

        def forward(self, x):
            return gpytorch.distributions.MultitaskMultivariateNormal(self.mean_module(x), self.covar_module(x))

    class BatchIndependentGP(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=torch.Size([2]))
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(batch_shape=torch.Size([2])),
                                                             batch_shape=torch.Size([2]))

        def forward(self, x):
            return gpytorch.distributions.MultitaskMultivariateNormal.from_batch_mvn(
                gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x)))

    def fit(model, likelihood, x, y, iters=8):
        model.train(); likelihood.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
        for i in range(iters):
            optimizer.zero_grad()
            output = model(x)
            loss = -mll(output, y)
            loss.backward()
            if hasattr(model.covar_module, "base_kernel") and model.covar_module.base_kernel.lengthscale.numel() == 1 \
                    and model.likelihood.noise.numel() == 1:
                print("Iter %d/%d - Loss: %.3f   lengthscale: %.3f   noise: %.3f" % (
                    i + 1, iters, loss.item(), model.covar_module.base_kernel.lengthscale.item(),
                    model.likelihood.noise.item()))
            else:
                print("Iter %d/%d - Loss: %.3f" % (i + 1, iters, loss.item()))
            optimizer.step()

    def predict(model, likelihood, x):
        model.eval(); likelihood.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            observed_pred = likelihood(model(x))
            lower, upper = observed_pred.confidence_region()
            return observed_pred.mean, lower, upper, observed_pred.variance

    def run():
        torch.manual_seed(0)
        lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
        model = ExactGPModel(train_x, train_y, lik).to(dev)
        fit(model, lik, train_x, train_y)
        predict(model, lik, test_x)
        with gpytorch.settings.max_cholesky_size(0), gpytorch.settings.cg_tolerance(1e-2):
            lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
            model = ExactGPModel(train_x, train_y, lik).to(dev)
            fit(model, lik, train_x, train_y, iters=4)
            predict(model, lik, test_x)
            with gpytorch.settings.fast_pred_samples():
                model(test_x).rsample(torch.Size([4]))
        lik = gpytorch.likelihoods.FixedNoiseGaussianLikelihood(noise=torch.full_like(train_y, 0.04),
                                                                learn_additional_noise=True).to(dev)
        model = ExactGPModel(train_x, train_y, lik,
                             gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))).to(dev)
        fit(model, lik, train_x, train_y, iters=4)
        model.eval(); lik.eval()
        with torch.no_grad():
            lik(model(test_x), noise=torch.full((51,), 0.04, device=dev)).mean
        ty = torch.stack([train_y, torch.cos(train_x[:, 0] * 2 * math.pi)], -1)
        lik = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2).to(dev)
        model = MultitaskGPModel(train_x, ty, lik).to(dev)
        fit(model, lik, train_x, ty, iters=4)
        predict(model, lik, test_x)
        lik = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2).to(dev)
        model = BatchIndependentGP(train_x, ty, lik).to(dev)
        fit(model, lik, train_x, ty, iters=4)
        predict(model, lik, test_x)
        # fantasy updates (get_fantasy_model) after a prediction cache exists
        model = ExactGPModel(train_x, train_y, gpytorch.likelihoods.GaussianLikelihood().to(dev)).to(dev)
        model.eval()
        with torch.no_grad():
            model(test_x)
            fm = model.get_fantasy_model(test_x[:3], torch.zeros(3, device=dev))
            fm(test_x).mean

    return run


@scenario
def variational(ctx):
    """SVGP (VariationalStrategy with learned inducing points, CholeskyVariationalDistribution,
    VariationalELBO) trained on mini-batches from a DataLoader with loss.item() per batch;
    natural-gradient SVGP (NaturalVariationalDistribution, NGD + Adam); GP classification
    (BernoulliLikelihood, PredictiveLogLikelihood); whitened/unwhitened strategies, mean-field,
    IndependentMultitaskVariationalStrategy, LMC."""
    import gpytorch

    dev = ctx.device
    train_x, train_y = _data(dev, 256, d=2)
    test_x, test_y = _data(dev, 64, d=2, seed=1)

    class GPModel(gpytorch.models.ApproximateGP):
        def __init__(self, inducing_points, vd_cls=gpytorch.variational.CholeskyVariationalDistribution,
                     strategy="vs"):
            vd = vd_cls(inducing_points.size(-2))
            if strategy == "vs":
                vs = gpytorch.variational.VariationalStrategy(self, inducing_points, vd, learn_inducing_locations=True)
            elif strategy == "unwhitened":
                vs = gpytorch.variational.UnwhitenedVariationalStrategy(self, inducing_points, vd,
                                                                        learn_inducing_locations=True)
            super().__init__(vs)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=2))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    class MultitaskSVGP(gpytorch.models.ApproximateGP):
        def __init__(self, num_latents=3, num_tasks=2, lmc=True):
            inducing_points = torch.rand(num_latents if lmc else num_tasks, 16, 2)
            bs = torch.Size([num_latents if lmc else num_tasks])
            vd = gpytorch.variational.CholeskyVariationalDistribution(16, batch_shape=bs)
            base = gpytorch.variational.VariationalStrategy(self, inducing_points, vd, learn_inducing_locations=True)
            if lmc:
                vs = gpytorch.variational.LMCVariationalStrategy(base, num_tasks=num_tasks, num_latents=num_latents,
                                                                 latent_dim=-1)
            else:
                vs = gpytorch.variational.IndependentMultitaskVariationalStrategy(base, num_tasks=num_tasks)
            super().__init__(vs)
            self.mean_module = gpytorch.means.ConstantMean(batch_shape=bs)
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(batch_shape=bs), batch_shape=bs)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y), batch_size=64, shuffle=True)

    def train(model, likelihood, mll, optimizers, y_fn=lambda y: y, epochs=2):
        model.train(); likelihood.train()
        for epoch in range(epochs):
            for x_batch, y_batch in loader:
                for o in optimizers:
                    o.zero_grad()
                output = model(x_batch)
                loss = -mll(output, y_fn(y_batch))
                print(f"epoch {epoch} loss {loss.item():.3f}")
                loss.backward()
                for o in optimizers:
                    o.step()
        model.eval(); likelihood.eval()
        means = []
        with torch.no_grad():
            for x_batch in test_x.split(32):
                preds = likelihood(model(x_batch))
                means.append(preds.mean.cpu())
        return torch.cat(means)

    def run():
        torch.manual_seed(0)
        for vd_cls, strategy in [(gpytorch.variational.CholeskyVariationalDistribution, "vs"),
                                 (gpytorch.variational.MeanFieldVariationalDistribution, "vs"),
                                 (gpytorch.variational.CholeskyVariationalDistribution, "unwhitened")]:
            model = GPModel(train_x[:32].clone(), vd_cls, strategy).to(dev)
            lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
            opt = torch.optim.Adam([{"params": model.parameters()}, {"params": lik.parameters()}], lr=0.01)
            mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=train_y.size(0))
            means = train(model, lik, mll, [opt])
            print("Test MAE:", torch.mean(torch.abs(means - test_y.cpu())).item())
        # natural gradient descent
        model = GPModel(train_x[:32].clone(), gpytorch.variational.NaturalVariationalDistribution).to(dev)
        lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
        vopt = gpytorch.optim.NGD(model.variational_parameters(), num_data=train_y.size(0), lr=0.1)
        hopt = torch.optim.Adam([{"params": model.hyperparameters()}, {"params": lik.parameters()}], lr=0.01)
        train(model, lik, gpytorch.mlls.VariationalELBO(lik, model, num_data=train_y.size(0)), [vopt, hopt])
        # classification
        model = GPModel(train_x[:32].clone()).to(dev)
        lik = gpytorch.likelihoods.BernoulliLikelihood().to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        mll = gpytorch.mlls.PredictiveLogLikelihood(lik, model, num_data=train_y.size(0))
        pm = train(model, lik, mll, [opt], y_fn=lambda y: (y > 0).float(), epochs=1)
        print("accuracy", ((pm > 0.5).float() == (test_y.cpu() > 0).float()).float().mean().item())
        # multitask variational
        ty = torch.stack([train_y, -train_y], -1)
        for lmc in (True, False):
            model = MultitaskSVGP(lmc=lmc).to(dev)
            lik = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2).to(dev)
            opt = torch.optim.Adam([{"params": model.parameters()}, {"params": lik.parameters()}], lr=0.05)
            mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=train_y.size(0))
            model.train(); lik.train()
            for x_batch, y_batch in loader:
                opt.zero_grad()
                loss = -mll(model(x_batch), torch.stack([y_batch, -y_batch], -1))
                loss.backward()
                opt.step()
            model.eval(); lik.eval()
            with torch.no_grad():
                lik(model(test_x)).confidence_region()

    return run


@scenario
def dkl_and_kernels(ctx):
    """Deep kernel learning (a feature extractor, GridInterpolationKernel over scaled features,
    SGD on NN and GP parameters together), KISS-GP in 1-D, the SpectralMixture kernel initialised
    from data, and a few training steps of an exact GP with each of 14 kernels (Matern 1/2, 3/2,
    Periodic, RQ, Linear, Polynomial, PiecewisePolynomial, RFF, additive and product
    structures, AdditiveStructureKernel, ScaleKernel of sums and products, InducingPointKernel)."""
    import gpytorch

    dev = ctx.device
    train_x, train_y = _data(dev, 120, d=2)
    test_x, _ = _data(dev, 40, d=2, seed=2)

    class FE(torch.nn.Sequential):
        def __init__(self):
            super().__init__(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))

    class DKL(gpytorch.models.ExactGP):
        def __init__(self, x, y, lik):
            super().__init__(x, y, lik)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.GridInterpolationKernel(
                gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=2)), num_dims=2, grid_size=16)
            self.feature_extractor = FE()
            self.scale_to_bounds = gpytorch.utils.grid.ScaleToBounds(-1.0, 1.0)

        def forward(self, x):
            z = self.scale_to_bounds(self.feature_extractor(x))
            return gpytorch.distributions.MultivariateNormal(self.mean_module(z), self.covar_module(z))

    class GP(gpytorch.models.ExactGP):
        def __init__(self, x, y, lik, kernel, mean=None):
            super().__init__(x, y, lik)
            self.mean_module = mean or gpytorch.means.ConstantMean()
            self.covar_module = kernel

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    def kernels():
        K = gpytorch.kernels
        return {
            "matern12": K.ScaleKernel(K.MaternKernel(nu=0.5)),
            "matern32_ard": K.ScaleKernel(K.MaternKernel(nu=1.5, ard_num_dims=2)),
            "periodic": K.ScaleKernel(K.PeriodicKernel()),
            "rq": K.ScaleKernel(K.RQKernel()),
            "linear": K.LinearKernel(),
            "poly": K.PolynomialKernel(power=2),
            "piecewise": K.PiecewisePolynomialKernel(q=2),
            "rff": K.ScaleKernel(K.RFFKernel(num_samples=64)),
            "sum_prod": K.ScaleKernel(K.RBFKernel(active_dims=[0]) * K.PeriodicKernel(active_dims=[1]))
            + K.ScaleKernel(K.LinearKernel()),
            "additive_struct": K.ScaleKernel(K.AdditiveStructureKernel(K.RBFKernel(), num_dims=2)),
            "product_struct": K.ProductStructureKernel(K.ScaleKernel(K.RBFKernel()), num_dims=2),
            "spectral_mixture": K.SpectralMixtureKernel(num_mixtures=3, ard_num_dims=2),
            "inducing": K.InducingPointKernel(K.ScaleKernel(K.RBFKernel()), inducing_points=train_x[:16].clone(),
                                              likelihood=None),
            "rbf_grad_free_linear_mean": K.ScaleKernel(K.RBFKernel()),
        }

    def run():
        torch.manual_seed(0)
        lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
        model = DKL(train_x, train_y, lik).to(dev)
        opt = torch.optim.Adam([{"params": model.feature_extractor.parameters()},
                                {"params": model.covar_module.parameters()},
                                {"params": model.mean_module.parameters()},
                                {"params": model.likelihood.parameters()}], lr=0.01)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
        model.train(); lik.train()
        for i in range(4):
            opt.zero_grad()
            loss = -mll(model(train_x), train_y)
            loss.backward()
            print("Iter %d - Loss: %.3f" % (i + 1, loss.item()))
            opt.step()
        model.eval(); lik.eval()
        with torch.no_grad(), gpytorch.settings.use_toeplitz(False), gpytorch.settings.fast_pred_var():
            lik(model(test_x)).mean
        # KISS-GP 1-D
        x1 = torch.linspace(0, 1, 200, device=dev)
        y1 = torch.sin(x1 * 6)
        kiss = gpytorch.kernels.ScaleKernel(gpytorch.kernels.GridInterpolationKernel(
            gpytorch.kernels.RBFKernel(), grid_size=gpytorch.utils.grid.choose_grid_size(x1, 1.0), num_dims=1))
        lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
        model = GP(x1, y1, lik, kiss).to(dev)
        model.train(); lik.train()
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
        for i in range(3):
            opt.zero_grad()
            loss = -mll(model(x1), y1)
            loss.backward()
            opt.step()
        model.eval(); lik.eval()
        with torch.no_grad(), gpytorch.settings.fast_pred_var():
            lik(model(x1[:50] + 0.001)).confidence_region()
        # kernel zoo
        for name, k in kernels().items():
            print('kernel', name)
            lik = gpytorch.likelihoods.GaussianLikelihood().to(dev)
            if name == "inducing":
                k.likelihood = lik
            mean = gpytorch.means.LinearMean(2) if name.endswith("linear_mean") else None
            model = GP(train_x, train_y, lik, k, mean).to(dev)
            if name == "spectral_mixture":
                model.covar_module.initialize_from_data(train_x, train_y)
            opt = torch.optim.Adam(model.parameters(), lr=0.05)
            mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
            model.train(); lik.train()
            for i in range(2):
                opt.zero_grad()
                loss = -mll(model(train_x), train_y)
                loss.backward()
                opt.step()
            print(name, loss.item())
            model.eval(); lik.eval()
            with torch.no_grad():
                lik(model(test_x)).mean

    return run
