"""torchdiffeq: neural ODEs the way its README and examples/ (ode_demo.py, cnf.py, bouncing_ball.py)
use them, on the GPU: odeint with every solver and the options users pass, odeint_adjoint training
of an ODE function with Adam, a continuous normalizing flow, and odeint_event (nothing downloaded)."""

import os

import torch
import torch.nn as nn

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import torchdiffeq

    return os.path.dirname(os.path.realpath(torchdiffeq.__file__))


class Lambda(nn.Module):
    """ode_demo.py's true dynamics: dy/dt = (y**3) @ A."""

    def __init__(self, device):
        super().__init__()
        self.register_buffer("A", torch.tensor([[-0.1, 2.0], [-2.0, -0.1]], device=device))

    def forward(self, t, y):
        return torch.mm(y ** 3, self.A)


class ODEFunc(nn.Module):
    def __init__(self, dim=2, hidden=50):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.nfe = 0

    def forward(self, t, y):
        self.nfe += 1
        return self.net(y ** 3)


@scenario
def solvers(ctx):
    """odeint of ode_demo's spiral with all fixed- and adaptive-step solvers (rtol/atol, step_size,
    perturb, grid_constructor, jump_t, first_step, max_num_steps, norm), a backward through the
    solution, and the scipy_solver wrapper."""
    from torchdiffeq import odeint

    dev = ctx.device
    func = Lambda(dev).to(dev)
    y0 = torch.tensor([[2.0, 0.0]], device=dev)
    t = torch.linspace(0.0, 5.0, 20, device=dev)
    adaptive = ["dopri5", "dopri8", "bosh3", "fehlberg2", "adaptive_heun"]
    fixed = ["euler", "midpoint", "heun2", "heun3", "rk4", "explicit_adams", "implicit_adams", "fixed_adams"]

    def run():
        out = {}
        for m in adaptive:
            yt = odeint(func, y0, t, method=m, rtol=1e-5, atol=1e-6)
            out[m] = yt[-1]
        yt = odeint(func, y0, t, method="dopri5", options=dict(first_step=0.01, max_num_steps=10_000))
        yt = odeint(func, y0, t, method="dopri5", options=dict(jump_t=torch.tensor([1.5, 3.0], device=dev)))
        yt = odeint(func, y0, t, method="dopri5", options=dict(step_t=torch.tensor([2.5], device=dev)))
        yt = odeint(func, y0, t, method="dopri5", options=dict(norm=lambda x: x.abs().max()))
        for m in fixed:
            yt = odeint(func, y0, t, method=m, options=dict(step_size=0.05))
            out[m] = yt[-1]
        yt = odeint(func, y0, t, method="rk4", options=dict(step_size=0.05, perturb=True))
        yt = odeint(func, y0, t, method="euler",
                    options=dict(grid_constructor=lambda f, y0, t: torch.linspace(t[0], t[-1], 60, device=t.device)))
        # a tuple state and a backward through the solution
        p = torch.randn(2, device=dev, requires_grad=True)
        yt = odeint(lambda t, s: (s[1], -s[0] * p[0]), (y0[0, :1] + p[1], y0[0, 1:]), t, method="dopri5")
        (yt[0][-1].sum() + yt[1][-1].sum()).backward()
        yt = odeint(func, y0, t, method="scipy_solver", options=dict(solver="RK45"))
        return out

    return run


@scenario
def neural_ode_train(ctx):
    """ode_demo.py: fit an ODEFunc to a true trajectory with random batches of initial points,
    with odeint and with odeint_adjoint (default and seminorm adjoint options), RMSprop, loss.item()
    printed every few iterations, a test evaluation under no_grad."""
    from torchdiffeq import odeint, odeint_adjoint

    dev = ctx.device
    data_size, batch_time, batch_size = 200, 10, 16
    true_y0 = torch.tensor([[2.0, 0.0]], device=dev)
    t = torch.linspace(0.0, 25.0, data_size, device=dev)
    with torch.no_grad():
        true_y = odeint(Lambda(dev).to(dev), true_y0, t, method="dopri5")

    def get_batch(gen):
        s = torch.from_numpy(gen.choice(range(data_size - batch_time), batch_size, replace=False))
        batch_y0 = true_y[s]
        batch_t = t[:batch_time]
        batch_y = torch.stack([true_y[s + i] for i in range(batch_time)], dim=0)
        return batch_y0.to(dev), batch_t.to(dev), batch_y.to(dev)

    def run():
        import numpy as np

        gen = np.random.default_rng(0)
        for solve, kw in [(odeint, {}), (odeint_adjoint, {}),
                          (odeint_adjoint, dict(adjoint_options=dict(norm="seminorm"))),
                          (odeint_adjoint, dict(adjoint_method="rk4", adjoint_options=dict(step_size=0.1)))]:
            torch.manual_seed(0)
            func = ODEFunc().to(dev)
            opt = torch.optim.RMSprop(func.parameters(), lr=1e-3)
            for itr in range(1, 7):
                opt.zero_grad()
                by0, bt, by = get_batch(gen)
                pred_y = solve(func, by0, bt, rtol=1e-4, atol=1e-5, **kw)
                loss = torch.mean(torch.abs(pred_y - by))
                loss.backward()
                opt.step()
                if itr % 3 == 0:
                    with torch.no_grad():
                        pred_y = odeint(func, true_y0, t)
                        loss = torch.mean(torch.abs(pred_y - true_y))
                        print(f"Iter {itr:04d} | Total Loss {loss.item():.6f} | nfe {func.nfe}")

    return run


@scenario
def cnf_and_events(ctx):
    """cnf.py: a continuous normalizing flow (hypernetwork, exact trace of the Jacobian) trained
    with odeint_adjoint; bouncing_ball.py: odeint_event with an event function, differentiated with
    odeint_adjoint, and reversing the state at each bounce."""
    from torchdiffeq import odeint, odeint_adjoint, odeint_event

    dev = ctx.device

    class HyperNetwork(nn.Module):
        def __init__(self, in_out_dim, hidden_dim, width):
            super().__init__()
            blocksize = width * in_out_dim
            self.fc1, self.fc2 = nn.Linear(1, hidden_dim), nn.Linear(hidden_dim, hidden_dim)
            self.fc3 = nn.Linear(hidden_dim, 3 * blocksize + width)
            self.in_out_dim, self.hidden_dim, self.width, self.blocksize = in_out_dim, hidden_dim, width, blocksize

        def forward(self, t):
            params = self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(t.reshape(1, 1)))))).reshape(-1)
            W = params[: self.blocksize].reshape(self.width, self.in_out_dim, 1)
            U = params[self.blocksize: 2 * self.blocksize].reshape(self.width, 1, self.in_out_dim)
            G = params[2 * self.blocksize: 3 * self.blocksize].reshape(self.width, 1, self.in_out_dim)
            U = U * torch.sigmoid(G)
            B = params[3 * self.blocksize:].reshape(self.width, 1, 1)
            return [W, B, U]

    def trace_df_dz(f, z):
        s = torch.zeros(z.shape[0], device=z.device)
        for i in range(z.shape[1]):
            s += torch.autograd.grad(f[:, i].sum(), z, create_graph=True)[0][:, i]
        return s.view(-1, 1)

    class CNF(nn.Module):
        def __init__(self, in_out_dim=2, hidden_dim=16, width=8):
            super().__init__()
            self.hyper_net = HyperNetwork(in_out_dim, hidden_dim, width)
            self.width = width

        def forward(self, t, states):
            z = states[0]
            with torch.set_grad_enabled(True):
                z.requires_grad_(True)
                W, B, U = self.hyper_net(t)
                Z = torch.unsqueeze(z, 0).repeat(self.width, 1, 1)
                h = torch.tanh(torch.matmul(Z, W) + B)
                dz_dt = torch.matmul(h, U).mean(0)
                dlogp_z_dt = -trace_df_dz(dz_dt, z).view(-1, 1)
            return (dz_dt, dlogp_z_dt)

    class BouncingBall(nn.Module):
        def __init__(self):
            super().__init__()
            self.gravity = nn.Parameter(torch.as_tensor([9.8]))
            self.log_radius = nn.Parameter(torch.log(torch.as_tensor([0.2])))
            self.t0 = nn.Parameter(torch.tensor([0.0]))
            self.init_pos = nn.Parameter(torch.tensor([10.0]))
            self.init_vel = nn.Parameter(torch.tensor([0.0]))
            self.absorption = nn.Parameter(torch.tensor([0.2]))
            self.odeint = odeint_adjoint

        def forward(self, t, state):
            pos, vel, log_radius = state
            return vel, -self.gravity, torch.zeros_like(log_radius)

        def event_fn(self, t, state):
            pos, _, log_radius = state
            return pos - torch.exp(log_radius)

        def get_collision_times(self, nbounces=2):
            event_times = []
            t0, state = self.t0, (self.init_pos, self.init_vel, self.log_radius)
            for _ in range(nbounces):
                event_t, solution = odeint_event(self, state, t0, event_fn=self.event_fn, reverse_time=False,
                                                 atol=1e-8, rtol=1e-8, odeint_interface=self.odeint)
                event_times.append(event_t)
                pos, vel, log_radius = tuple(s[-1] for s in solution)
                pos = pos + 1e-7  # as the example: do not trigger the event again at once
                state = (pos, -vel * (1 - self.absorption), log_radius)
                t0 = event_t
            return event_times

    def run():
        torch.manual_seed(0)
        func = CNF().to(dev)
        opt = torch.optim.Adam(func.parameters(), lr=1e-3)
        p_z0 = torch.distributions.MultivariateNormal(torch.zeros(2, device=dev), torch.eye(2, device=dev) * 0.1)
        t0, t1 = 0.0, 10.0
        for itr in range(3):
            opt.zero_grad()
            x = torch.randn(64, 2, device=dev)
            logp_diff_t1 = torch.zeros(64, 1, device=dev)
            z_t, logp_diff_t = odeint_adjoint(func, (x, logp_diff_t1), torch.tensor([t1, t0], device=dev),
                                              atol=1e-4, rtol=1e-4, method="dopri5")
            z_t0, logp_diff_t0 = z_t[-1], logp_diff_t[-1]
            logp_x = p_z0.log_prob(z_t0).to(dev) - logp_diff_t0.view(-1)
            loss = -logp_x.mean(0)
            loss.backward()
            opt.step()
            print("Iter: {}, loss: {:.4f}".format(itr, loss.item()))
        with torch.no_grad():
            z0 = p_z0.sample([64]).to(dev)
            z_t_samples, _ = odeint(func, (z0, torch.zeros(64, 1, device=dev)),
                                    torch.linspace(t0, t1, 5, device=dev), atol=1e-4, rtol=1e-4, method="dopri5")
        ball = BouncingBall().to(dev)
        times = ball.get_collision_times()
        sum(times).sum().backward()
        ball.odeint = odeint
        times = ball.get_collision_times()
        return [float(x) for x in times]

    return run
