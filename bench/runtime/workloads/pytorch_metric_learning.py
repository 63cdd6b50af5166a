"""pytorch-metric-learning: deep metric learning on the GPU the way its README and example
notebooks run it, on small synthetic clustered data (nothing downloaded): a hand-written training
loop with a loss + miner per step (loss.item() and miner.num_triplets logged), 34 losses with
their distances, reducers and regularizers, 9 miners, CrossBatchMemory, SelfSupervisedLoss,
MPerClassSampler; the package's own trainers (MetricLossOnly, TrainWithClassifier) and testers
(GlobalEmbeddingSpaceTester) with AccuracyCalculator on a torch k-NN, InferenceModel and
MatchFinder."""

import inspect
import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import pytorch_metric_learning

    return os.path.dirname(os.path.realpath(pytorch_metric_learning.__file__))


def _clusters(n=256, d=16, classes=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, d, generator=g) * 3
    labels = torch.arange(n) % classes
    x = centers[labels] + torch.randn(n, d, generator=g)
    return x, labels


class _DS(torch.utils.data.Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def _net(d_in=16, d_out=8):
    return torch.nn.Sequential(torch.nn.Linear(d_in, 32), torch.nn.ReLU(), torch.nn.Linear(32, d_out))


@scenario
def losses_miners_loop(ctx):
    """The README loop: for each batch, embeddings = model(data); hard_pairs = miner(embeddings,
    labels); loss = loss_func(embeddings, labels, hard_pairs); backward; step; print loss.item()
    and the miner's num_triplets. Over 30 losses (classification losses with their own optimizer),
    9 miners, distances (Lp, Cosine, SNR, DotProduct), reducers (ThresholdReducer, MeanReducer,
    AvgNonZeroReducer, MeanReducer) and regularizers, CrossBatchMemory with a miner,
    SelfSupervisedLoss, MultipleLosses, MPerClassSampler and DataLoader."""
    from pytorch_metric_learning import distances, losses, miners, reducers, regularizers, samplers

    dev = ctx.device
    x, y = _clusters()
    sampler = samplers.MPerClassSampler(y, m=4, length_before_new_iter=128)
    loader = torch.utils.data.DataLoader(_DS(x, y), batch_size=32, sampler=sampler)

    def cls_losses():
        return [losses.ArcFaceLoss(num_classes=8, embedding_size=8), losses.SubCenterArcFaceLoss(num_classes=8, embedding_size=8, sub_centers=2), losses.CosFaceLoss(num_classes=8, embedding_size=8),
                losses.SphereFaceLoss(num_classes=8, embedding_size=8), losses.LargeMarginSoftmaxLoss(num_classes=8, embedding_size=8), losses.NormalizedSoftmaxLoss(num_classes=8, embedding_size=8),
                losses.ProxyAnchorLoss(num_classes=8, embedding_size=8), losses.ProxyNCALoss(num_classes=8, embedding_size=8), losses.SoftTripleLoss(num_classes=8, embedding_size=8, centers_per_class=2),
                losses.ManifoldLoss(l=8, K=8)]

    def pair_losses():
        return [losses.TripletMarginLoss(margin=0.1, distance=distances.CosineSimilarity(),
                                         reducer=reducers.ThresholdReducer(low=0), embedding_regularizer=regularizers.LpRegularizer()),
                losses.ContrastiveLoss(pos_margin=0, neg_margin=1), losses.MultiSimilarityLoss(),
                losses.NTXentLoss(temperature=0.07), losses.SupConLoss(), losses.CircleLoss(),
                losses.LiftedStructureLoss(), losses.GeneralizedLiftedStructureLoss(), losses.MarginLoss(num_classes=8, learn_beta=True),
                losses.TupletMarginLoss(), losses.IntraPairVarianceLoss(), losses.FastAPLoss(), losses.HistogramLoss(),
                losses.SignalToNoiseRatioContrastiveLoss(), losses.NPairsLoss(), losses.NCALoss(), losses.AngularLoss(),
                losses.RankedListLoss(margin=0.4, Tn=0, Tp=0), losses.InstanceLoss(), losses.SmoothAPLoss(),
                losses.PNPLoss(),
                losses.ContrastiveLoss(distance=distances.SNRDistance(), reducer=reducers.AvgNonZeroReducer()),
                losses.TripletMarginLoss(distance=distances.DotProductSimilarity(), reducer=reducers.MeanReducer()),
                losses.MultipleLosses([losses.ContrastiveLoss(), losses.TripletMarginLoss()], weights=[1.0, 0.5])]

    def all_miners():
        return [miners.TripletMarginMiner(margin=0.2, type_of_triplets="semihard"), miners.MultiSimilarityMiner(0.1),
                miners.BatchHardMiner(), miners.BatchEasyHardMiner(), miners.PairMarginMiner(pos_margin=0.2, neg_margin=0.8),
                miners.AngularMiner(angle=20), miners.DistanceWeightedMiner(cutoff=0.5, nonzero_loss_cutoff=1.4),
                miners.HDCMiner(filter_percentage=0.5), miners.UniformHistogramMiner(num_bins=10, pos_per_bin=5, neg_per_bin=5)]

    def run():
        torch.manual_seed(0)
        model = _net().to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        mins = all_miners()
        for i, loss_func in enumerate(pair_losses()):
            # losses that refuse an indices_tuple get no miner
            takes_tuple = "indices_tuple_not_supported" not in inspect.getsource(type(loss_func))
            if isinstance(loss_func, losses.MultipleLosses):
                takes_tuple = False
            miner = mins[i % len(mins)] if takes_tuple else None
            loss_func = loss_func.to(dev)
            extra = list(loss_func.parameters())
            lopt = torch.optim.SGD(extra, lr=0.01) if extra else None
            for batch_idx, (data, labels) in enumerate(loader):
                data, labels = data.to(dev), labels.to(dev)
                opt.zero_grad()
                if lopt:
                    lopt.zero_grad()
                embeddings = model(data)
                if miner is not None:
                    hard = miner(embeddings, labels)
                    loss = loss_func(embeddings, labels, hard)
                else:
                    loss = loss_func(embeddings, labels)
                loss.backward()
                opt.step()
                if lopt:
                    lopt.step()
                if batch_idx % 2 == 0:
                    print(f"{type(loss_func).__name__} Iteration {batch_idx}: Loss = {loss.item():.4f}, "
                          f"Number of mined triplets = {getattr(miner, 'num_triplets', '-')}")
                if batch_idx == 3:
                    break
        for loss_func in cls_losses():
            loss_func = loss_func.to(dev)
            lopt = torch.optim.SGD(loss_func.parameters(), lr=0.01)
            for batch_idx, (data, labels) in enumerate(loader):
                data, labels = data.to(dev), labels.to(dev)
                opt.zero_grad(); lopt.zero_grad()
                emb = model(data)
                loss = loss_func(emb) if isinstance(loss_func, losses.ManifoldLoss) else loss_func(emb, labels)
                loss.backward()
                opt.step(); lopt.step()
                print(f"{type(loss_func).__name__} loss {loss.item():.4f}")
                if batch_idx == 2:
                    break
            if hasattr(loss_func, "get_logits"):
                loss_func.get_logits(model(x[:16].to(dev)))
        # CrossBatchMemory with a miner; SelfSupervisedLoss on two augmented views; VICReg
        xbm = losses.CrossBatchMemory(losses.ContrastiveLoss(), embedding_size=8, memory_size=64,
                                      miner=miners.MultiSimilarityMiner()).to(dev)
        ssl = losses.SelfSupervisedLoss(losses.TripletMarginLoss())
        vic = losses.VICRegLoss()
        for batch_idx, (data, labels) in enumerate(loader):
            data, labels = data.to(dev), labels.to(dev)
            opt.zero_grad()
            emb = model(data)
            loss = xbm(emb, labels) + ssl(emb, model(data + 0.1 * torch.randn_like(data)))
            loss = loss + 0.01 * vic(emb, ref_emb=model(data + 0.1 * torch.randn_like(data)))
            loss.backward()
            opt.step()
            print("xbm", loss.item())
            if batch_idx == 3:
                break

    return run


@scenario
def trainers_testers(ctx):
    """The package's training and evaluation machinery: MetricLossOnly (trunk + embedder, loss,
    miner, MPerClassSampler, data_device=cuda, end_of_iteration/epoch hooks printing losses) and
    TrainWithClassifier; GlobalEmbeddingSpaceTester.test with an AccuracyCalculator on a torch
    k-NN (precision_at_1, r_precision, mean_average_precision_at_r, mean_reciprocal_rank),
    AccuracyCalculator.get_accuracy directly; CustomKNN, InferenceModel (is_match,
    get_matches) with a MatchFinder."""
    from pytorch_metric_learning import losses, miners, samplers, testers, trainers
    from pytorch_metric_learning.distances import CosineSimilarity, LpDistance
    from pytorch_metric_learning.utils import common_functions as c_f
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN, InferenceModel, MatchFinder

    dev = ctx.device
    x, y = _clusters(192)
    xv, yv = _clusters(96, seed=1)
    train_ds, val_ds = _DS(x, y), _DS(xv, yv)

    def acc_calc():
        return AccuracyCalculator(include=("precision_at_1", "r_precision", "mean_average_precision_at_r",
                                           "mean_reciprocal_rank"), k="max_bin_count", device=dev,
                                  knn_func=CustomKNN(CosineSimilarity()))

    def run():
        torch.manual_seed(0)
        for cls in ("MetricLossOnly", "TrainWithClassifier"):
            trunk, embedder = _net(16, 16).to(dev), _net(16, 8).to(dev)
            models = {"trunk": trunk, "embedder": embedder}
            optimizers = {"trunk_optimizer": torch.optim.Adam(trunk.parameters(), 1e-3),
                          "embedder_optimizer": torch.optim.Adam(embedder.parameters(), 1e-3)}
            loss_funcs = {"metric_loss": losses.TripletMarginLoss(margin=0.1)}
            if cls == "TrainWithClassifier":
                classifier = torch.nn.Linear(8, 8).to(dev)
                models["classifier"] = classifier
                optimizers["classifier_optimizer"] = torch.optim.Adam(classifier.parameters(), 1e-3)
                loss_funcs["classifier_loss"] = torch.nn.CrossEntropyLoss()
            seen = []
            tr = getattr(trainers, cls)(models=models, optimizers=optimizers, batch_size=32, loss_funcs=loss_funcs,
                                        dataset=train_ds, mining_funcs={"tuple_miner": miners.MultiSimilarityMiner(0.1)},
                                        sampler=samplers.MPerClassSampler(y, m=4, length_before_new_iter=len(train_ds)),
                                        data_device=dev, dataloader_num_workers=0,
                                        end_of_iteration_hook=lambda t: seen.append(
                                            {k: float(v) for k, v in t.losses.items()}),
                                        end_of_epoch_hook=lambda t: print(f"epoch {t.epoch} losses {seen[-1]}") or True)
            tr.train(num_epochs=2)
        tester = testers.GlobalEmbeddingSpaceTester(batch_size=32, dataloader_num_workers=0, data_device=dev,
                                                    accuracy_calculator=acc_calc())
        all_acc = tester.test({"train": train_ds, "val": val_ds}, 2, trunk, embedder, splits_to_eval=[("val", ["train"])])
        print(all_acc)
        with torch.no_grad():
            emb_q, emb_r = embedder(trunk(xv.to(dev))), embedder(trunk(x.to(dev)))
        acc = acc_calc().get_accuracy(emb_q, yv.to(dev), emb_r, y.to(dev), ref_includes_query=False)
        print(acc)
        AccuracyCalculator(include=("precision_at_1", "mean_average_precision"), k=5, device=dev,
                           knn_func=CustomKNN(LpDistance(normalize_embeddings=True))).get_accuracy(emb_q, yv.to(dev))
        knn = CustomKNN(CosineSimilarity())
        distances, indices = knn(xv[:10].to(dev), 5, x.to(dev), False)
        im = InferenceModel(torch.nn.Sequential(trunk, embedder), match_finder=MatchFinder(CosineSimilarity(), threshold=0.7),
                            knn_func=knn, data_device=dev)
        im.is_match(xv[:10].to(dev), xv[10:20].to(dev))
        im.get_matches(xv[:16].to(dev))
        c_f.to_device(indices, device=dev)
        return indices.tolist()

    return run
