"""botorch: Bayesian optimization loops on the GPU the way its tutorials run them (closed-loop
BO with qLogNEI/qLogEI/UCB, multi-objective qLogNEHVI, knowledge gradient, batch and constrained
acquisition, fully-synthetic test functions), with tiny budgets: fit_gpytorch_mll (scipy L-BFGS-B
and the torch optimizer), optimize_acqf with raw samples and restarts, input/outcome transforms,
posterior sampling. Nothing downloaded."""

import os
import warnings

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import botorch

    return os.path.dirname(os.path.realpath(botorch.__file__))


def _tkw(ctx):
    return {"dtype": torch.double, "device": ctx.device}


def _fit(mll, torch_opt=False):
    from botorch.fit import fit_gpytorch_mll

    if torch_opt:
        from botorch.optim.fit import fit_gpytorch_mll_torch

        return fit_gpytorch_mll(mll, optimizer=fit_gpytorch_mll_torch, optimizer_kwargs={"step_limit": 20})
    return fit_gpytorch_mll(mll, optimizer_kwargs={"options": {"maxiter": 25}})


@scenario
def closed_loop(ctx):
    """The closed-loop tutorial on Hartmann6 with a constraint: SingleTaskGP with Normalize and
    Standardize, fit_gpytorch_mll, qLogNoisyExpectedImprovement / qLogExpectedImprovement with
    SobolQMCNormalSampler and a constraint, UpperConfidenceBound and LogExpectedImprovement
    (analytic), optimize_acqf (sequential and joint), best observed value logged per iteration;
    then the model's posterior, condition_on_observations and fantasize."""
    from botorch.acquisition import LogExpectedImprovement, UpperConfidenceBound
    from botorch.acquisition.logei import qLogExpectedImprovement, qLogNoisyExpectedImprovement
    from botorch.acquisition.objective import GenericMCObjective
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize
    from botorch.optim import optimize_acqf
    from botorch.sampling.normal import SobolQMCNormalSampler
    from botorch.test_functions import Hartmann
    from botorch.utils.sampling import draw_sobol_samples
    from gpytorch.mlls import ExactMarginalLogLikelihood

    tkw = _tkw(ctx)
    neg_hartmann6 = Hartmann(negate=True).to(**tkw)
    bounds = torch.tensor([[0.0] * 6, [1.0] * 6], **tkw)

    def outcome_constraint(X):
        return X.sum(dim=-1) - 3

    def run():
        torch.manual_seed(0)
        train_x = draw_sobol_samples(bounds, n=10, q=1, seed=0).squeeze(1)
        train_obj = neg_hartmann6(train_x).unsqueeze(-1)
        train_con = outcome_constraint(train_x).unsqueeze(-1)
        best = []
        for it in range(2):
            model = SingleTaskGP(train_x, torch.cat([train_obj, train_con], -1), input_transform=Normalize(d=6),
                                 outcome_transform=Standardize(m=2))
            mll = ExactMarginalLogLikelihood(model.likelihood, model)
            _fit(mll)
            sampler = SobolQMCNormalSampler(sample_shape=torch.Size([64]))
            obj = GenericMCObjective(lambda Z, X=None: Z[..., 0])
            acq = qLogNoisyExpectedImprovement(model=model, X_baseline=train_x, sampler=sampler, objective=obj,
                                               constraints=[lambda Z: Z[..., 1]], prune_baseline=True)
            cand, val = optimize_acqf(acq, bounds=bounds, q=2, num_restarts=4, raw_samples=64,
                                      options={"batch_limit": 5, "maxiter": 20})
            new_obj = neg_hartmann6(cand).unsqueeze(-1)
            train_x = torch.cat([train_x, cand])
            train_obj = torch.cat([train_obj, new_obj])
            train_con = torch.cat([train_con, outcome_constraint(cand).unsqueeze(-1)])
            feasible = train_obj[train_con <= 0]
            best.append(feasible.max().item() if feasible.numel() else float("nan"))
            print(f"iteration {it}: best feasible {best[-1]:.3f}, acq {val.item():.3f}")
        model = SingleTaskGP(train_x, train_obj, input_transform=Normalize(d=6), outcome_transform=Standardize(m=1))
        _fit(ExactMarginalLogLikelihood(model.likelihood, model), torch_opt=True)
        for acq in [qLogExpectedImprovement(model, best_f=train_obj.max()),
                    UpperConfidenceBound(model, beta=0.2), LogExpectedImprovement(model, best_f=train_obj.max())]:
            q = 1 if not isinstance(acq, qLogExpectedImprovement) else 3
            cand, val = optimize_acqf(acq, bounds=bounds, q=q, num_restarts=3, raw_samples=32,
                                      sequential=q > 1, options={"maxiter": 15})
        post = model.posterior(cand)
        post.mean, post.variance, post.rsample(torch.Size([4]))
        model.condition_on_observations(cand, neg_hartmann6(cand).unsqueeze(-1))
        fm = model.fantasize(cand, SobolQMCNormalSampler(sample_shape=torch.Size([4])))
        fm.posterior(train_x[:3]).mean
        return best

    return run


@scenario
def multi_objective(ctx):
    """The multi-objective tutorial on BraninCurrin: ModelListGP of SingleTaskGPs, qLogNoisyExpected
    HypervolumeImprovement with a reference point, optimize_acqf (sequential), hypervolume of the
    Pareto front per iteration (is_non_dominated, Hypervolume, FastNondominatedPartitioning);
    qLogExpectedHypervolumeImprovement with a NondominatedPartitioning; ParEGO-style random scalarization."""
    from botorch.acquisition.multi_objective.logei import (qLogExpectedHypervolumeImprovement,
                                                          qLogNoisyExpectedHypervolumeImprovement)
    from botorch.acquisition.logei import qLogNoisyExpectedImprovement
    from botorch.acquisition.objective import GenericMCObjective
    from botorch.models import ModelListGP, SingleTaskGP
    from botorch.models.transforms.outcome import Standardize
    from botorch.optim import optimize_acqf
    from botorch.sampling.normal import SobolQMCNormalSampler
    from botorch.test_functions.multi_objective import BraninCurrin
    from botorch.utils.multi_objective.box_decompositions.dominated import DominatedPartitioning
    from botorch.utils.multi_objective.box_decompositions.non_dominated import (FastNondominatedPartitioning,
                                                                                NondominatedPartitioning)
    from botorch.utils.multi_objective.hypervolume import Hypervolume
    from botorch.utils.multi_objective.pareto import is_non_dominated
    from botorch.utils.multi_objective.scalarization import get_chebyshev_scalarization
    from botorch.utils.sampling import draw_sobol_samples, sample_simplex
    from botorch.utils.transforms import normalize, unnormalize
    from gpytorch.mlls.sum_marginal_log_likelihood import SumMarginalLogLikelihood

    tkw = _tkw(ctx)
    problem = BraninCurrin(negate=True).to(**tkw)
    std_bounds = torch.zeros(2, problem.dim, **tkw)
    std_bounds[1] = 1

    def init_model(train_x, train_obj):
        train_x = normalize(train_x, problem.bounds)
        models = [SingleTaskGP(train_x, train_obj[..., i: i + 1], outcome_transform=Standardize(m=1))
                  for i in range(train_obj.shape[-1])]
        model = ModelListGP(*models)
        return SumMarginalLogLikelihood(model.likelihood, model), model

    def run():
        torch.manual_seed(0)
        train_x = draw_sobol_samples(bounds=problem.bounds, n=8, q=1, seed=1).squeeze(1)
        train_obj = problem(train_x)
        hv = Hypervolume(ref_point=problem.ref_point)
        for it in range(2):
            mll, model = init_model(train_x, train_obj)
            _fit(mll)
            sampler = SobolQMCNormalSampler(sample_shape=torch.Size([32]))
            acq = qLogNoisyExpectedHypervolumeImprovement(model=model, ref_point=problem.ref_point.tolist(),
                                                          X_baseline=normalize(train_x, problem.bounds),
                                                          prune_baseline=True, sampler=sampler)
            cand, _ = optimize_acqf(acq, bounds=std_bounds, q=2, num_restarts=3, raw_samples=32,
                                    options={"batch_limit": 5, "maxiter": 15}, sequential=True)
            new_x = unnormalize(cand.detach(), bounds=problem.bounds)
            train_x, train_obj = torch.cat([train_x, new_x]), torch.cat([train_obj, problem(new_x)])
            pareto_mask = is_non_dominated(train_obj)
            volume = hv.compute(train_obj[pareto_mask])
            bd = DominatedPartitioning(ref_point=problem.ref_point, Y=train_obj)
            print(f"iteration {it}: hypervolume {volume:.3f} / {bd.compute_hypervolume().item():.3f}")
        with torch.no_grad():
            pred = model.posterior(normalize(train_x, problem.bounds)).mean
        for part in (FastNondominatedPartitioning(ref_point=problem.ref_point, Y=pred),
                     NondominatedPartitioning(ref_point=problem.ref_point, Y=pred)):
            acq = qLogExpectedHypervolumeImprovement(model=model, ref_point=problem.ref_point.tolist(),
                                                     partitioning=part,
                                                     sampler=SobolQMCNormalSampler(sample_shape=torch.Size([16])))
            optimize_acqf(acq, bounds=std_bounds, q=1, num_restarts=2, raw_samples=16, options={"maxiter": 10})
        weights = sample_simplex(problem.num_objectives, **tkw).squeeze()
        objective = GenericMCObjective(get_chebyshev_scalarization(weights=weights, Y=pred))
        acq = qLogNoisyExpectedImprovement(model=model, objective=objective, X_baseline=normalize(train_x, problem.bounds),
                                           sampler=SobolQMCNormalSampler(sample_shape=torch.Size([16])),
                                           prune_baseline=True)
        optimize_acqf(acq, bounds=std_bounds, q=1, num_restarts=2, raw_samples=16, options={"maxiter": 10})

    return run


@scenario
def kg_batch_and_models(ctx):
    """qKnowledgeGradient (one-shot, optimize_acqf with its fantasy restarts), qUpperConfidenceBound
    and qSimpleRegret with batch_initial_conditions, qMaxValueEntropy over a candidate set,
    PosteriorMean, optimize_acqf_mixed / optimize_acqf_discrete; models: MultiTaskGP,
    MixedSingleTaskGP, a batched multi-output SingleTaskGP, SingleTaskVariationalGP trained with
    fit_gpytorch_mll_torch; get_best_candidates and the Branin/Ackley/Rosenbrock/Levy test functions."""
    from botorch.acquisition import (PosteriorMean, qKnowledgeGradient, qSimpleRegret, qUpperConfidenceBound)
    from botorch.acquisition.max_value_entropy_search import qMaxValueEntropy
    from botorch.models import MixedSingleTaskGP, MultiTaskGP, SingleTaskGP
    from botorch.models.approximate_gp import SingleTaskVariationalGP
    from botorch.models.transforms import Normalize, Standardize
    from botorch.optim import optimize_acqf, optimize_acqf_discrete, optimize_acqf_mixed
    from botorch.optim.initializers import gen_batch_initial_conditions
    from botorch.test_functions import Ackley, Branin, Levy, Rosenbrock
    from gpytorch.mlls import ExactMarginalLogLikelihood, VariationalELBO

    tkw = _tkw(ctx)
    branin = Branin(negate=True).to(**tkw)

    def run():
        torch.manual_seed(0)
        X = torch.rand(12, 2, **tkw) * (branin.bounds[1] - branin.bounds[0]) + branin.bounds[0]
        Y = branin(X).unsqueeze(-1)
        model = SingleTaskGP(X, Y, input_transform=Normalize(d=2, bounds=branin.bounds),
                             outcome_transform=Standardize(m=1))
        _fit(ExactMarginalLogLikelihood(model.likelihood, model))
        kg = qKnowledgeGradient(model, num_fantasies=8)
        cand, val = optimize_acqf(kg, bounds=branin.bounds, q=1, num_restarts=2, raw_samples=16,
                                  options={"maxiter": 10})
        print("KG", cand.tolist(), val.item())
        ucb = qUpperConfidenceBound(model, beta=0.1)
        ics = gen_batch_initial_conditions(ucb, branin.bounds, q=2, num_restarts=3, raw_samples=32)
        optimize_acqf(ucb, bounds=branin.bounds, q=2, num_restarts=3, batch_initial_conditions=ics,
                      options={"maxiter": 10})
        optimize_acqf(qSimpleRegret(model), bounds=branin.bounds, q=2, num_restarts=2, raw_samples=16,
                      options={"maxiter": 10})
        cs = torch.rand(100, 2, **tkw) * (branin.bounds[1] - branin.bounds[0]) + branin.bounds[0]
        mes = qMaxValueEntropy(model, candidate_set=cs, num_mv_samples=4)
        optimize_acqf(mes, bounds=branin.bounds, q=1, num_restarts=2, raw_samples=16, options={"maxiter": 10})
        optimize_acqf(PosteriorMean(model), bounds=branin.bounds, q=1, num_restarts=2, raw_samples=16,
                      options={"maxiter": 10})
        optimize_acqf_discrete(ucb, q=2, choices=cs[:30])
        optimize_acqf_mixed(ucb, bounds=branin.bounds, q=1, num_restarts=2, raw_samples=16,
                            fixed_features_list=[{0: -5.0}, {0: 0.0}], options={"maxiter": 10})
        # multi-task
        task = torch.randint(0, 2, (12, 1), device=ctx.device).to(torch.double)
        mt = MultiTaskGP(torch.cat([X, task], -1), Y, task_feature=-1, outcome_transform=Standardize(m=1))
        _fit(ExactMarginalLogLikelihood(mt.likelihood, mt))
        mt.posterior(X[:4], output_indices=[0, 1]).mean
        # mixed categorical
        Xm = torch.cat([torch.rand(12, 2, **tkw), torch.randint(0, 3, (12, 1), device=ctx.device).double()], -1)
        mixed = MixedSingleTaskGP(Xm, Y, cat_dims=[2])
        _fit(ExactMarginalLogLikelihood(mixed.likelihood, mixed))
        mixed.posterior(Xm[:3]).variance
        # batched multi-output with test functions
        fs = [Ackley(dim=2).to(**tkw), Rosenbrock(dim=2).to(**tkw), Levy(dim=2).to(**tkw)]
        Xu = torch.rand(10, 2, **tkw)
        Ys = torch.stack([f(f.bounds[0] + Xu * (f.bounds[1] - f.bounds[0])) for f in fs], -1)
        mo = SingleTaskGP(Xu, Ys, outcome_transform=Standardize(m=3))
        _fit(ExactMarginalLogLikelihood(mo.likelihood, mo))
        mo.posterior(Xu[:2]).mean
        # variational
        vgp = SingleTaskVariationalGP(Xu, Ys[:, :1], inducing_points=6)
        mll = VariationalELBO(vgp.likelihood, vgp.model, num_data=10)
        _fit(mll, torch_opt=True)
        vgp.posterior(Xu[:2]).mean

    return run
