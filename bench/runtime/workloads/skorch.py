"""skorch: scikit-learn-compatible training of PyTorch modules on the GPU the way its README and
docs use it (device='cuda', numpy inputs): NeuralNetClassifier/Regressor/BinaryClassifier fit with
the default callbacks (EpochTimer, PrintLog, PassthroughScoring, valid split), EpochScoring,
BatchScoring, LRScheduler, EarlyStopping, Checkpoint/LoadInitState, GradientNormClipping,
Freezer, predict/predict_proba/score, partial_fit and warm_start, sklearn Pipeline and
GridSearchCV, save_params/load_params, pickling, and the NeuralNet hooks users override.
Synthetic data, nothing downloaded."""

import os

import numpy as np
import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import skorch

    return os.path.dirname(os.path.realpath(skorch.__file__))


class ClassifierModule(torch.nn.Module):
    def __init__(self, num_units=20, nonlin=torch.nn.ReLU(), dropout=0.1, n_in=20, n_out=2):
        super().__init__()
        self.dense0 = torch.nn.Linear(n_in, num_units)
        self.nonlin = nonlin
        self.dropout = torch.nn.Dropout(dropout)
        self.dense1 = torch.nn.Linear(num_units, 10)
        self.output = torch.nn.Linear(10, n_out)

    def forward(self, X, **kwargs):
        X = self.nonlin(self.dense0(X))
        X = self.dropout(X)
        X = self.nonlin(self.dense1(X))
        return torch.softmax(self.output(X), dim=-1)


class RegressorModule(torch.nn.Module):
    def __init__(self, num_units=10, nonlin=torch.nn.ReLU()):
        super().__init__()
        self.dense0, self.nonlin, self.dense1, self.output = (torch.nn.Linear(20, num_units), nonlin,
                                                              torch.nn.Linear(num_units, 10), torch.nn.Linear(10, 1))

    def forward(self, X, **kwargs):
        return self.output(self.nonlin(self.dense1(self.nonlin(self.dense0(X)))))


def _cls_data(n=400):
    from sklearn.datasets import make_classification

    X, y = make_classification(n, 20, n_informative=10, random_state=0)
    return X.astype(np.float32), y.astype(np.int64)


def _reg_data(n=300):
    from sklearn.datasets import make_regression

    X, y = make_regression(n, 20, n_informative=10, random_state=0)
    return X.astype(np.float32), (y / 100).astype(np.float32).reshape(-1, 1)


@scenario
def classifier_fit(ctx):
    """The README example on the GPU: NeuralNetClassifier(device='cuda') fit for a few epochs with
    the default valid split and callbacks plus EpochScoring(accuracy/roc_auc on train and valid),
    BatchScoring, LRScheduler (StepLR, CyclicLR per batch), EarlyStopping, Checkpoint + LoadInitState,
    GradientNormClipping, ProgressBar-free PrintLog; predict/predict_proba/score; partial_fit;
    warm_start; save_params/load_params and pickle; a Pipeline with StandardScaler and a small
    GridSearchCV over lr and module__num_units."""
    import pickle

    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from skorch import NeuralNetClassifier
    from skorch.callbacks import (BatchScoring, Checkpoint, EarlyStopping, EpochScoring, GradientNormClipping,
                                  LoadInitState, LRScheduler)

    dev = str(ctx.device)
    X, y = _cls_data()

    def run():
        torch.manual_seed(0)
        cp = Checkpoint(dirname=os.path.join(ctx.tmp, "cp"), monitor="valid_loss_best")
        net = NeuralNetClassifier(ClassifierModule, max_epochs=4, lr=0.1, batch_size=64, device=dev,
                                  iterator_train__shuffle=True,
                                  callbacks=[EpochScoring("accuracy", on_train=True, name="train_acc"),
                                             EpochScoring("roc_auc", lower_is_better=False),
                                             BatchScoring("neg_log_loss", on_train=False, name="valid_nll"),
                                             LRScheduler(policy="StepLR", step_size=2, gamma=0.5),
                                             EarlyStopping(patience=3), cp, GradientNormClipping(gradient_clip_value=1.0)])
        net.fit(X, y)
        y_proba = net.predict_proba(X[:50])
        print("score", net.score(X, y), net.history[-1, "valid_loss"], y_proba.shape)
        net.partial_fit(X, y, epochs=1)
        net2 = NeuralNetClassifier(ClassifierModule, max_epochs=2, lr=0.05, device=dev, warm_start=True,
                                   callbacks=[LRScheduler(policy=torch.optim.lr_scheduler.CyclicLR, base_lr=0.01,
                                                          max_lr=0.1, step_every="batch"), LoadInitState(cp)])
        net2.fit(X, y)
        net2.fit(X, y)
        net.save_params(f_params=os.path.join(ctx.tmp, "p.pt"), f_optimizer=os.path.join(ctx.tmp, "o.pt"),
                        f_history=os.path.join(ctx.tmp, "h.json"))
        new = NeuralNetClassifier(ClassifierModule, device=dev).initialize()
        new.load_params(f_params=os.path.join(ctx.tmp, "p.pt"), f_optimizer=os.path.join(ctx.tmp, "o.pt"),
                        f_history=os.path.join(ctx.tmp, "h.json"))
        new.predict(X[:20])
        pickle.loads(pickle.dumps(net)).predict(X[:10])
        pipe = Pipeline([("scale", StandardScaler()),
                         ("net", NeuralNetClassifier(ClassifierModule, max_epochs=2, lr=0.1, device=dev, verbose=0,
                                                     train_split=False))])
        pipe.fit(X, y)
        pipe.predict(X[:10])
        gs = GridSearchCV(pipe, {"net__lr": [0.05, 0.1], "net__module__num_units": [10, 20]}, refit=False, cv=2,
                          scoring="accuracy")
        gs.fit(X, y)
        print(gs.best_score_, gs.best_params_)

    return run


@scenario
def regressor_and_hooks(ctx):
    """NeuralNetRegressor on the GPU with torch tensor and dict inputs, ValidSplit(stratified=False),
    Freezer/Unfreezer, WarmRestartLR and ReduceLROnPlateau via LRScheduler; NeuralNetBinaryClassifier
    (threshold, predict on the GPU); a NeuralNet subclass overriding get_loss with an L1 penalty and
    train_step with gradient accumulation, set_params(module__...), forward/forward_iter/infer,
    evaluation_step; the history's queries; skorch.helpers.predefined_split and SliceDict."""
    from skorch import NeuralNet, NeuralNetBinaryClassifier, NeuralNetRegressor
    from skorch.callbacks import EpochScoring, Freezer, LRScheduler, Unfreezer, WarmRestartLR
    from skorch.dataset import Dataset, ValidSplit
    from skorch.helper import SliceDict, predefined_split

    dev = str(ctx.device)
    Xr, yr = _reg_data()
    Xc, yc = _cls_data()

    class BinModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

        def forward(self, X):
            return self.lin(X).squeeze(-1)

    class DictModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(12, 8), torch.nn.Linear(8, 8)
            self.out = torch.nn.Linear(16, 1)

        def forward(self, a, b):
            return self.out(torch.cat([torch.relu(self.a(a)), torch.relu(self.b(b))], -1))

    class RegularizedNet(NeuralNetRegressor):
        def __init__(self, *args, lambda1=0.01, acc_steps=2, **kwargs):
            super().__init__(*args, **kwargs)
            self.lambda1, self.acc_steps = lambda1, acc_steps

        def get_loss(self, y_pred, y_true, X=None, training=False):
            loss = super().get_loss(y_pred, y_true, X=X, training=training)
            loss = loss + self.lambda1 * sum(w.abs().sum() for w in self.module_.parameters())
            return loss

        def train_step(self, batch, **fit_params):
            step_accumulator = self.get_train_step_accumulator()
            for i, chunk in enumerate(zip(*[torch.chunk(t, self.acc_steps) for t in batch])):
                step = self.train_step_single(chunk, **fit_params)
                step_accumulator.store_step(step)
            self.optimizer_.step()
            self.optimizer_.zero_grad()
            return step_accumulator.get_step()

    def run():
        torch.manual_seed(0)
        net = NeuralNetRegressor(RegressorModule, max_epochs=4, lr=0.05, device=dev, optimizer=torch.optim.Adam,
                                 train_split=ValidSplit(5),
                                 callbacks=[Freezer("dense0.*"), Unfreezer("dense0.*", at=3),
                                            LRScheduler(WarmRestartLR), EpochScoring("r2", lower_is_better=False)])
        net.fit(torch.from_numpy(Xr), torch.from_numpy(yr))
        net.set_params(module__num_units=16, callbacks=[LRScheduler(torch.optim.lr_scheduler.ReduceLROnPlateau,
                                                                    monitor="valid_loss")])
        net.fit(Xr, yr)
        print("r2", net.score(Xr, yr), net.history[:, "valid_loss"])
        y_pred = net.predict(Xr[:10])
        net.forward(Xr[:32], device=dev)
        for out in net.forward_iter(Xr[:64], training=False, device=dev):
            out.shape
        net.infer(torch.from_numpy(Xr[:8]).to(dev))
        net.evaluation_step((torch.from_numpy(Xr[:8]), torch.from_numpy(yr[:8])), training=False)
        bnet = NeuralNetBinaryClassifier(BinModule, max_epochs=3, lr=0.1, device=dev, threshold=0.4, batch_size=64)
        bnet.fit(Xc, yc.astype(np.float32))
        bnet.predict(Xc[:30]), bnet.predict_proba(Xc[:30])
        rnet = RegularizedNet(RegressorModule, max_epochs=3, lr=0.02, device=dev, batch_size=64,
                              train_split=predefined_split(Dataset(Xr[:60], yr[:60])))
        rnet.fit(Xr, yr)
        sd = SliceDict(a=np.random.rand(200, 12).astype(np.float32), b=np.random.rand(200, 8).astype(np.float32))
        dnet = NeuralNet(DictModule, criterion=torch.nn.MSELoss, max_epochs=2, lr=0.05, device=dev, batch_size=50)
        dnet.fit(sd, np.random.rand(200, 1).astype(np.float32))
        dnet.predict(sd[:20])
        h = dnet.history
        h[-1, "batches", 0, "train_loss"], h[:, ("train_loss", "valid_loss")]
        return y_pred

    return run
