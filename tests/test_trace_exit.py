"""A traced job ends as the job would untraced: every rank of a 2-rank gloo job (the CPU simulation)
exits 0, run after run (issue 46: one in six traced runs used to abort a rank at its exit).

The cause, tested directly: the simulation's `TorchDispatchMode` used to import `torch._dynamo` on the
first operation it saw, after the rank had started its process group; that import evaluates
`torch.distributed.nn.functional`'s default arguments (`group=group.WORLD`), which then kept the group,
and its gloo threads, alive past `destroy_process_group()` into the interpreter's shutdown
(`synclint.trace.session._import_dynamo_before_the_program`).
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

pytest.importorskip("torch")

ITEM = "aten._local_scalar_dense (.item(), bool(), int(), float(), format)"

# The issue's twelve lines.
JOB = """import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(4)
for step in range(5):
    y = x * step
    if rank == 0 and y.sum().item() > 100:
        print("big")
    dist.all_reduce(y)
dist.destroy_process_group()
"""

FREED = """import gc
import weakref

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
for step in range(3):
    y = torch.ones(4) * step
    if rank == 0:
        y.sum().item()
    dist.all_reduce(y)
group = weakref.ref(dist.group.WORLD)
dist.destroy_process_group()
gc.collect()
print(f"rank {rank}: process group {'alive' if group() is not None else 'freed'}")
"""

# What torchrun gives each of its workers (its ranks, one host's rendezvous), without torchrun's agent
# process (a run costs less; the ranks, the processes that aborted, are started and traced the same way).
LAUNCH = """import os
import socket
import subprocess
import sys

with socket.socket() as free:
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
workers = [subprocess.Popen([sys.executable, "t.py"], env={
    **os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2",
    "LOCAL_WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank)}) for rank in range(2)]
codes = [worker.wait() for worker in workers]
print(f"rank exits: {codes}")
sys.exit(1 if any(codes) else 0)
"""

RUNS = 20


def test_destroy_process_group_frees_the_group_in_a_traced_rank(write, tmp_path):
    """Untraced, `destroy_process_group()` frees the group and joins its threads; traced, too."""
    write("freed.py", FREED)
    proc = run_cli("trace", "--no-check", "--", "torchrun", "--nproc-per-node", "2", "freed.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert sorted(proc.stdout.split("\n")[:-1]) == ["rank 0: process group freed", "rank 1: process group freed"]


def test_the_issues_job_traced_20_times_ends_cleanly_every_time(write, tmp_path):
    """Each run: both ranks exit 0, finish their files, and count rank 0's five syncs, as untraced."""
    write("t.py", JOB)
    write("launch.py", LAUNCH)
    outcomes = []
    for run in range(RUNS):
        report = tmp_path / f"r{run}.json"
        proc = run_cli("trace", "--no-check", "--device", "cpu", "--report", str(report), "--",
                       "python", "launch.py", cwd=tmp_path)
        document = json.loads(report.read_text())
        outcomes.append((proc.returncode, proc.stdout, document["completed"],
                         [(p["name"], p["finished"]) for p in document["processes"]],
                         [(s["line"], s["op"], s["count"]) for s in document["sites"]]))
    clean = (1, "rank exits: [0, 0]\n", True, [("main", True), ("rank 0", True), ("rank 1", True)], [(9, ITEM, 5)])
    assert outcomes == [clean] * RUNS
