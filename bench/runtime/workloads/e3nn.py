"""e3nn: E(3)-equivariant networks on the GPU the way its README, docs and examples use them:
training the shipped point-cloud models (gate_points_2101/2102 Network, v2106 SimpleNetwork and
NetworkForAGraphWithAttributes) on random molecules with Adam, the tetris-style convolution built
from the documented parts (spherical_harmonics, soft_one_hot_linspace, FullyConnectedTensorProduct
with weights from a radial FullyConnectedNet, Gate, scatter by index_add), and the o3/nn/io/math
toolbox (Irreps, rotations and Wigner D, tensor products, Linear, Norm, BatchNorm, NormActivation,
S2/SO3 grids and activations, ReducedTensorProducts and CartesianTensor, equivariance checks).
Nothing downloaded."""

import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import e3nn

    return os.path.dirname(os.path.realpath(e3nn.__file__))


def _molecules(dev, n_graphs=4, n_nodes=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    pos = torch.randn(n_graphs * n_nodes, 3, generator=g) * 1.2
    batch = torch.arange(n_graphs).repeat_interleave(n_nodes)
    z = torch.randint(0, 3, (n_graphs * n_nodes,), generator=g)
    y = torch.randn(n_graphs, generator=g)
    return pos.to(dev), batch.to(dev), z.to(dev), y.to(dev)


@scenario
def train_models(ctx):
    """A few Adam steps of each shipped model on batches of random point clouds: gate_points_2101
    Network with node attributes (one-hot atom types) and pooling, gate_points_2102 Network,
    v2106 SimpleNetwork and NetworkForAGraphWithAttributes; loss.item() per step; an eval
    forward on rotated inputs compared with the rotated output (invariance check)."""
    from e3nn import o3
    from e3nn.nn.models.gate_points_2101 import Network as Network2101
    from e3nn.nn.models.gate_points_2102 import Network as Network2102
    from e3nn.nn.models.v2106.gate_points_networks import NetworkForAGraphWithAttributes, SimpleNetwork

    dev = ctx.device
    pos, batch, z, y = _molecules(dev)
    node_attr = torch.nn.functional.one_hot(z, 3).float()

    def build():
        torch.manual_seed(0)
        return {
            "2101": Network2101(irreps_in=None, irreps_hidden="8x0e + 8x0o + 4x1e + 4x1o", irreps_out="1x0e",
                                irreps_node_attr="3x0e", irreps_edge_attr=o3.Irreps.spherical_harmonics(2), layers=2,
                                max_radius=2.5, number_of_basis=8, radial_layers=1, radial_neurons=16,
                                num_neighbors=3.0, num_nodes=6.0, reduce_output=True).to(dev),
            "2102": Network2102(irreps_in="3x0e", irreps_hidden="8x0e + 8x0o + 4x1e + 4x1o", irreps_out="1x0e",
                                irreps_node_attr="3x0e", irreps_edge_attr=o3.Irreps.spherical_harmonics(2), layers=2,
                                max_radius=2.5, number_of_basis=8, radial_layers=1, radial_neurons=16,
                                num_neighbors=3.0, num_nodes=6.0, reduce_output=True).to(dev),
            "simple": SimpleNetwork("3x0e", "1x0e", max_radius=2.5, num_neighbors=3.0, num_nodes=6.0, mul=8,
                                    layers=2, lmax=2).to(dev),
            "attrs": NetworkForAGraphWithAttributes("3x0e", "3x0e", "1x0e", "1x0e", max_radius=2.5, num_neighbors=3.0,
                                                    num_nodes=6.0, mul=8, layers=2, lmax=2).to(dev),
        }

    def data_for(name, p):
        if name == "2101":
            return {"pos": p, "z": node_attr, "batch": batch}
        if name == "2102":
            return {"pos": p, "x": node_attr, "z": node_attr, "batch": batch}
        if name == "simple":
            return {"pos": p, "x": node_attr, "batch": batch}
        # a fixed chain graph per molecule
        src = torch.arange(pos.shape[0] - 1, device=dev)
        keep = batch[src] == batch[src + 1]
        ei = torch.stack([src[keep], src[keep] + 1])
        ei = torch.cat([ei, ei.flip(0)], 1)
        return {"pos": p, "batch": batch, "edge_index": ei, "node_input": node_attr, "node_attr": node_attr,
                "edge_attr": torch.ones(ei.shape[1], 1, device=dev)}

    def run():
        for name, net in build().items():
            if net is None:
                continue
            opt = torch.optim.Adam(net.parameters(), lr=1e-2)
            for step in range(3):
                out = net(data_for(name, pos)).reshape(-1)[: y.numel()]
                loss = (out - y).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(f"{name} step {step} loss {loss.item():.4f}")
            net.eval()
            with torch.no_grad():
                R = o3.rand_matrix().to(dev)
                a, b = net(data_for(name, pos)), net(data_for(name, pos @ R.T))
                print(name, "invariance error", (a - b).abs().max().item())

    return run


@scenario
def tetris_conv(ctx):
    """The tetris example / "Convolution" doc page: a graph from pairwise distances, spherical
    harmonics of edge vectors, soft_one_hot_linspace edge embedding, FullyConnectedTensorProduct
    with weights from a FullyConnectedNet, Gate nonlinearity, scatter by index_add, graph pooling;
    cross-entropy training with Adam and accuracy; assert_equivariant on the trained model."""
    from e3nn import o3
    from e3nn.math import soft_one_hot_linspace, soft_unit_step
    from e3nn.nn import FullyConnectedNet, Gate
    from e3nn.util.test import assert_equivariant

    dev = ctx.device
    tetris = torch.tensor([
        [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 1, 0)], [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, -1, 0)],
        [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)], [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)],
        [(0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 0)], [(0, 0, 0), (1, 0, 0), (2, 0, 0), (1, 1, 0)],
        [(0, 0, 0), (1, 0, 0), (1, 1, 0), (2, 1, 0)], [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]],
        dtype=torch.get_default_dtype())
    labels = torch.arange(8)

    class Conv(torch.nn.Module):
        def __init__(self, irreps_in, irreps_out, max_radius=1.1, num_basis=10):
            super().__init__()
            self.irreps_sh = o3.Irreps.spherical_harmonics(3)
            self.max_radius, self.num_basis = max_radius, num_basis
            self.tp = o3.FullyConnectedTensorProduct(irreps_in, self.irreps_sh, irreps_out, shared_weights=False)
            self.fc = FullyConnectedNet([num_basis, 16, self.tp.weight_numel], torch.relu)

        def forward(self, x, pos, edge_src, edge_dst, num_neighbors):
            edge_vec = pos[edge_dst] - pos[edge_src]
            sh = o3.spherical_harmonics(self.irreps_sh, edge_vec, normalize=True, normalization="component")
            emb = soft_one_hot_linspace(edge_vec.norm(dim=1), 0.0, self.max_radius, self.num_basis,
                                        basis="smooth_finite", cutoff=True).mul(self.num_basis ** 0.5)
            w = self.fc(emb)
            edge_features = self.tp(x[edge_src], sh, w)
            out = torch.zeros(x.shape[0], edge_features.shape[1], device=x.device, dtype=x.dtype)
            return out.index_add(0, edge_dst, edge_features).div(num_neighbors ** 0.5)

    class TetrisNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            gate = Gate("8x0e + 8x0o", [torch.relu, torch.abs], "8x0e", [torch.relu], "4x1e + 4x1o")
            self.c1 = Conv("0e", gate.irreps_in)
            self.g1 = gate
            self.c2 = Conv(gate.irreps_out, "0o + 7x0e")

        def forward(self, pos):
            n_graphs = pos.shape[0]
            pos = pos.reshape(-1, 3)
            batch = torch.arange(n_graphs, device=pos.device).repeat_interleave(4)
            d = torch.cdist(pos, pos)
            same = batch[:, None] == batch[None, :]
            edge_src, edge_dst = torch.nonzero(same & (d < 1.1) & (d > 0), as_tuple=True)
            x = pos.new_ones(pos.shape[0], 1)
            x = self.g1(self.c1(x, pos, edge_src, edge_dst, 2.0))
            x = self.c2(x, pos, edge_src, edge_dst, 2.0)
            out = torch.zeros(n_graphs, x.shape[1], device=x.device).index_add(0, batch, x)
            odd, even1, even2 = out[:, :1], out[:, 1:2], out[:, 2:]
            return torch.cat([odd * even1, -odd * even1, even2], dim=1)

    def run():
        torch.manual_seed(0)
        net = TetrisNet().to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        x, y = tetris.to(dev), labels.to(dev)
        for step in range(6):
            pred = net(x)
            loss = torch.nn.functional.cross_entropy(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            acc = pred.argmax(1).eq(y).double().mean().item()
            print(f"epoch {step:5d} | loss {loss.item():<10.1f} | {100 * acc:5.1f}% accuracy")
        soft_unit_step(torch.linspace(-1, 1, 5, device=dev))
        net.cpu()
        assert_equivariant(lambda pos: net(pos[None])[0], args_in=[tetris[0]], irreps_in=["cartesian_points"],
                           irreps_out=["0o + 7x0e"])
        net.to(dev)

    return run


@scenario
def o3_toolbox(ctx):
    """The o3/nn/io/math API on device tensors: Irreps algebra and randn/D_from_matrix, rotations
    (rand_matrix, angles/quaternion/axis-angle conversions, compose; D matrices built on the CPU), spherical harmonics
    and spherical_harmonics_alpha_beta, FullTensorProduct/ElementwiseTensorProduct/TensorSquare/
    FullyConnectedTensorProduct, Linear, Norm, BatchNorm (train and eval), NormActivation,
    Activation, Extract, Dropout, S2Activation and SO3Activation with ToS2Grid/FromS2Grid, SphericalTensor peaks and grids,
    ReducedTensorProducts, CartesianTensor and SphericalTensor, Bessel basis, equivariance tests."""
    from e3nn import io, math as emath, nn as enn, o3
    from e3nn.util.test import equivariance_error

    dev = ctx.device

    def run():
        torch.manual_seed(0)
        irreps = o3.Irreps("4x0e + 3x1o + 2x2e")
        x = irreps.randn(16, -1).to(dev)
        R = o3.rand_matrix(16).to(dev)
        # Wigner D matrices are built on the CPU (e3nn 0.6.0's wigner_D keeps its generators there) and moved
        D = irreps.D_from_matrix(R.cpu()).to(dev)
        xr = torch.einsum("bij,bj->bi", D, x)
        a, b, c = o3.matrix_to_angles(R)
        q = o3.matrix_to_quaternion(R)
        o3.quaternion_to_matrix(q), o3.angles_to_quaternion(a, b, c), o3.axis_angle_to_matrix(*o3.matrix_to_axis_angle(R))
        o3.compose_angles(a, b, c, a, b, c), o3.xyz_to_angles(torch.randn(16, 3, device=dev))
        (irreps + "1e").simplify(), irreps.sort(), irreps.dim, irreps.lmax, irreps * 2, o3.Irrep("1o") * o3.Irrep("1o")
        vec = torch.randn(32, 3, device=dev)
        o3.spherical_harmonics([0, 1, 2, 3], vec, normalize=True)
        o3.spherical_harmonics_alpha_beta([0, 1, 2], *o3.xyz_to_angles(vec))
        mods = [o3.FullTensorProduct(irreps, "1o + 1e"), o3.ElementwiseTensorProduct("4x0e + 3x1o", "4x1o + 3x0e"),
                o3.TensorSquare("2x0e + 1x1o"), o3.FullyConnectedTensorProduct(irreps, "0e + 1o", "3x0e + 2x1o"),
                o3.Linear(irreps, "8x0e + 4x1o"), o3.Norm(irreps), enn.BatchNorm(irreps),
                enn.BatchNorm(irreps, instance=True), enn.NormActivation(irreps, torch.sigmoid),
                enn.Activation("4x0e", [torch.tanh]), enn.Extract(irreps, ["3x1o", "4x0e"], [(1,), (0,)]),
                enn.Dropout(irreps, 0.2)]
        mods = [m.to(dev) for m in mods]
        for m in mods:
            m.train()
            if isinstance(m, (o3.FullTensorProduct, o3.FullyConnectedTensorProduct)):
                out = m(x, torch.randn(16, m.irreps_in2.dim, device=dev))
            elif isinstance(m, o3.ElementwiseTensorProduct):
                out = m(torch.randn(16, 13, device=dev), torch.randn(16, 15, device=dev))
            elif isinstance(m, o3.TensorSquare):
                out = m(torch.randn(16, 5, device=dev))
            elif isinstance(m, enn.Activation):
                out = m(torch.randn(16, 4, device=dev))
            else:
                out = m(x)
            out = out[0] if isinstance(out, tuple) else out
            out.sum().backward() if out.requires_grad else None
            m.eval()
        with torch.no_grad():
            mods[6](x)
        # grids and activations on the sphere and SO(3)
        s2 = enn.S2Activation("0e + 1o + 2e", torch.tanh, res=20).to(dev)
        s2(o3.Irreps("0e + 1o + 2e").randn(8, -1).to(dev))
        so3 = enn.SO3Activation(2, 2, torch.tanh, 8).to(dev)
        so3(torch.randn(8, sum((2 * l + 1) ** 2 for l in range(3)), device=dev))
        to_grid, from_grid = o3.ToS2Grid(3, (10, 11)).to(dev), o3.FromS2Grid((10, 11), 3).to(dev)
        from_grid(to_grid(torch.randn(8, 16, device=dev)))
        # tensors
        ct = io.CartesianTensor("ij=ji")
        t = torch.randn(8, 3, 3, device=dev)
        t = t + t.transpose(1, 2)
        ct.to_cartesian(ct.from_cartesian(t).to(dev))
        rtp = o3.ReducedTensorProducts("ij=-ji", i="1o")
        rtp.to(dev)(torch.randn(4, 3, device=dev), torch.randn(4, 3, device=dev))
        st = io.SphericalTensor(2, 1, -1)
        sig = st.randn(8, -1).to(dev)
        st.signal_xyz(sig, torch.randn(8, 3, device=dev)), st.norms(sig)
        peaks = st.with_peaks_at(torch.randn(3, 3, device=dev), torch.rand(3, device=dev))
        # the grid helpers build their ToS2Grid / D matrices on the CPU: called on CPU copies
        st.signal_on_grid(sig.cpu(), 10)
        st.find_peaks(peaks.cpu(), res=20)
        st.sum_of_diracs(torch.randn(4, 3, device=dev), torch.rand(4, device=dev))
        emath.soft_one_hot_linspace(torch.rand(20, device=dev), 0.0, 1.0, 8, basis="bessel", cutoff=True)
        emath.soft_one_hot_linspace(torch.rand(20, device=dev), 0.0, 1.0, 8, basis="gaussian", cutoff=False)
        emath.soft_one_hot_linspace(torch.rand(20, device=dev), 0.0, 1.0, 8, basis="cosine", cutoff=True)
        lin = o3.Linear("2x0e + 1x1o", "2x0e + 1x1o")  # the check builds its rotations on the CPU
        equivariance_error(lin, args_in=[o3.Irreps("2x0e + 1x1o").randn(4, -1)],
                           irreps_in=["2x0e + 1x1o"], irreps_out=["2x0e + 1x1o"])

    return run
