"""PyTorch Geometric: graph neural networks trained on the GPU the way its examples do it, on
synthetic graphs (FakeDataset, StochasticBlockModel-like random graphs; nothing downloaded):
full-batch node classification with many convolutions and models, mini-batched graph
classification with DataLoader and the pooling/readout operators (dense and sparse), link
prediction (RandomLinkSplit, GAE/VGAE, negative sampling, link-prediction metrics), heterogeneous
graphs (to_hetero, HeteroConv, HGT), the explainer, and a sweep of torch_geometric.utils.
Neighbour sampling (NeighborLoader) needs pyg-lib or torch-sparse, which the GPU image lacks, and
is not run."""

import os

import torch
import torch.nn.functional as F

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import torch_geometric

    return os.path.dirname(os.path.realpath(torch_geometric.__file__))


def _node_graph(ctx, n=400, feats=16, classes=4, seed=0):
    import torch_geometric.transforms as T
    from torch_geometric.datasets import FakeDataset

    torch.manual_seed(seed)
    ds = FakeDataset(num_graphs=1, avg_num_nodes=n, avg_degree=6, num_channels=feats, num_classes=classes,
                     transform=T.Compose([T.NormalizeFeatures(), T.ToUndirected(),
                                          T.RandomNodeSplit(num_val=0.2, num_test=0.2)]))
    return ds[0].to(ctx.device)


def _fit_nodes(model, data, ctx, steps=3, extra_loss=None, edge_attr=False):
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(steps):
        model.train()
        opt.zero_grad()
        out = model(data.x, data.edge_index, **({"edge_attr": data.edge_attr} if edge_attr else {}))
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        if extra_loss is not None:
            loss = loss + extra_loss(model)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(data.x, data.edge_index, **({"edge_attr": data.edge_attr} if edge_attr else {})).argmax(-1)
    accs = [int((pred[m] == data.y[m]).sum()) / int(m.sum()) for m in (data.train_mask, data.val_mask, data.test_mask)]
    return float(loss), accs


@scenario
def node_classification(ctx):
    """Full-batch training (3 steps, masked cross-entropy, accuracy) of the basic models (GCN, GraphSAGE,
    GIN, GAT with GATv2, PNA with a degree histogram, EdgeCNN, with jumping knowledge) and of hand-built
    networks of GCN2Conv, APPNP, ChebConv, TransformerConv, SGConv, ARMAConv, SuperGATConv (its attention
    loss), TAGConv, GENConv, ResGatedGraphConv, GatedGraphConv, FiLMConv, ClusterGCNConv, MixHopConv;
    then LabelPropagation and CorrectAndSmooth on the predictions."""
    import torch_geometric.nn as gnn
    from torch_geometric.nn.models import GAT, GCN, GIN, PNA, CorrectAndSmooth, EdgeCNN, GraphSAGE, LabelPropagation
    from torch_geometric.utils import degree

    class Stack(torch.nn.Module):
        def __init__(self, first, second, drop=0.5):
            super().__init__()
            self.first, self.second, self.drop = first, second, drop

        def forward(self, x, edge_index):
            x = F.dropout(F.elu(self.first(x, edge_index)), p=self.drop, training=self.training)
            return self.second(x, edge_index)

    class GCNII(torch.nn.Module):
        def __init__(self, d_in, h, d_out):
            super().__init__()
            self.lin_in, self.lin_out = torch.nn.Linear(d_in, h), torch.nn.Linear(h, d_out)
            self.convs = torch.nn.ModuleList(gnn.GCN2Conv(h, alpha=0.1, theta=0.5, layer=i + 1) for i in range(3))

        def forward(self, x, edge_index):
            x = x0 = F.relu(self.lin_in(x))
            for c in self.convs:
                x = F.relu(c(x, x0, edge_index))
            return self.lin_out(x)

    class Propagate(torch.nn.Module):
        def __init__(self, d_in, d_out, prop):
            super().__init__()
            self.lin, self.prop = torch.nn.Linear(d_in, d_out), prop

        def forward(self, x, edge_index):
            return self.prop(self.lin(x), edge_index)

    def run():
        data = _node_graph(ctx)
        d, c, h = data.num_features, 4, 32
        deg = degree(data.edge_index[1], data.num_nodes, dtype=torch.long)
        hist = torch.bincount(deg)
        failed, results = {}, {}
        builders = {
            "GCN": lambda: GCN(d, h, 2, c, dropout=0.5, jk="cat"),
            "GraphSAGE": lambda: GraphSAGE(d, h, 2, c, aggr="max"),
            "GIN": lambda: GIN(d, h, 2, c, norm="batch_norm"),
            "GAT": lambda: GAT(d, h, 2, c, heads=2, v2=True),
            "PNA": lambda: PNA(d, h, 2, c, aggregators=["mean", "min", "max", "std"],
                               scalers=["identity", "amplification", "attenuation"], deg=hist),
            "EdgeCNN": lambda: EdgeCNN(d, h, 2, c),
            "GCN2Conv": lambda: GCNII(d, h, c),
            "APPNP": lambda: Propagate(d, c, gnn.APPNP(K=5, alpha=0.1)),
            "ChebConv": lambda: Stack(gnn.ChebConv(d, h, K=3), gnn.ChebConv(h, c, K=3)),
            "TransformerConv": lambda: Stack(gnn.TransformerConv(d, h, heads=2, concat=False),
                                             gnn.TransformerConv(h, c)),
            "SGConv": lambda: gnn.SGConv(d, c, K=2, cached=True),
            "ARMAConv": lambda: Stack(gnn.ARMAConv(d, h, num_stacks=2), gnn.ARMAConv(h, c)),
            "SuperGATConv": lambda: Stack(gnn.SuperGATConv(d, 8, heads=4, attention_type="MX"),
                                          gnn.SuperGATConv(32, c, heads=1, attention_type="MX")),
            "TAGConv": lambda: Stack(gnn.TAGConv(d, h), gnn.TAGConv(h, c)),
            "GENConv": lambda: Stack(gnn.GENConv(d, h, aggr="softmax", learn_t=True), gnn.GENConv(h, c)),
            "ResGatedGraphConv": lambda: Stack(gnn.ResGatedGraphConv(d, h), gnn.ResGatedGraphConv(h, c)),
            "GatedGraphConv": lambda: Propagate(d, c, gnn.GatedGraphConv(c, num_layers=2)),
            "FiLMConv": lambda: Stack(gnn.FiLMConv(d, h), gnn.FiLMConv(h, c)),
            "ClusterGCNConv": lambda: Stack(gnn.ClusterGCNConv(d, h), gnn.ClusterGCNConv(h, c)),
            "MixHopConv": lambda: Stack(gnn.MixHopConv(d, 8), gnn.MixHopConv(24, c)),
        }
        for name, build in builders.items():
            try:
                torch.manual_seed(0)
                model = build().to(ctx.device)
                extra = None
                if name == "SuperGATConv":
                    extra = lambda m: 4.0 * (m.first.get_attention_loss() + m.second.get_attention_loss())  # noqa
                results[name] = _fit_nodes(model, data, ctx, extra_loss=extra)
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
        try:
            lp = LabelPropagation(num_layers=3, alpha=0.9)
            out = lp(data.y, data.edge_index, mask=data.train_mask)
            model = GCN(d, h, 2, c).to(ctx.device)
            _fit_nodes(model, data, ctx, steps=2)
            with torch.no_grad():
                y_soft = model(data.x, data.edge_index).softmax(-1)
            cs = CorrectAndSmooth(num_correction_layers=2, correction_alpha=0.8, num_smoothing_layers=2,
                                  smoothing_alpha=0.8, autoscale=True)
            y_soft = cs.correct(y_soft, data.y[data.train_mask], data.train_mask, data.edge_index)
            cs.smooth(y_soft, data.y[data.train_mask], data.train_mask, data.edge_index)
            assert out.shape[0] == data.num_nodes
        except Exception as exc:  # noqa: BLE001
            failed["CorrectAndSmooth"] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("node models that failed:", failed)
    return run


@scenario
def graph_classification(ctx):
    """Mini-batches from DataLoader over a FakeDataset of 48 graphs (to the device per batch), GIN with
    global add/mean/max pooling, Set2Set, AttentionalAggregation, SortAggregation; hierarchical pooling
    (TopKPooling, SAGPooling, ASAPooling, EdgePooling, GraphUNet); dense pooling over to_dense_batch /
    to_dense_adj (DenseGCNConv + dense_diff_pool, DMoNPooling, MinCutPool); train steps, then an eval pass
    with accuracy and unbatch."""
    import torch_geometric.nn as gnn
    from torch_geometric.datasets import FakeDataset
    from torch_geometric.loader import DataLoader
    from torch_geometric.utils import to_dense_adj, to_dense_batch, unbatch

    torch.manual_seed(0)
    ds = FakeDataset(num_graphs=48, avg_num_nodes=20, avg_degree=4, num_channels=8, num_classes=3,
                     task="graph")
    ds = [g for g in ds]
    d, h, c = 8, 32, 3

    class Readout(torch.nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.conv1, self.conv2 = gnn.GINConv(gnn.MLP([d, h, h])), gnn.GINConv(gnn.MLP([h, h, h]))
            self.norm = gnn.BatchNorm(h)
            if kind == "set2set":
                self.read, out = gnn.Set2Set(h, processing_steps=2), 2 * h
            elif kind == "attention":
                self.read, out = gnn.AttentionalAggregation(torch.nn.Linear(h, 1)), h
            elif kind == "sort":
                self.read, out = gnn.SortAggregation(k=5), 5 * h
            else:
                self.read, out = None, 3 * h
            self.pool = {"topk": gnn.TopKPooling(h, ratio=0.5), "sag": gnn.SAGPooling(h, ratio=0.5),
                         "asap": gnn.ASAPooling(h, ratio=0.5), "edge": gnn.EdgePooling(h)}.get(kind)
            if self.pool is not None:
                self.pool_mod = self.pool
            self.head = gnn.MLP([out, h, c], dropout=0.2)

        def forward(self, x, edge_index, batch):
            x = self.norm(F.relu(self.conv1(x, edge_index)))
            if self.kind in ("topk", "sag"):
                x, edge_index, _, batch, _, _ = self.pool(x, edge_index, batch=batch)
            elif self.kind == "asap":
                x, edge_index, _, batch, _ = self.pool(x, edge_index, batch=batch)
            elif self.kind == "edge":
                x, edge_index, batch, _ = self.pool(x, edge_index, batch)
            x = F.relu(self.conv2(x, edge_index))
            if self.read is not None:
                return self.head(self.read(x, batch))
            return self.head(torch.cat([gnn.global_add_pool(x, batch), gnn.global_mean_pool(x, batch),
                                        gnn.global_max_pool(x, batch)], dim=-1))

    class Dense(torch.nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.conv = gnn.DenseGCNConv(d, h)
            self.assign = gnn.DenseGCNConv(d, 4)
            self.dmon = gnn.DMoNPooling(h, 4)
            self.conv2 = gnn.DenseGraphConv(h, h)
            self.head = torch.nn.Linear(h, c)

        def forward(self, x, edge_index, batch):
            xd, mask = to_dense_batch(x, batch)
            adj = to_dense_adj(edge_index, batch)
            z = F.relu(self.conv(xd, adj, mask))
            if self.kind == "diffpool":
                s = self.assign(xd, adj, mask)
                z, adj, l1, l2 = gnn.dense_diff_pool(z, adj, s, mask)
            elif self.kind == "mincut":
                s = self.assign(xd, adj, mask)
                z, adj, l1, l2 = gnn.dense_mincut_pool(z, adj, s, mask)
            else:
                _, z, adj, l1, l2, l3 = self.dmon(z, adj, mask)
                l2 = l2 + l3
            z = F.relu(self.conv2(z, adj))
            return self.head(z.mean(1)), l1 + l2

    class UNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.unet = gnn.GraphUNet(d, h, h, depth=2, pool_ratios=0.5)
            self.head = torch.nn.Linear(h, c)

        def forward(self, x, edge_index, batch):
            return self.head(gnn.global_mean_pool(self.unet(x, edge_index, batch), batch))

    def run():
        failed = {}
        kinds = ["plain", "set2set", "attention", "sort", "topk", "sag", "asap", "edge", "diffpool", "mincut",
                 "dmon", "unet"]
        for kind in kinds:
            try:
                torch.manual_seed(0)
                if kind in ("diffpool", "mincut", "dmon"):
                    model = Dense(kind)
                elif kind == "unet":
                    model = UNet()
                else:
                    model = Readout(kind)
                model = model.to(ctx.device)
                opt = torch.optim.Adam(model.parameters(), lr=0.01)
                loader = DataLoader(ds[:32], batch_size=8, shuffle=True)
                total = 0.0
                model.train()
                for batch in loader:
                    batch = batch.to(ctx.device)
                    opt.zero_grad()
                    out = model(batch.x, batch.edge_index, batch.batch)
                    aux = 0
                    if isinstance(out, tuple):
                        out, aux = out
                    loss = F.cross_entropy(out, batch.y) + aux
                    loss.backward()
                    opt.step()
                    total += float(loss) * batch.num_graphs
                model.eval()
                correct = 0
                with torch.no_grad():
                    for batch in DataLoader(ds[32:], batch_size=8):
                        batch = batch.to(ctx.device)
                        out = model(batch.x, batch.edge_index, batch.batch)
                        out = out[0] if isinstance(out, tuple) else out
                        correct += int((out.argmax(-1) == batch.y).sum())
                        unbatch(batch.x, batch.batch)
            except Exception as exc:  # noqa: BLE001
                failed[kind] = f"{type(exc).__name__}: {exc}"[:200]
        if failed:
            print("graph models that failed:", failed)
    return run


@scenario
def link_prediction(ctx):
    """RandomLinkSplit on the device, a GCN encoder trained with negative_sampling and a dot-product decoder,
    GAE and VGAE (recon_loss, kl_loss, test with AUC/AP), DeepGraphInfomax, and the link-prediction
    metrics (precision, recall, F1, MAP, NDCG, MRR, hit ratio) through a LinkPredMetricCollection."""
    import torch_geometric.transforms as T
    from torch_geometric.metrics import (LinkPredF1, LinkPredHitRatio, LinkPredMAP, LinkPredMetricCollection,
                                         LinkPredMRR, LinkPredNDCG, LinkPredPrecision, LinkPredRecall)
    from torch_geometric.nn import GAE, GCNConv, VGAE, DeepGraphInfomax
    from torch_geometric.utils import batched_negative_sampling, negative_sampling, structured_negative_sampling

    class Enc(torch.nn.Module):
        def __init__(self, d, h, variational=False):
            super().__init__()
            self.c1, self.c2 = GCNConv(d, 2 * h), GCNConv(2 * h, h)
            self.c3 = GCNConv(2 * h, h) if variational else None

        def forward(self, x, edge_index):
            x = F.relu(self.c1(x, edge_index))
            if self.c3 is not None:
                return self.c2(x, edge_index), self.c3(x, edge_index)
            return self.c2(x, edge_index)

    def run():
        torch.manual_seed(0)
        data = _node_graph(ctx, n=300)
        split = T.RandomLinkSplit(num_val=0.1, num_test=0.1, is_undirected=True, add_negative_train_samples=False)
        train, val, test = split(data)
        d = data.num_features
        enc = Enc(d, 16).to(ctx.device)
        opt = torch.optim.Adam(enc.parameters(), lr=0.01)
        for _ in range(3):
            enc.train()
            opt.zero_grad()
            z = enc(train.x, train.edge_index)
            neg = negative_sampling(train.edge_index, num_nodes=train.num_nodes,
                                    num_neg_samples=train.edge_label_index.size(1), method="sparse")
            eli = torch.cat([train.edge_label_index, neg], dim=-1)
            lab = torch.cat([train.edge_label, train.edge_label.new_zeros(neg.size(1))])
            out = (z[eli[0]] * z[eli[1]]).sum(-1)
            loss = F.binary_cross_entropy_with_logits(out, lab)
            loss.backward()
            opt.step()
        structured_negative_sampling(train.edge_index, train.num_nodes)
        batched_negative_sampling(train.edge_index, torch.zeros(train.num_nodes, dtype=torch.long, device=ctx.device))
        for variational in (False, True):
            model = (VGAE if variational else GAE)(Enc(d, 16, variational)).to(ctx.device)
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            for _ in range(3):
                model.train()
                opt.zero_grad()
                z = model.encode(train.x, train.edge_index)
                loss = model.recon_loss(z, train.pos_edge_label_index if hasattr(train, "pos_edge_label_index")
                                        else train.edge_label_index)
                if variational:
                    loss = loss + (1 / train.num_nodes) * model.kl_loss()
                loss.backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                z = model.encode(test.x, test.edge_index)
                pos = test.edge_label_index[:, test.edge_label == 1]
                neg = test.edge_label_index[:, test.edge_label == 0]
                model.test(z, pos, neg)
        dgi = DeepGraphInfomax(16, encoder=Enc(d, 16), summary=lambda z, *a, **k: z.mean(0).sigmoid(),
                               corruption=lambda x, ei: (x[torch.randperm(x.size(0), device=x.device)], ei))
        dgi = dgi.to(ctx.device)
        opt = torch.optim.Adam(dgi.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            pos_z, neg_z, s = dgi(data.x, data.edge_index)
            loss = dgi.loss(pos_z, neg_z, s)
            loss.backward()
            opt.step()
        # recommendation-style metrics: top-k over a score matrix against ground-truth edges
        k = 5
        scores = torch.rand(50, 80, device=ctx.device)
        pred_index = scores.topk(k, dim=-1).indices
        gt = torch.stack([torch.randint(0, 50, (200,), device=ctx.device),
                          torch.randint(0, 80, (200,), device=ctx.device)])
        coll = LinkPredMetricCollection([LinkPredPrecision(k), LinkPredRecall(k), LinkPredF1(k), LinkPredMAP(k),
                                         LinkPredNDCG(k), LinkPredMRR(k), LinkPredHitRatio(k)]).to(ctx.device)
        coll.update(pred_index, gt)
        coll.compute()
        coll.reset()
    return run


@scenario
def hetero_explain_utils(ctx):
    """Heterogeneous graphs (FakeHeteroDataset, to_hetero of GraphSAGE with sum aggregation, HeteroConv,
    HGTConv, HeteroData.to / node_types / metadata), the Explainer with GNNExplainer on node predictions,
    and a sweep of torch_geometric.utils on device tensors: scatter (sum/mean/max/min/mul), softmax,
    degree, add/remove self loops, to_undirected, is_undirected, coalesce, sort_edge_index, subgraph,
    k_hop_subgraph, dropout_edge/node, get_laplacian, homophily, contains_isolated_nodes, one_hot,
    mask_to_index, index_to_mask, cumsum, select/narrow, group_argsort, spmm, to_torch_coo/csr_tensor,
    and the graph transforms (GCNNorm, AddSelfLoops, AddRandomWalkPE, VirtualNode, LocalDegreeProfile,
    RemoveIsolatedNodes, ToDevice) applied on the device."""
    import torch_geometric.transforms as T
    import torch_geometric.utils as U
    from torch_geometric.datasets import FakeHeteroDataset
    from torch_geometric.explain import Explainer, GNNExplainer
    from torch_geometric.nn import GCN, GraphSAGE, HeteroConv, HGTConv, GATConv, SAGEConv, to_hetero

    torch.manual_seed(0)
    hetero = FakeHeteroDataset(num_graphs=1, num_node_types=2, num_edge_types=3, avg_num_nodes=60,
                               avg_num_channels=8, num_classes=3)[0]

    def run():
        failed = {}

        def go(name, fn):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        hd = hetero.clone().to(ctx.device)
        meta = hd.metadata()
        tgt = hd.node_types[0]

        def hetero_sage():
            torch.manual_seed(0)
            model = to_hetero(GraphSAGE((-1, -1), 16, 2, 3), meta, aggr="sum").to(ctx.device)
            with torch.no_grad():
                model(hd.x_dict, hd.edge_index_dict)
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            for _ in range(2):
                opt.zero_grad()
                out = model(hd.x_dict, hd.edge_index_dict)[tgt]
                F.cross_entropy(out, hd[tgt].y).backward()
                opt.step()

        def hetero_conv():
            conv = HeteroConv({et: (SAGEConv((-1, -1), 16) if i % 2 else GATConv((-1, -1), 16, add_self_loops=False))
                               for i, et in enumerate(hd.edge_types)}, aggr="sum").to(ctx.device)
            out = conv(hd.x_dict, hd.edge_index_dict)
            hgt = HGTConv(-1, 16, meta, heads=2).to(ctx.device)
            out2 = hgt(hd.x_dict, hd.edge_index_dict)
            (sum(v.sum() for v in out.values()) + sum(v.sum() for v in out2.values() if v is not None)).backward()

        def explain():
            data = _node_graph(ctx, n=120)
            model = GCN(data.num_features, 16, 2, 4).to(ctx.device)
            _fit_nodes(model, data, ctx, steps=2)
            explainer = Explainer(model=model, algorithm=GNNExplainer(epochs=5), explanation_type="model",
                                  node_mask_type="attributes", edge_mask_type="object",
                                  model_config=dict(mode="multiclass_classification", task_level="node",
                                                    return_type="raw"))
            exp = explainer(data.x, data.edge_index, index=torch.tensor([0, 3], device=ctx.device))
            exp.validate(raise_on_error=False)
            exp.get_explanation_subgraph()
            exp.get_complement_subgraph()

        def utils_sweep():
            data = _node_graph(ctx, n=200)
            ei, n, x = data.edge_index, data.num_nodes, data.x
            src = torch.randn(ei.size(1), 4, device=ctx.device)
            for reduce in ("sum", "mean", "max", "min", "mul"):
                U.scatter(src, ei[1], dim=0, dim_size=n, reduce=reduce)
            U.softmax(src[:, 0], ei[1], num_nodes=n)
            U.degree(ei[0], n)
            e2, _ = U.add_self_loops(ei, num_nodes=n)
            U.remove_self_loops(e2)
            U.add_remaining_self_loops(ei, num_nodes=n)
            U.to_undirected(ei, num_nodes=n)
            U.is_undirected(ei, num_nodes=n)
            U.coalesce(ei, num_nodes=n)
            U.sort_edge_index(ei, num_nodes=n)
            subset = torch.arange(0, n, 2, device=ctx.device)
            U.subgraph(subset, ei, num_nodes=n, relabel_nodes=True)
            U.k_hop_subgraph(torch.tensor([0, 5], device=ctx.device), 2, ei, relabel_nodes=True, num_nodes=n)
            U.dropout_edge(ei, p=0.2, force_undirected=True)
            U.dropout_node(ei, p=0.2, num_nodes=n)
            U.get_laplacian(ei, normalization="sym", num_nodes=n)
            U.homophily(ei, data.y, method="edge")
            U.homophily(ei, data.y, method="node")
            U.contains_isolated_nodes(ei, num_nodes=n)
            U.contains_self_loops(ei)
            U.one_hot(data.y)
            U.index_to_mask(U.mask_to_index(data.train_mask), size=n)
            U.cumsum(U.degree(ei[0], n, dtype=torch.long))
            U.to_dense_batch(x, torch.zeros(n, dtype=torch.long, device=ctx.device))
            U.to_dense_adj(ei, max_num_nodes=n)
            adj = U.to_torch_coo_tensor(ei, size=n)
            U.to_torch_csr_tensor(ei, size=n)
            U.spmm(adj, x)
            U.to_edge_index(adj)
            U.select(x, data.train_mask, 0)
            U.group_argsort(src[:, 0], ei[1], num_groups=n)
            U.erdos_renyi_graph(50, 0.1)
            U.grid(4, 4, device=ctx.device)
            U.unbatch_edge_index(ei, torch.zeros(n, dtype=torch.long, device=ctx.device))

        def transforms():
            data = _node_graph(ctx, n=150)
            tf = T.Compose([T.ToDevice(ctx.device), T.GCNNorm(), T.AddSelfLoops(), T.AddRandomWalkPE(walk_length=4),
                            T.LocalDegreeProfile(), T.VirtualNode(), T.RemoveIsolatedNodes()])
            tf(data.clone())
            T.AddRemainingSelfLoops()(data.clone())
            T.RandomLinkSplit(num_val=0.1, num_test=0.1)(data.clone())
            T.FeaturePropagation(missing_mask=torch.rand_like(data.x) < 0.1)(data.clone())

        for name, fn in (("hetero_sage", hetero_sage), ("hetero_conv", hetero_conv), ("explain", explain),
                         ("utils", utils_sweep), ("transforms", transforms)):
            go(name, fn)
        if failed:
            print("parts that failed:", failed)
    return run
