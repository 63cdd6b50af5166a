"""`synclint verify`: the CPU simulation sees what the catalogue says syncs, the fixtures verify, and the
CUDA path's plumbing (debug-mode hook, wrappers, timing, table, JSON) runs against a fake GPU."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from synclint.verify.cpu import Simulator  # noqa: E402
from synclint.verify.sites import RACE, WAIT, UserCode  # noqa: E402

REQUIRED_FIELDS = {
    "fixture", "rule", "kernel", "device", "simulated", "syncs_before", "syncs_after", "host_wait_us_before",
    "host_wait_us_after", "outputs_equal", "step_ms_before", "step_ms_after", "note", "status", "ok",
}


# --------------------------------------------------------------------------------------
# The simulation, operation by operation (catalogue rows)
# --------------------------------------------------------------------------------------


def simulate(build, kernel):
    """Run `kernel(*build(device))` under the simulation; inputs are placed as a GPU run would place them."""
    sim = Simulator(UserCode([__file__]))
    with sim.prepare():
        args = build(sim.device)
    with sim.watch() as recording:
        kernel(*args)
    return recording


def vec(d):
    torch.manual_seed(0)
    return (torch.randn(64, device=d),)


def mat(d):
    torch.manual_seed(0)
    a = torch.randn(8, 8, device=d)
    return (a @ a.mT + 8 * torch.eye(8, device=d),)


def ints(d):
    return (torch.randint(0, 8, (64,), device=d),)


def with_grad(d):
    torch.manual_seed(0)
    weight = torch.randn(4, 4, device=d, requires_grad=True)
    (weight * 2).sum().backward()
    return ([weight],)


def twos(d):
    return (torch.full((64,), 2, device=d),)


def with_gpu_idx(d):
    return (torch.randn(64, device=d), torch.tensor([1, 2, 3], device=d))


def with_host(d):
    return (torch.randn(64, device=d), torch.randn(64))


CASES = [
    # (name, build, kernel, syncs) -- the catalogue's verdict on a CUDA tensor
    ("t.item()", vec, lambda x: x.sum().item(), 1),
    ("if (x > 0).any():", vec, lambda x: 1 if (x > 0).any() else 0, 1),
    ("(x > 0).any() alone", vec, lambda x: (x > 0).any(), 0),
    ("int(t)", vec, lambda x: int(x.argmax()), 1),
    ("f'{t:.3f}'", vec, lambda x: f"{x.max():.3f}", 1),
    ("print/repr(t)", vec, lambda x: repr(x), 1),
    ("t.tolist()", vec, lambda x: x.tolist(), 1),
    ("x.cpu()", vec, lambda x: x.cpu(), 1),
    ("x.to('cpu')", vec, lambda x: x.to("cpu"), 1),
    ("x.to('cpu', non_blocking=True)", vec, lambda x: x.to("cpu", non_blocking=True), 0),
    ("builtin max over a device tensor", lambda d: (torch.randn(5, device=d),), lambda x: max(x), 4),
    ("x[:t] (slice by 0-dim)", ints, lambda x: x[: x[0]], 1),
    ("torch.arange(t_max)", ints, lambda x: torch.arange(x.max()), 1),
    ("torch.nonzero(x)", vec, lambda x: torch.nonzero(x > 0), 1),
    ("torch.argwhere(x)", vec, lambda x: torch.argwhere(x > 0), 1),
    ("torch.where(cond) 1-arg", vec, lambda x: torch.where(x > 0), 1),
    ("torch.where(cond, x, 0.) 3-arg", vec, lambda x: torch.where(x > 0, x, 0.0), 0),
    ("x[mask]", vec, lambda x: x[x > 0], 1),
    ("torch.masked_select", vec, lambda x: torch.masked_select(x, x > 0), 1),
    ("torch.unique", ints, lambda x: torch.unique(x), 1),
    ("torch.unique_consecutive", ints, lambda x: torch.unique_consecutive(x), 1),
    ("repeat_interleave no output_size", twos, lambda x: torch.repeat_interleave(x, x, dim=0), 1),
    ("repeat_interleave(output_size=)", twos, lambda x: torch.repeat_interleave(x, x, dim=0, output_size=128), 0),
    ("repeat_interleave(repeats) no output_size", ints, lambda x: torch.repeat_interleave(x), 1),
    ("torch.nonzero_static", vec, lambda x: torch.nonzero_static(x > 0, size=16), 0),
    ("torch.count_nonzero", vec, lambda x: torch.count_nonzero(x), 0),
    ("torch.bincount", ints, lambda x: torch.bincount(x), 1),
    ("torch.bincount(minlength=)", ints, lambda x: torch.bincount(x, minlength=100), 1),
    ("torch.histc", vec, lambda x: torch.histc(x, bins=10), 1),
    ("torch.histc(min, max)", vec, lambda x: torch.histc(x, bins=10, min=-3, max=3), 0),
    ("F.one_hot(x)", ints, lambda x: torch.nn.functional.one_hot(x), 1),
    ("F.one_hot(x, num_classes=)", ints, lambda x: torch.nn.functional.one_hot(x, num_classes=100), 0),
    ("torch.equal(a, a)", vec, lambda x: torch.equal(x, x), 0),
    ("torch.equal(a, a.clone())", vec, lambda x: torch.equal(x, x.clone()), 1),
    ("torch.allclose", vec, lambda x: torch.allclose(x, x.clone()), 1),
    ("x.max() full reduce", vec, lambda x: x.max(), 0),
    ("torch.topk / sort / cumsum", vec, lambda x: (torch.topk(x, 8), torch.sort(x), torch.cumsum(x, 0)), 0),
    ("torch.multinomial", vec, lambda x: torch.multinomial(x.softmax(0), 1), 0),
    ("len(x) / x.shape", vec, lambda x: (len(x), x.shape[0]), 0),
    ("torch.isin(x, test[8])", ints, lambda x: torch.isin(x, torch.arange(8, device=x.device)), 0),
    ("torch.isin(x, test[1024])", ints, lambda x: torch.isin(x, torch.arange(1024, device=x.device)), 1),
    ("torch.linalg.inv", mat, lambda a: torch.linalg.inv(a), 1),
    ("torch.linalg.inv_ex", mat, lambda a: torch.linalg.inv_ex(a), 0),
    ("torch.linalg.cholesky", mat, lambda a: torch.linalg.cholesky(a), 1),
    ("torch.linalg.cholesky_ex", mat, lambda a: torch.linalg.cholesky_ex(a), 0),
    ("torch.linalg.solve", mat, lambda a: torch.linalg.solve(a, a[:, :1]), 1),
    ("Categorical(probs=p)", vec, lambda x: torch.distributions.Categorical(probs=x.softmax(0)), 1),
    ("Categorical(probs=p, validate_args=False)", vec,
     lambda x: torch.distributions.Categorical(probs=x.softmax(0), validate_args=False), 0),
    ("clip_grad_norm_(params, 1.0)", with_grad, lambda p: torch.nn.utils.clip_grad_norm_(p, 1.0), 0),
    ("clip_grad_norm_(..., error_if_nonfinite=True)", with_grad,
     lambda p: torch.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True), 1),
    ("x[0] = 1.0", vec, lambda x: x.__setitem__(0, 1.0), 1),
    ("x2d[1, 2] = 1.0", mat, lambda a: a.__setitem__((1, 2), 1.0), 1),
    ("x[0:1] = 1.0", vec, lambda x: x.__setitem__(slice(0, 1), 1.0), 0),
    ("x[mask] = 0.0", vec, lambda x: x.__setitem__(x > 0, 0.0), 0),
    ("x[0].fill_(1.0)", vec, lambda x: x[0].fill_(1.0), 0),
    ("x[gpu_idx] = 1.0", with_gpu_idx, lambda x, i: x.__setitem__(i, 1.0), 1),
    ("x[0] = gpu_0dim", vec, lambda x: x.__setitem__(0, x[5]), 0),
    ("x.index_fill_(0, gpu_idx, 1.0)", with_gpu_idx, lambda x, i: x.index_fill_(0, i, 1.0), 0),
    ("x.masked_fill(mask, 0.0)", vec, lambda x: x.masked_fill(x > 0, 0.0), 0),
    ("x.masked_fill(mask, gpu_0dim)", vec, lambda x: x.masked_fill(x > 0, x[3]), 1),
    ("x[[1, 2, 3]]", vec, lambda x: x[[1, 2, 3]], 1),
    ("x[gpu_idx]", with_gpu_idx, lambda x, i: x[i], 0),
    ("x[cpu_idx]", vec, lambda x: x[torch.tensor([1, 2])], 1),
    ("pageable.to(cuda)", with_host, lambda x, h: h.to(x.device), 1),
    ("pageable.to(cuda, non_blocking=True)", with_host, lambda x, h: h.to(x.device, non_blocking=True), 0),
    ("host.cuda()", with_host, lambda x, h: h.cuda(), 1),
    ("dst.copy_(host)", with_host, lambda x, h: x.copy_(h), 1),
    ("dst.copy_(host, non_blocking=True)", with_host, lambda x, h: x.copy_(h, non_blocking=True), 0),
    ("torch.tensor(list, device=cuda)", vec, lambda x: torch.tensor([1, 2], device=x.device), 1),
    ("torch.as_tensor(ndarray, device=cuda)", vec, lambda x: torch.as_tensor(x.new_zeros(1).cpu().numpy(),
                                                                             device=x.device), 2),
    ("x.new_tensor(list)", vec, lambda x: x.new_tensor([1.0, 2.0]), 1),
    ("torch.tensor(list).to(cuda, non_blocking=True)", vec,
     lambda x: torch.tensor([1, 2]).to(x.device, non_blocking=True), 0),
    ("torch.cuda.synchronize()", vec, lambda x: torch.cuda.synchronize(), 1),
    ("host tensor .item() (no GPU involved)", with_host, lambda x, h: h.sum().item(), 0),
    ("factory on the device, then .item()", vec, lambda x: torch.zeros(3, device=x.device).sum().item(), 1),
]


@pytest.mark.parametrize("name,build,kernel,syncs", CASES, ids=[c[0] for c in CASES])
def test_simulation_counts_what_the_catalogue_says(name, build, kernel, syncs):
    recording = simulate(build, kernel)
    assert recording.syncs == syncs, [(e.op, e.site) for e in recording.events]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (bench/verify_cuda.sh runs it)")
@pytest.mark.parametrize("name,build,kernel,syncs", CASES, ids=[c[0] for c in CASES])
def test_simulation_agrees_with_cuda_on_every_catalogue_row(name, build, kernel, syncs):
    """On a GPU: the CUDA detector (debug mode + wrappers) sees a sync exactly where the simulation does.
    CUDA may count 2-3 syncs for one op (bincount, isin, print), so only sync / no sync is compared."""
    from synclint.verify.cuda import CudaDetector

    device = torch.device("cuda", torch.cuda.current_device())
    kernel(*build(device))  # warm-up: lazy library handles and workspaces
    args = build(device)
    torch.cuda.synchronize()
    with CudaDetector(UserCode([__file__]), device).watch() as recording:
        kernel(*args)
    torch.cuda.synchronize()
    assert (recording.syncs > 0) == (syncs > 0), (recording.syncs, [(e.op, e.site) for e in recording.events])


def test_simulated_syncs_point_at_the_line_that_synced():
    def kernel(x):
        y = x * 2
        return y.sum().item()  # the line

    recording = simulate(vec, kernel)
    (event,) = recording.events
    assert event.site.file == __file__ and event.site.function == "kernel"
    assert event.site.source() == "return y.sum().item()  # the line"


def test_large_pageable_non_blocking_copy_waits():
    def build(d):
        return (torch.zeros(1, device=d), torch.zeros(2 << 20))  # 8 MB on the host

    recording = simulate(build, lambda x, h: h.to(x.device, non_blocking=True))
    assert recording.syncs == 0 and [e.kind for e in recording.events] == [WAIT]


def test_reading_an_unfinished_non_blocking_copy_is_a_race_until_synchronized():
    def racy(x):
        return x.to("cpu", non_blocking=True).tolist()

    def synchronized(x):
        host = x.to("cpu", non_blocking=True)
        torch.cuda.synchronize()
        return host.tolist()

    assert [e.kind for e in simulate(vec, racy).events] == [RACE]
    assert [e.kind for e in simulate(vec, synchronized).events] == ["sync"]  # the synchronize itself


def test_simulated_device_tensors_take_the_gpu_branch():
    seen = {}

    def kernel(x, h):
        seen.update(device=x.device, is_cuda=x.is_cuda, host_device=h.device, derived=torch.ones(1, device=x.device).is_cuda)

    simulate(with_host, kernel)
    assert seen == {"device": torch.device("cuda", 0), "is_cuda": True, "host_device": torch.device("cpu"), "derived": True}


def test_a_training_step_on_the_simulated_device_does_not_sync():
    """No false alarms from torch's own code: Module.to, autograd, foreach optimizers, clip_grad_norm_."""

    def build(d):
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 8).to(d)
        return model, torch.optim.AdamW(model.parameters(), lr=0.1), torch.randn(4, 8, device=d)

    def step(model, optimizer, x):
        for _ in range(2):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), torch.zeros(4, dtype=torch.long, device=x.device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        return model.weight.sum().item()  # the one sync: a read of a parameter moved by Module.to

    recording = simulate(build, step)
    assert recording.syncs == 1 and recording.events[0].site.source().startswith("return model.weight.sum().item()")


def test_other_threads_syncs_do_not_leak_into_a_watch():
    x = torch.randn(8)
    sim = Simulator(UserCode([__file__]), placement=False)
    with sim.watch() as recording:
        thread = threading.Thread(target=lambda: [x.sum().item() for _ in range(5)])
        thread.start()
        thread.join()
    assert recording.syncs == 0


def test_assume_mode_counts_every_tensor_as_device_except_host_data():
    sim = Simulator(UserCode([__file__]), placement=False)
    with sim.watch() as recording:
        torch.randn(4).sum().item()  # a device tensor in a GPU run of this code
        torch.tensor([1, 2, 3]).sum().item()  # host data: no GPU involved
    assert recording.syncs == 1


# --------------------------------------------------------------------------------------
# The fixtures, through the real command
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """`synclint verify --device cpu --repeat 1 --json out.json` over every fixture, run once (in this
    process: torch and the rules load once for the whole file)."""
    import contextlib
    import io
    import os
    import types

    from synclint.cli import main

    out = tmp_path_factory.mktemp("verify") / "out.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["verify", "--device", "cpu", "--repeat", "1", "--json", str(out)])
    finally:
        os.chdir(cwd)
    assert "Traceback" not in stderr.getvalue(), stderr.getvalue()
    proc = types.SimpleNamespace(returncode=code, stdout=stdout.getvalue(), stderr=stderr.getvalue())
    return proc, json.loads(out.read_text())


def test_verify_json_has_one_row_per_fixture_kernel_with_every_field(cpu_run):
    _, rows = cpu_run
    for row in rows:
        assert REQUIRED_FIELDS <= row.keys(), sorted(REQUIRED_FIELDS - row.keys())
        assert row["device"] == "cpu" and row["simulated"] is True
    expected = set()
    for folder in sorted((REPO / "fixtures").iterdir()):
        if (folder / "before.py").is_file():
            source = (folder / "before.py").read_text()
            kernels = eval(source.split("KERNELS = ", 1)[1].split("\n\n", 1)[0])  # the tuple literal
            expected |= {(folder.name, k) for k in kernels}
    assert {(r["fixture"], r["kernel"]) for r in rows} == expected


def test_a_simulated_run_shows_no_speedups(cpu_run):
    """A CPU run has no GPU queue to wait for: its step times say nothing of a GPU's speedup."""
    proc, rows = cpu_run
    assert all(row["speedup"] is None for row in rows)
    table = proc.stdout.split("No speedups")[0]
    assert "No speedups" in proc.stdout and "speedup" not in table.lower() and "x │" not in table


def test_verify_exit_code_says_whether_every_row_is_ok(cpu_run):
    proc, rows = cpu_run
    assert proc.returncode == (1 if any(not r["ok"] for r in rows) else 0)
    assert "synclint verify on" in proc.stdout and "simulated" in proc.stdout


def test_every_fixture_before_syncs_unless_documented(cpu_run):
    _, rows = cpu_run
    for row in rows:
        assert row["syncs_before"] >= 1 or row["documented"], row


def test_every_fixed_kernel_is_sync_free_and_computes_the_same_unless_documented(cpu_run):
    _, rows = cpu_run
    fixed = [r for r in rows if r["syncs_after"] is not None]
    assert len(fixed) >= 20
    for row in fixed:
        assert row["syncs_after"] == 0 or row["documented"], row
        assert row["waits_after"] == 0 and not row["races_after"], row
        assert row["outputs_equal"] is True, row


def test_documented_exceptions_come_from_the_fixture(cpu_run):
    _, rows = cpu_run
    by_kernel = {(r["fixture"], r["kernel"]): r for r in rows}
    still = by_kernel["SYNC108", "active_request_rows"]
    assert still["syncs_after"] == 1 and still["status"] == "documented" and "nonzero" in still["documented"]
    assert by_kernel["SYNC104", "update_async_output_token_ids"]["documented"].startswith("not a GPU sync")
    race = by_kernel["SYNC111", "logprobs_to_host"]
    assert race["status"] == "no fix" and race["races_before"] == 1 and race["syncs_before"] == 0


def test_fixture_counts_and_sites(cpu_run):
    _, rows = cpu_run
    by_kernel = {(r["fixture"], r["kernel"]): r for r in rows}
    forcing = by_kernel["SYNC106", "apply_forcing_to_logits"]
    assert forcing["syncs_before"] == 24 and forcing["syncs_after"] == 0
    (site,) = forcing["sites_before"]
    assert site["file"].endswith("SYNC106/before.py") and site["line"] == 23 and site["count"] == 24
    assert by_kernel["SYNC107", "longest_prompt"]["syncs_before"] == 31
    # Both the device-to-host copy and the explicit synchronize the debug mode would miss.
    pooled = by_kernel["SYNC110", "pool_and_copy_outputs"]
    assert pooled["syncs_before"] == 2
    assert any("torch.cuda.synchronize" in s["op"] for s in pooled["sites_before"])


# --------------------------------------------------------------------------------------
# Verdicts and exit codes on fixtures made for the test
# --------------------------------------------------------------------------------------

KERNEL = '''\
import torch


def total(x: torch.Tensor) -> float:
    return x.sum().item()


KERNELS = ("total",)
{notes}

def make_inputs(device: torch.device) -> dict[str, tuple]:
    return {{"total": (torch.arange(8.0, device=device),)}}
'''


def fixture(root: Path, name: str, before: str, after: str | None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "before.py").write_text(before, encoding="utf-8")
    if after is not None:
        (folder / "after.py").write_text(after, encoding="utf-8")
    return folder


def verify_json(tmp_path: Path, capsys, *folders: Path) -> tuple[int, list[dict], str]:
    """`synclint verify` in this process (torch and the rules are loaded once for all these tests)."""
    from synclint.cli import main

    out = tmp_path / "out.json"
    code = main(["verify", "--device", "cpu", "--repeat", "1", "--json", str(out), *map(str, folders)])
    return code, json.loads(out.read_text()), capsys.readouterr().err


def test_a_fixed_kernel_that_still_syncs_fails_unless_documented(tmp_path, capsys):
    undocumented = fixture(tmp_path, "SYNC901", KERNEL.format(notes=""), KERNEL.format(notes=""))
    notes = 'VERIFY_NOTES = {"total": "the value is needed on the host"}\n'
    documented = fixture(tmp_path, "SYNC902", KERNEL.format(notes=notes), KERNEL.format(notes=notes))
    code, rows, _ = verify_json(tmp_path, capsys, undocumented)
    assert code == 1 and rows[0]["status"] == "FAIL" and "still syncs (1)" in rows[0]["note"]
    code, rows, _ = verify_json(tmp_path, capsys, documented)
    assert code == 0 and rows[0]["status"] == "documented" and rows[0]["note"] == "the value is needed on the host"


def test_after_py_that_the_fixer_does_not_produce_is_reported(tmp_path, capsys):
    before = KERNEL.format(notes="")
    after = before.replace("x.sum().item()", "x.sum()")
    code, rows, stderr = verify_json(tmp_path, capsys, fixture(tmp_path, "SYNC903", before, after))
    assert code == 1 and "the fixer's output for this kernel differs from after.py" in rows[0]["note"]
    assert "+++ SYNC903/before.py fixed by synclint" in stderr


def test_a_fixture_that_raises_is_reported_and_the_others_still_run(tmp_path, capsys):
    broken = fixture(tmp_path, "SYNC904", KERNEL.format(notes="").replace("torch.arange(8.0", "torch.arange(None"), None)
    fine = fixture(tmp_path, "SYNC905", KERNEL.format(notes=""), None)
    code, rows, stderr = verify_json(tmp_path, capsys, broken, fine)
    assert code == 1
    assert [r["status"] for r in rows] == ["error", "no fix"]
    assert "before raised TypeError" in rows[0]["note"] and "Traceback" in stderr
    assert rows[1]["syncs_before"] == 1 and rows[1]["ok"]


def test_verify_usage_errors_exit_2(capsys):
    from synclint.cli import main

    assert main(["verify", "--device", "cpu", "NOSUCH1"]) == 2
    assert "neither a fixture folder nor a rule code" in capsys.readouterr().err
    assert main(["verify", "--repeat", "0"]) == 2
    if not torch.cuda.is_available():
        assert main(["verify", "--device", "cuda", str(REPO / "fixtures" / "SYNC101")]) == 2
        assert "no CUDA device" in capsys.readouterr().err


# --------------------------------------------------------------------------------------
# Torch stays off the check path
# --------------------------------------------------------------------------------------


def test_check_path_never_imports_torch(tmp_path):
    (tmp_path / "k.py").write_text("import torch\n\ndef f(x):\n    return x.item()\n", encoding="utf-8")
    code = textwrap.dedent(f"""
        import sys
        import synclint.cli
        assert "torch" not in sys.modules, "import synclint.cli"
        synclint.cli.build_parser()
        import synclint.verify, synclint.verify.command, synclint.verify.pytest_plugin
        assert "torch" not in sys.modules, "the verify entry points"
        synclint.cli.main(["check", {str(tmp_path / "k.py")!r}, "--jobs", "1"])
        assert "torch" not in sys.modules, "synclint check"
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------------------
# The CUDA path, on a fake GPU: the hook, the wrappers, the timings, the table
# --------------------------------------------------------------------------------------


class FakeDebugMode:
    """torch.cuda.{get,set}_sync_debug_mode on a machine without CUDA."""

    def __init__(self, monkeypatch):
        self.mode = 0
        monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: self.mode)
        monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", self.set)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
        # What a synchronizing CUDA op does under the debug mode, from code that is not the user's
        # (torch warns from C++; here a frame named like no file).
        self.sync = eval(compile(
            "lambda: fake.mode == 1 and warnings.warn('called a synchronizing CUDA operation', UserWarning)",
            "<fake torch op>", "eval"), {"fake": self, "warnings": warnings})

    def set(self, mode):
        self.mode = {"default": 0, "warn": 1, "error": 2}.get(mode, mode)


def test_cuda_detector_counts_debug_warnings_of_its_thread_and_restores_the_mode(monkeypatch):
    from synclint.verify.cuda import CudaDetector

    fake = FakeDebugMode(monkeypatch)
    detector = CudaDetector(UserCode([__file__]), torch.device("cpu"))
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("always")
        with detector.watch() as recording:
            fake.sync()  # here
            thread = threading.Thread(target=fake.sync)  # another thread's sync is not ours
            thread.start()
            thread.join()
            torch.cuda.synchronize()  # missed by the debug mode: the wrapper counts it
            fake.sync()
    assert fake.mode == 0
    assert recording.syncs == 3
    assert [e.op for e in recording.events].count("torch.cuda.synchronize()") == 1
    assert recording.events[0].site.source() == "fake.sync()  # here"
    assert len(outside) == 1  # the other thread's warning went on to the previous hook


def test_verify_cuda_path_end_to_end_on_a_fake_gpu(monkeypatch, tmp_path, capsys):
    """Everything `synclint verify --device cuda` does, with the GPU's clock and debug mode faked."""
    import argparse

    from synclint.verify import command
    from synclint.verify.measure import CpuClock

    fake = FakeDebugMode(monkeypatch)

    class FakeClock(CpuClock):
        queue_ms = 20.0
        cycles_per_ms = 1.0e6

        def host_us(self, call, busy):
            fake_wait = []
            real = fake.sync
            monkeypatch.setattr(fake, "sync", lambda: fake_wait.append(1))
            try:
                elapsed = super().host_us(call, busy)
            finally:
                monkeypatch.setattr(fake, "sync", real)
            return elapsed + (20_000.0 if busy and fake_wait else 0.0)

        def device_us(self, call):
            return super().host_us(call, False) / 2

    def setup(device, repeat):
        return command.Context(torch, "cuda", torch.device("cpu"), FakeClock(), repeat, "Fake GPU")

    monkeypatch.setattr(command, "_setup", setup)
    before = KERNEL.format(notes="").replace("    return x.sum().item()", "    _SYNC()\n    return x.sum()")
    before = before.replace("import torch\n", "import torch\n\n_SYNC = None\n", 1)
    folder = fixture(tmp_path, "SYNC906", before, None)
    out = tmp_path / "cuda.json"
    import synclint.verify.fixtures as fixtures_module

    real_exec = fixtures_module.exec_module

    def exec_with_fake(text, filename, name):
        module = real_exec(text, filename, name)
        module._SYNC = lambda: fake.sync()
        return module

    monkeypatch.setattr(command, "_setup", setup)
    monkeypatch.setattr(fixtures_module, "exec_module", exec_with_fake)
    code = command.run(argparse.Namespace(targets=[str(folder)], device="cuda", json_file=out, repeat=2, fixtures=None))
    (row,) = json.loads(out.read_text())
    assert code == 0, row
    assert row["device"] == "cuda" and row["simulated"] is False
    assert row["syncs_before"] == 1 and row["host_wait_us_before"] >= 20_000 and row["waited_before"] is True
    assert row["device_us_before"] is not None and row["step_ms_before"] > 0
    assert "Fake GPU" in capsys.readouterr().out
