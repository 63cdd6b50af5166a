"""pytorch-tabnet: its README / census notebooks at toy size on synthetic tabular data (nothing
downloaded): TabNetClassifier / TabNetRegressor / TabNetMultiTaskClassifier / TabNetPretrainer
.fit() with eval sets, metrics, early stopping, SMOTE augmentations, schedulers and categorical
embeddings on the GPU (device_name="cuda"), then predict / predict_proba / explain / feature
importances / save_model / load_model."""

import os

import numpy as np
import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import pytorch_tabnet.tab_model  # the wheel has no __init__.py: pytorch_tabnet is a namespace package

    return os.path.dirname(os.path.realpath(pytorch_tabnet.tab_model.__file__))


def _tabular(n=600, seed=0):
    rng = np.random.default_rng(seed)
    cont = rng.normal(size=(n, 6)).astype(np.float32)
    cats = np.stack([rng.integers(0, 5, n), rng.integers(0, 3, n)], 1).astype(np.float32)
    X = np.concatenate([cats, cont], 1)
    logit = cont[:, 0] - 0.5 * cont[:, 1] + (cats[:, 0] == 2)
    y_cls = (logit + rng.normal(0, 0.5, n) > 0).astype(np.int64)
    y_reg = (logit + 0.1 * rng.normal(size=n)).astype(np.float32).reshape(-1, 1)
    y_multi = np.stack([y_cls, (cont[:, 2] > 0).astype(np.int64) + (cont[:, 3] > 1)], 1)
    return X, y_cls, y_reg, y_multi


@scenario
def classifier_fit_predict(ctx):
    """The census-income notebook at toy size: TabNetClassifier with categorical embeddings
    (cat_idxs/cat_dims/cat_emb_dim), Adam + StepLR, fit() with train and valid eval sets and
    eval_metric auc/accuracy/balanced_accuracy/logloss, ClassificationSMOTE, patience, weights=1
    (balanced sampler); predict, predict_proba, explain (masks), feature_importances_, history,
    save_model / load_model and predict again; then TabNetMultiTaskClassifier fit/predict."""
    from pytorch_tabnet.augmentations import ClassificationSMOTE
    from pytorch_tabnet.multitask import TabNetMultiTaskClassifier
    from pytorch_tabnet.tab_model import TabNetClassifier

    dev = ctx.device.type
    X, y, _, ym = _tabular()
    Xtr, ytr, Xva, yva = X[:480], y[:480], X[480:], y[480:]
    common = dict(cat_idxs=[0, 1], cat_dims=[5, 3], cat_emb_dim=2, n_d=8, n_a=8, n_steps=3,
                  optimizer_fn=torch.optim.Adam, optimizer_params=dict(lr=2e-2), device_name=dev,
                  verbose=1, seed=0)

    def run():
        clf = TabNetClassifier(scheduler_fn=torch.optim.lr_scheduler.StepLR,
                               scheduler_params=dict(step_size=2, gamma=0.9), mask_type="entmax", **common)
        clf.fit(Xtr, ytr, eval_set=[(Xtr, ytr), (Xva, yva)], eval_name=["train", "valid"],
                eval_metric=["auc", "accuracy", "balanced_accuracy", "logloss"], max_epochs=4, patience=3,
                batch_size=128, virtual_batch_size=32, weights=1, drop_last=False,
                augmentations=ClassificationSMOTE(device_name=dev, p=0.3))
        preds = clf.predict_proba(Xva)
        labels = clf.predict(Xva)
        masks_sum, masks = clf.explain(Xva)
        imp = clf.feature_importances_
        print("best", clf.best_cost, clf.history["valid_auc"][-1], imp.round(2))
        path = clf.save_model(os.path.join(ctx.tmp, "tabnet_clf"))
        clf2 = TabNetClassifier(device_name=dev)
        clf2.load_model(path)
        labels2 = clf2.predict(Xva)
        mt = TabNetMultiTaskClassifier(mask_type="sparsemax", **common)
        mt.fit(X[:480], ym[:480], eval_set=[(X[480:], ym[480:])], eval_metric=["logloss"], max_epochs=3,
               batch_size=128, virtual_batch_size=32, patience=3)
        mt_preds = mt.predict(X[480:])
        mt_proba = mt.predict_proba(X[480:])
        return float((labels == labels2).mean()) + float(preds.sum()) + len(mt_preds)

    return run


@scenario
def pretrain_regress(ctx):
    """Self-supervised pretraining then regression (the pretraining example): TabNetPretrainer
    fit with pretraining_ratio and an eval set, save/load, then TabNetRegressor fit
    from_unsupervised with RegressionSMOTE, eval_metric mse/mae/rmse, a OneCycleLR scheduler
    stepped per batch, predict, explain; and a warm_start refit."""
    from pytorch_tabnet.augmentations import RegressionSMOTE
    from pytorch_tabnet.pretraining import TabNetPretrainer
    from pytorch_tabnet.tab_model import TabNetRegressor

    dev = ctx.device.type
    X, _, yr, _ = _tabular(seed=1)
    Xtr, ytr, Xva, yva = X[:480], yr[:480], X[480:], yr[480:]
    common = dict(cat_idxs=[0, 1], cat_dims=[5, 3], cat_emb_dim=[2, 2], n_d=8, n_a=8, n_steps=3,
                  optimizer_fn=torch.optim.Adam, optimizer_params=dict(lr=2e-2), device_name=dev, verbose=1,
                  seed=0)

    def run():
        pre = TabNetPretrainer(mask_type="entmax", n_shared_decoder=1, n_indep_decoder=1, **common)
        pre.fit(Xtr, eval_set=[Xva], pretraining_ratio=0.5, max_epochs=3, batch_size=128, drop_last=False,
                virtual_batch_size=32, patience=3)
        recon, embedded = pre.predict(Xva)
        path = pre.save_model(os.path.join(ctx.tmp, "tabnet_pre"))
        pre2 = TabNetPretrainer(device_name=dev)
        pre2.load_model(path)
        reg = TabNetRegressor(scheduler_fn=torch.optim.lr_scheduler.OneCycleLR,
                              scheduler_params=dict(is_batch_level=True, max_lr=5e-2, steps_per_epoch=4, epochs=4),
                              **common)
        reg.fit(Xtr, ytr, eval_set=[(Xva, yva)], eval_metric=["mse", "mae", "rmse"], max_epochs=4, patience=4,
                batch_size=128, virtual_batch_size=32, from_unsupervised=pre2,
                augmentations=RegressionSMOTE(device_name=dev, p=0.3))
        pred = reg.predict(Xva)
        m, _ = reg.explain(Xva, normalize=True)
        reg.fit(Xtr, ytr, eval_set=[(Xva, yva)], max_epochs=2, batch_size=128, virtual_batch_size=32,
                warm_start=True)
        return float(pred.mean()) + float(m.sum())

    return run
