"""One traced process, as the table, the report and the timeline see it, and how a rank writes it down.

A rank of a job (a `torchrun` worker, a `torch.multiprocessing` child) writes what it records to
`<dir>/<pid>.jsonl`, one JSON object a line, as it runs: a flusher thread appends the new events
every half second, and the end is written at exit (or on SIGTERM), so a rank that crashes or is
killed still leaves what it recorded until its last flush:

    {"process": {"pid", "env_rank", "argv", "started", "device", "timed", "untimed"}}
    {"e": [kind, op, file, line, function, wait_s, end]}     an event (times: time.perf_counter)
    {"fix": index, "wait_s", "end"}                          an event timed after it was written
    {"step": end}                                            an optimizer step ended
    {"rank": r}                                              torch.distributed's rank, once known
    {"counts": {"allowed", "skipped", "armed_at"}}           as they stand
    {"stopped": reason}                                      the rank reached a limit
    {"end": {"at", "error", "terminated"}}                   it exited (error: how it failed; on SIGTERM)
    {"failed": message}                                      tracing could not start in it

`read_process` reads one back into a `ProcessTrace` (lines cut off by a kill are skipped). No torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from synclint.verify.sites import Site, SyncEvent


@dataclass
class ProcessTrace:
    pid: int
    rank: int | None = None
    main: bool = False  # the process synclint itself ran the program in
    events: list[SyncEvent] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    started: float = 0.0
    armed_at: float | None = None
    end: float | None = None  # None: it never wrote its end (killed, crashed in C)
    allowed: int = 0
    skipped: int = 0
    stopped: str | None = None
    error: str | None = None
    terminated: bool = False  # it ended on SIGTERM (synclint or the launcher stopped the job)
    failed: str | None = None  # tracing could not start in it
    untimed: str | None = None

    @property
    def name(self) -> str:
        if self.rank is not None:
            return f"rank {self.rank}"
        return "main" if self.main else f"pid {self.pid}"

    @property
    def short(self) -> str:
        """The column head of this process in the table."""
        if self.rank is not None:
            return f"r{self.rank}"
        return "main" if self.main else f"p{self.pid}"

    def wall_s(self) -> float:
        """Seconds watched: from the end of the warm-up to its end (its last event if it never wrote one)."""
        if self.armed_at is None:
            return 0.0
        end = self.end if self.end is not None else (self.ends[-1] if self.ends else self.armed_at)
        return max(end - self.armed_at, 0.0)

    @property
    def finished(self) -> bool:
        return self.end is not None and self.error is None and not self.terminated


def read_process(path: str) -> ProcessTrace | None:
    """A rank's file, or None if it holds no header (the process never got to tracing)."""
    process: ProcessTrace | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for text in lines:
                try:
                    item = json.loads(text)
                except ValueError:
                    continue  # a line cut off by a kill
                if not isinstance(item, dict):
                    continue
                if "process" in item:
                    head = item["process"]
                    process = ProcessTrace(int(head["pid"]), started=float(head["started"]),
                                           untimed=head.get("untimed"))
                    env_rank = head.get("env_rank")
                    process.rank = int(env_rank) if env_rank is not None else None
                    process.armed_at = head.get("armed_at")
                    continue
                if process is None:
                    continue
                if "e" in item:
                    kind, op, file, line, function, wait, end = item["e"]
                    site = Site(file, line, function) if file else None
                    process.events.append(SyncEvent(kind, op, site, wait_s=wait))
                    process.ends.append(end)
                elif "fix" in item:
                    index = item["fix"]
                    if 0 <= index < len(process.events):
                        event = process.events[index]
                        process.events[index] = SyncEvent(event.kind, event.op, event.site, wait_s=item["wait_s"])
                        process.ends[index] = item["end"]
                elif "step" in item:
                    process.steps.append(item["step"])
                elif "rank" in item:
                    process.rank = item["rank"]
                elif "counts" in item:
                    counts = item["counts"]
                    process.allowed, process.skipped = counts["allowed"], counts["skipped"]
                    process.armed_at = counts.get("armed_at")
                elif "stopped" in item:
                    process.stopped = item["stopped"]
                elif "end" in item:
                    process.end = item["end"]["at"]
                    process.error = item["end"].get("error")
                    process.terminated = bool(item["end"].get("terminated"))
                elif "failed" in item:
                    process.failed = item["failed"]
    except OSError:
        return None
    return process


def read_processes(folder: str) -> list[ProcessTrace]:
    """Every rank's file in `folder`, by rank (those without one after, by pid)."""
    found = []
    for name in os.listdir(folder):
        if name.endswith(".jsonl"):
            process = read_process(os.path.join(folder, name))
            if process is not None:
                found.append(process)
    return sorted(found, key=lambda p: (p.rank is None, p.rank or 0, p.pid))


def job_rows(processes: list[ProcessTrace], root: str, timed: bool) -> list[dict]:
    """The report's sites over every process: each site's total count and wait, and with several
    processes, per process (`ranks`: rank, pid, count, wait_s) and the one that waited longest there
    (`waited_most`: a straggler's sign). Only a wait says who waited longest: `waited_most` is None
    without times (the CPU simulation, `--no-times`) and at a site none of whose syncs was timed."""
    from synclint.trace.recording import site_rows, sort_rows

    if len(processes) == 1:
        return site_rows(processes[0].events, root, timed)
    merged: dict[tuple, dict] = {}
    for process in processes:
        for row in site_rows(process.events, root, timed):
            key = (row["kind"], row["file"], row["line"], row["op"])
            into = merged.get(key)
            if into is None:
                into = merged[key] = {**row, "count": 0, "wait_s": None, "ranks": []}
            into["count"] += row["count"]
            if row["wait_s"] is not None:
                into["wait_s"] = (into["wait_s"] or 0.0) + row["wait_s"]
            into["ranks"].append({"rank": process.rank, "pid": process.pid, "name": process.name,
                                  "count": row["count"], "wait_s": row["wait_s"]})
    for row in merged.values():
        timed_ranks = [r for r in row["ranks"] if r["wait_s"] is not None] if timed else []
        row["waited_most"] = max(timed_ranks, key=lambda r: r["wait_s"])["name"] if timed_ranks else None
    return sort_rows(list(merged.values()))


def process_summary(process: ProcessTrace) -> dict:
    """A process as the report lists it."""
    return {"name": process.name, "rank": process.rank, "pid": process.pid, "wall_s": process.wall_s(),
            "finished": process.finished, "error": process.error, "stopped": process.stopped,
            "allowed": process.allowed, "skipped": process.skipped, "steps": len(process.steps),
            "traced": process.failed is None, "why_not": process.failed}


def ending(process: ProcessTrace) -> str | None:
    """How a process of a job ended, when that is worth a line: it failed, was killed, or was not traced."""
    if process.failed is not None:
        return f"{process.name} (pid {process.pid}) was not traced: {process.failed}"
    if process.error is not None:
        return f"{process.name} (pid {process.pid}) {process.error}"
    if process.terminated:
        return f"{process.name} (pid {process.pid}) was stopped (SIGTERM) before its end"
    if process.end is None:
        return (f"{process.name} (pid {process.pid}) ended without exiting (killed or crashed): "
                "its syncs until its last write are counted")
    return None
