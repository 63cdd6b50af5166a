"""`synclint trace` on jobs of several processes, on the CPU: torchrun's ranks (gloo, two ranks, the
CPU simulation), `torch.multiprocessing.spawn` children, limits, failures; the timeline's format;
the waits of non-blocking copies from pageable memory; how a rank writes what it records.

Counts are exact: the simulation records one event per syncing operation, in every rank.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli

torch = pytest.importorskip("torch")

from synclint.trace.processes import ProcessTrace, job_rows, read_process  # noqa: E402
from synclint.trace.rank import RankFile, wanted  # noqa: E402
from synclint.trace.recording import Limits, TraceRecording  # noqa: E402
from synclint.trace.timeline import timeline  # noqa: E402
from synclint.verify.sites import SYNC, WAIT, Site, SyncEvent  # noqa: E402

ITEM = "aten._local_scalar_dense (.item(), bool(), int(), float(), format)"

RANKS = """import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(sys.argv[1])):
    loss = model(torch.randn(4, 8)).square().mean()
    opt.zero_grad()
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters()]).tolist()
    dist.all_reduce(torch.tensor(grads))
    opt.step()
    if rank == 0:
        print(f"step {step} loss {loss.item():.3f}")
dist.destroy_process_group()
"""
TOLIST_LINE, ITEM_LINE = 14, 18  # .tolist() on every rank; loss.item() on rank 0 only

CRASH = """import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
for _ in range(3):
    torch.ones(2).sum().item()
dist.barrier()
if rank == 1:
    raise ZeroDivisionError("rank 1 gives up")
"""

SPAWN = """import torch
import torch.multiprocessing as mp


def work(rank, n):
    x = torch.ones(4) * rank
    for _ in range(n + rank):
        x.sum().item()


if __name__ == "__main__":
    mp.spawn(work, args=(2,), nprocs=2)
    print("joined")
"""

COPIES = """import numpy as np
import torch

big = torch.from_numpy(np.ones(1 << 20, dtype=np.float32))  # 4 MB of host memory
small = torch.from_numpy(np.ones(1 << 10, dtype=np.float32))
for _ in range(5):
    a = big.to("cuda", non_blocking=True)
    b = small.to("cuda", non_blocking=True)
    c = small.to("cuda")
"""


def trace(tmp_path, *args):
    return run_cli("trace", *args, cwd=tmp_path)


def per_rank(site: dict) -> dict[str, int]:
    return {r["name"]: r["count"] for r in site["ranks"]}


def check_chrome_trace(document: dict) -> None:
    """The Trace Event Format as Perfetto and chrome://tracing read it: the fields each phase needs."""
    assert set(document) >= {"traceEvents"} and document["displayTimeUnit"] in ("ms", "ns")
    for event in document["traceEvents"]:
        assert event["ph"] in ("X", "i", "M"), event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int) and isinstance(event["name"], str)
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "process_sort_index", "thread_name") and "args" in event
            continue
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        if event["ph"] == "X":
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
        else:
            assert event["s"] in ("t", "p", "g")
    json.dumps(document, allow_nan=False)  # no NaN or Infinity: not JSON


# ---- torchrun: every rank --------------------------------------------------------------------------


def test_torchrun_traces_every_rank_with_exact_per_rank_counts(write, tmp_path):
    write("train.py", RANKS)
    proc = trace(tmp_path, "--report", "syncs.json", "--timeline", "steps.json", "--",
                 "torchrun", "--nproc-per-node", "2", "train.py", "4")
    assert proc.returncode == 1, proc.stderr
    assert "step 3 loss" in proc.stdout  # rank 0's own output comes through
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert [(p["name"], p["finished"]) for p in report["processes"]] == [("rank 0", True), ("rank 1", True)]
    sites = {(s["line"], s["op"]): s for s in report["sites"]}
    tolist = sites[(TOLIST_LINE, ".tolist(): device-to-host read")]
    item = sites[(ITEM_LINE, ITEM)]
    assert (tolist["count"], per_rank(tolist)) == (8, {"rank 0": 4, "rank 1": 4})
    assert (item["count"], per_rank(item), item["waited_most"]) == (4, {"rank 0": 4}, None)  # no times: no one waited
    assert len(report["sites"]) == 2 and report["completed"] is True

    lines = proc.stderr.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("synclint trace:"))
    assert lines[title] == ("synclint trace: torchrun --nproc-per-node 2 train.py 4 (simulated on the CPU: no times): "
                            "2 processes traced")
    assert lines[title + 1].split()[:4] == ["count", "r0", "r1", "site"]  # no "waited most" without times
    rows = {line.split()[3]: line.split()[:3] for line in lines[title + 2: title + 4]}
    assert rows[f"train.py:{TOLIST_LINE}"] == ["8", "4", "4"]
    assert rows[f"train.py:{ITEM_LINE}"] == ["4", "4", "0"]

    document = json.loads((tmp_path / "steps.json").read_text())
    check_chrome_trace(document)
    names = {e["pid"]: e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"}
    assert sorted(name.split(" (")[0] for name in names.values()) == ["rank 0", "rank 1"]
    syncs = [e for e in document["traceEvents"] if e.get("cat") == "sync"]
    assert len(syncs) == 12 and all(e["ph"] == "i" for e in syncs)  # untimed: instants, no durations
    steps = [e for e in document["traceEvents"] if e.get("cat") == "step"]
    assert sorted(e["name"] for e in steps) == ["step 1", "step 1", "step 2", "step 2", "step 3", "step 3",
                                                "step 4", "step 4"]  # the optimizer's steps, per rank

    check = run_cli("check", "train.py", "--runtime-report", "syncs.json", "--output-format", "json", cwd=tmp_path)
    confirmed = {f["location"]["row"]: f["runtime_syncs"] for f in json.loads(check.stdout) if f.get("runtime_syncs")}
    assert confirmed.get(ITEM_LINE) == 4  # check --runtime-report reads the job's report


def test_max_steps_in_a_rank_stops_the_whole_job(write, tmp_path):
    write("train.py", RANKS)
    started = time.monotonic()
    proc = trace(tmp_path, "--max-steps", "3", "--max-seconds", "120", "--report", "syncs.json", "--",
                 "python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py", "100000")
    assert time.monotonic() - started < 100  # stopped long before its 100,000 steps
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert report["stopped"] == "the busiest site synced 3 times (--max-steps)"
    counts = {(s["line"], r["name"]): r["count"] for s in report["sites"] for r in s["ranks"]}
    # Rank 0 stops at its third .tolist(); rank 1, held to it by all_reduce, also records no more than 3.
    assert counts[(TOLIST_LINE, "rank 0")] == 3 and counts.get((TOLIST_LINE, "rank 1"), 0) <= 3
    assert "stopped: the busiest site synced 3 times (--max-steps)" in proc.stderr
    assert "synclint: error" not in proc.stderr  # the ranks it stopped did not fail


def test_a_rank_that_crashes_is_exit_2_and_the_ranks_are_still_reported(write, tmp_path):
    write("crash.py", CRASH)
    (tmp_path / "taken").mkdir()
    proc = trace(tmp_path, "--no-check", "--report", "syncs.json", "--timeline", "taken", "--",
                 "torchrun", "--nproc-per-node", "2", "crash.py")
    assert proc.returncode == 2
    assert "synclint: error: cannot write taken: Is a directory" in proc.stderr  # the report is written all the same
    assert "6 syncs at 1 site" in proc.stderr
    assert "rank 1 (pid " in proc.stderr and ") raised ZeroDivisionError: rank 1 gives up (crash.py:10, in <module>)" \
        in proc.stderr
    assert "synclint: error: the launcher exited with status 1; the trace covers what ran before" in proc.stderr
    assert "Traceback" not in proc.stderr.split("synclint trace:")[1]  # ours is clean (the rank's own is the rank's)
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert report["completed"] is False
    assert per_rank(report["sites"][0]) == {"rank 0": 3, "rank 1": 3}
    # Rank 0 has nothing left to do; torchrun may still stop it (SIGTERM) once rank 1 failed.
    assert [(p["name"], p["error"]) for p in report["processes"]] == [
        ("rank 0", None), ("rank 1", "raised ZeroDivisionError: rank 1 gives up (crash.py:10, in <module>)")]


KILLED = """import os
import signal
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
for _ in range(4):
    torch.ones(2).sum().item()
time.sleep(1.5)  # a rank writes what it recorded every half second
dist.barrier()
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_rank_killed_outright_keeps_what_it_wrote(write, tmp_path):
    write("killed.py", KILLED)
    proc = trace(tmp_path, "--no-check", "--report", "syncs.json", "--", "torchrun", "--nproc-per-node", "2", "killed.py")
    assert proc.returncode == 2
    assert ") ended without exiting (killed or crashed): its syncs until its last write are counted" in proc.stderr
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert per_rank(report["sites"][0]) == {"rank 0": 4, "rank 1": 4}
    assert [p["name"] for p in report["processes"] if not p["finished"]][-1:] == ["rank 1"]  # (torchrun may stop rank 0)


def test_a_launcher_that_fails_before_any_rank_is_exit_2(write, tmp_path):
    write("train.py", RANKS)
    proc = trace(tmp_path, "--", "torchrun", "--no-such-option", "train.py")
    assert proc.returncode == 2
    assert ("synclint: error: the launcher exited with status 2 before any rank started; "
            "the trace covers what ran before") in proc.stderr
    assert "0 syncs at 0 sites" in proc.stderr


# ---- torch.multiprocessing ---------------------------------------------------------------------------


def test_spawned_children_are_traced_as_ranks(write, tmp_path):
    write("spawn.py", SPAWN)
    proc = trace(tmp_path, "--no-check", "--report", "syncs.json", "--", "python", "spawn.py")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip() == "joined"
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert [p["name"] for p in report["processes"]] == ["main", "rank 0", "rank 1"]
    (site,) = report["sites"]
    assert (site["line"], site["count"], per_rank(site), site["waited_most"]) == (8, 5, {"rank 0": 2, "rank 1": 3},
                                                                                  None)
    assert "synclint trace: python spawn.py (simulated on the CPU: no times): 3 processes traced" in proc.stderr


def test_only_the_ranks_are_traced():
    env = {"SYNCLINT_TRACE_DIR": "/tmp/x"}
    assert wanted({**env, "LOCAL_RANK": "0"}, ["python", "train.py"])  # a torchrun worker
    assert wanted(env, ["python", "-c", "from multiprocessing.spawn import spawn_main", "--multiprocessing-fork"])
    assert not wanted(env, ["python", "-m", "torch.distributed.run", "train.py"])  # the launcher
    assert not wanted({**env, "LOCAL_RANK": "0", "SYNCLINT_TRACE_INSIDE": "12"}, ["python", "-c", "..."])  # a rank's child
    assert not wanted({"LOCAL_RANK": "0"}, ["python", "train.py"])  # no trace running


# ---- what a rank writes, read back ------------------------------------------------------------------


class _Chosen:
    kind, timed, untimed = "cuda", True, None


def test_a_rank_file_read_back_keeps_events_late_waits_and_steps_and_skips_a_cut_line(tmp_path):
    clock = iter(float(t) for t in range(100, 200)).__next__
    recording = TraceRecording(Limits(), clock=clock)
    writer = RankFile(str(tmp_path), recording, _Chosen())
    writer.header()
    site = Site(str(tmp_path / "train.py"), 7, "step")
    recording.add(SyncEvent(SYNC, "torch.cuda.synchronize()", site))  # a wrapper's event: timed when it returns
    writer.flush()
    recording.timed(0, 1.5)  # the synchronize returned after the flush wrote its event
    recording.add(SyncEvent(WAIT, "copy", site, wait_s=0.25))
    recording.step()
    writer.rank = 3
    writer.finish()
    with open(writer.path, "a", encoding="utf-8") as file:
        file.write('{"e": ["sync", "cut off by a ki')  # a kill in the middle of a write
    process = read_process(writer.path)
    assert process is not None
    assert (process.rank, process.name, process.finished) == (3, "rank 3", True)
    assert [(e.kind, e.op, e.wait_s) for e in process.events] == [(SYNC, "torch.cuda.synchronize()", 1.5),
                                                                  (WAIT, "copy", 0.25)]
    assert process.ends == recording.ends and process.steps == recording.steps == [104.0]


# ---- the timeline --------------------------------------------------------------------------------------


def test_the_timeline_slices_add_up_to_the_tables_wait(tmp_path):
    site_a, site_b = Site(str(tmp_path / "a.py"), 3, "f"), Site(str(tmp_path / "b.py"), 9, "g")
    rank0 = ProcessTrace(101, rank=0, started=10.0, armed_at=10.0, end=12.0, steps=[10.5, 11.0],
                         events=[SyncEvent(SYNC, "item", site_a, wait_s=0.010), SyncEvent(SYNC, "item", site_a, wait_s=0.020),
                                 SyncEvent(WAIT, "copy", site_b, wait_s=0.300)], ends=[10.2, 10.4, 11.5])
    rank1 = ProcessTrace(102, rank=1, started=10.1, armed_at=10.1, end=12.0,
                         events=[SyncEvent(SYNC, "item", site_a, wait_s=0.005), SyncEvent(SYNC, "save", None)],
                         ends=[10.3, 10.6])
    rows = job_rows([rank0, rank1], str(tmp_path), timed=True)
    table_wait = sum(r["wait_s"] or 0.0 for r in rows)
    document = timeline([rank0, rank1], str(tmp_path), "torchrun t.py")
    check_chrome_trace(document)
    slices = [e for e in document["traceEvents"] if e["ph"] == "X" and e["cat"] in ("sync", "wait")]
    assert sum(e["dur"] for e in slices) / 1e6 == pytest.approx(table_wait, rel=1e-12)
    assert len(slices) == 4  # the sync nothing timed is an instant
    first = min(slices, key=lambda e: e["ts"])
    assert first["ts"] == pytest.approx((10.2 - 0.010 - 10.0) * 1e6) and first["args"]["site"] == "a.py:3"
    # who waited most, by wait; a site none of whose syncs was timed names no one
    assert {r["line"]: (r["count"], r["waited_most"]) for r in rows} == {3: (3, "rank 0"), 9: (1, "rank 0"), None: (1, None)}
    steps = [(e["name"], e["ts"], e["dur"]) for e in document["traceEvents"] if e.get("cat") == "step"]
    assert steps == [("step 1", 0.0, pytest.approx(0.5e6)), ("step 2", 0.5e6, pytest.approx(0.5e6))]


def test_waited_most_is_said_only_with_times(tmp_path):
    """Who waited longest at a site is a wait, not a count: rank 1 synced more, rank 0 waited longer;
    without times (the simulation, --no-times) no process is named, in the report or the table."""
    from synclint.trace.table import render

    site = Site(str(tmp_path / "a.py"), 3, "f")

    def ranks(waits0: list, waits1: list) -> list[ProcessTrace]:
        return [ProcessTrace(100 + r, rank=r, events=[SyncEvent(SYNC, "item", site, wait_s=w) for w in waits],
                             ends=[1.0] * len(waits)) for r, waits in enumerate([waits0, waits1])]

    columns = [("rank 0", "r0"), ("rank 1", "r1")]
    (timed,) = job_rows(ranks([0.5], [0.01, 0.01, 0.01]), str(tmp_path), timed=True)
    assert (timed["count"], timed["waited_most"]) == (4, "rank 0")
    head, row = render([timed], untimed=None, wall_s=2.0, codes=None, root=tmp_path, columns=columns)[:2]
    assert head.split()[:9] == ["total", "wait", "mean", "share", "count", "r0", "r1", "waited", "most"]
    assert row.split()[5:11] == ["4", "1", "3", "rank", "0", "a.py:3"]  # after total wait, mean (two words each), share

    (untimed,) = job_rows(ranks([None], [None, None, None]), str(tmp_path), timed=False)
    assert (untimed["count"], untimed["waited_most"]) == (4, None)
    head, row = render([untimed], untimed="simulated on the CPU: counts only, no times", wall_s=2.0, codes=None,
                       root=tmp_path, columns=columns)[:2]
    assert "waited" not in head and "rank" not in row
    assert head.split()[:4] == ["count", "r0", "r1", "site"] and row.split()[:4] == ["4", "1", "3", "a.py:3"]


def test_a_timeline_that_cannot_be_written_is_exit_2(write, tmp_path):
    write("one.py", "import torch\nprint(torch.ones(2).sum().item())\n")
    (tmp_path / "taken").mkdir()
    proc = trace(tmp_path, "--no-check", "--timeline", "taken", "--", "python", "one.py")
    assert proc.returncode == 2
    assert "synclint: error: cannot write taken: Is a directory" in proc.stderr
    assert "1 sync at 1 site" in proc.stderr


# ---- the waits CUDA's debug mode does not flag ------------------------------------------------------


def test_non_blocking_copies_from_pageable_memory_are_waits_of_their_own(write, tmp_path):
    write("copies.py", COPIES)
    proc = trace(tmp_path, "--no-check", "--report", "syncs.json", "--", "python", "copies.py")
    assert proc.returncode == 1
    report = json.loads((tmp_path / "syncs.json").read_text())
    assert [(s["kind"], s["line"], s["count"]) for s in report["sites"]] == [("wait", 7, 5), ("sync", 9, 5)]
    assert report["sites"][0]["op"] == ".to(): non_blocking copy of 4 MB from pageable memory"
    assert "[wait] .to(): non_blocking copy of 4 MB from pageable memory" in proc.stderr


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring: Python 3.12+")
def test_call_starts_time_from_the_start_of_the_last_torch_call():
    from synclint.trace.timing import CallStarts

    x = torch.ones(3)
    with CallStarts() as starts:
        x.sum()  # a torch call: the start of the next "wait"
        time.sleep(0.05)  # not a torch call: no start
        waited = starts.take(time.perf_counter())
        again = starts.take(time.perf_counter())
    assert waited is not None and 0.05 <= waited < 0.5
    assert again is not None and again < 0.01  # a second sync of the same call: the time since the first


def test_in_a_rank_the_cuda_detector_waits_for_the_programs_first_cuda_call(monkeypatch):
    """The sync debug mode starts CUDA; in a rank it must not start before the rank picks its GPU."""
    from contextlib import contextmanager

    from synclint.trace.session import Detector, watching

    started, entered = [], []

    class FakeCuda:
        is_user = staticmethod(lambda filename: True)

        @contextmanager
        def watch(self, recording):
            entered.append("watch")
            yield recording
            entered.append("closed")

    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: bool(started))
    monkeypatch.setattr(torch.cuda, "_lazy_init", lambda: started.append("init"))
    original = torch.cuda._lazy_init
    stack = watching(Detector(FakeCuda(), cuda=True, timed=False), TraceRecording(Limits()), rank=True)
    assert entered == [] and not started  # nothing started CUDA yet
    torch.cuda._lazy_init()  # as torch does on the program's first CUDA call (torch.cuda.set_device(rank), a tensor)
    assert started == ["init"] and entered == ["watch"] and torch.cuda._lazy_init is original
    torch.cuda._lazy_init()
    assert entered == ["watch"]  # once
    stack.close()
    assert entered == ["watch", "closed"] and torch.cuda._lazy_init is original
