"""`synclint trace --timeline FILE`: the run as a Chrome trace (the JSON that Perfetto and chrome://tracing open).

The Trace Event Format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
`{"traceEvents": [...], "displayTimeUnit": "ms"}`, times in microseconds from the first process's start.
One track group (`pid`) per traced process, named "rank 0 (pid 1234)" and sorted by rank; in it:

- the thread that syncs (`tid` 1, "syncs"): each recorded sync or wait as a complete event (`"ph": "X"`)
  that ends when its call returned and lasts its wait, named by its operation, with its site, source
  line, kind and wait in `args`; a sync that was not timed (the CPU simulation, `--no-times`) is an
  instant event (`"ph": "i"`), so the slices' durations add up to the table's total wait exactly;
- the steps (`tid` 2, "optimizer steps"): "step N" from the end of one optimizer step to the end of
  the next (the first from the end of the warm-up), where the program has an optimizer.

No torch here.
"""

from __future__ import annotations

import json
from pathlib import Path

from synclint.trace.processes import ProcessTrace
from synclint.trace.recording import relative

SYNC_TID, STEP_TID = 1, 2


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def timeline(processes: list[ProcessTrace], root: str, command: str) -> dict:
    origin = min([p.armed_at if p.armed_at is not None else p.started for p in processes] or [0.0])
    events: list[dict] = []
    for index, process in enumerate(processes):
        pid = index + 1
        label = f"{process.name} (pid {process.pid})" if process.rank is not None or not process.main else "main"
        events += [
            {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": label}},
            {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": index}},
            {"ph": "M", "pid": pid, "tid": SYNC_TID, "name": "thread_name", "args": {"name": "syncs (main thread)"}},
        ]
        for event, end in zip(process.events, process.ends):
            site = event.site
            where = f"{relative(site.file, root)}:{site.line}" if site else "<outside your code>"
            args: dict[str, object] = {"site": where, "op": event.op, "kind": event.kind, "wait_ms": None}
            if site:
                args["function"] = site.function
                args["source"] = site.source()
            name = f"{event.kind} {where}"  # "sync train.py:23", "wait train.py:40"
            if event.wait_s is None:
                events.append({"ph": "i", "s": "t", "pid": pid, "tid": SYNC_TID, "ts": _us(end - origin),
                               "name": name, "cat": event.kind, "args": args})
            else:
                args["wait_ms"] = event.wait_s * 1e3
                events.append({"ph": "X", "pid": pid, "tid": SYNC_TID, "ts": _us(end - event.wait_s - origin),
                               "dur": event.wait_s * 1e6, "name": name, "cat": event.kind, "args": args})
        if process.steps:
            events.append({"ph": "M", "pid": pid, "tid": STEP_TID, "name": "thread_name",
                           "args": {"name": "optimizer steps"}})
            previous = process.armed_at if process.armed_at is not None else process.started
            for number, end in enumerate(process.steps, 1):
                events.append({"ph": "X", "pid": pid, "tid": STEP_TID, "ts": _us(previous - origin),
                               "dur": max(end - previous, 0.0) * 1e6, "name": f"step {number}", "cat": "step",
                               "args": {"step": number}})
                previous = end
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"tool": "synclint trace", "command": command}}


def write_timeline(path: Path, processes: list[ProcessTrace], root: str, command: str) -> None:
    """Raises OSError when it cannot be written."""
    document = timeline(processes, root, command)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")

