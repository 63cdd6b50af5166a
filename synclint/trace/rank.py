"""Tracing a rank: the process a launcher (`torchrun`) or `torch.multiprocessing` started.

`synclint trace` puts a folder first on the job's `PYTHONPATH` whose `sitecustomize` (`job.SITECUSTOMIZE`)
calls `start()` in every Python process that starts, and `start()` traces the ranks only: a process
with `LOCAL_RANK` in its environment (what torchrun, `torch.distributed.launch`, accelerate and
deepspeed give their workers) or a `multiprocessing` spawn child, and none started by a process
already traced (its DataLoader workers, its compile workers). It watches the whole process, from
before the script's first line to its exit, and writes what it records to `<dir>/<pid>.jsonl`
(`processes`). It never fails the rank: if tracing cannot start, it writes why and steps aside.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

ENV_DIR = "SYNCLINT_TRACE_DIR"  # where each traced process writes <pid>.jsonl
ENV_SETTINGS = "SYNCLINT_TRACE_SETTINGS"  # session.Settings and the limits, as JSON
ENV_INSIDE = "SYNCLINT_TRACE_INSIDE"  # set in a traced process: the processes it starts are not ranks
STOP_FILE = "stop"  # a rank that reached --max-steps writes why here; synclint trace then stops the job
FLUSH_SECONDS = 0.5


def wanted(environ: Any = os.environ, argv: list[str] | None = None) -> bool:
    if not environ.get(ENV_DIR) or environ.get(ENV_INSIDE):
        return False
    argv = list(getattr(sys, "orig_argv", sys.argv)) if argv is None else argv
    return "LOCAL_RANK" in environ or "--multiprocessing-fork" in argv


@dataclass(frozen=True)
class RankLimits:
    skip_syncs: int = 0
    skip_seconds: float = 0.0
    max_steps: int | None = None


class RankFile:
    """Appends a rank's recording to its file: new lines every FLUSH_SECONDS, and at the end."""

    def __init__(self, folder: str, recording: Any, chosen: Any) -> None:
        self.folder = folder
        self.path = os.path.join(folder, f"{os.getpid()}.jsonl")
        self.recording = recording
        self.chosen = chosen
        self.lock = threading.Lock()
        self.written = self.fixes = self.steps = 0
        self.counts: tuple = ()
        self.rank: int | None = None
        self.rank_written = False
        self.error: str | None = None
        self.done = False
        self.file = open(self.path, "a", encoding="utf-8")

    def _line(self, item: dict) -> None:
        self.file.write(json.dumps(item, separators=(",", ":")) + "\n")

    def header(self) -> None:
        env_rank = os.environ.get("RANK") if "LOCAL_RANK" in os.environ else None
        with self.lock:
            self._line({"process": {"pid": os.getpid(), "env_rank": env_rank, "argv": list(getattr(sys, "orig_argv", [])),
                                    "started": self.recording.started, "armed_at": self.recording.armed_at,
                                    "device": self.chosen.kind, "timed": self.chosen.timed,
                                    "untimed": self.chosen.untimed}})
            self.file.flush()

    def flush(self, end: dict | None = None) -> None:
        with self.lock:
            if self.done:
                return
            rec = self.recording
            events, ends = rec.events, rec.ends
            count = min(len(events), len(ends))
            for i in range(self.written, count):
                e = events[i]
                site = e.site
                self._line({"e": [e.kind, e.op, site.file if site else None, site.line if site else None,
                                  site.function if site else None, e.wait_s, ends[i]]})
            self.written = max(self.written, count)
            fixed = rec.fixed
            while self.fixes < len(fixed):
                i = fixed[self.fixes]
                self.fixes += 1
                if i < self.written:
                    self._line({"fix": i, "wait_s": events[i].wait_s, "end": ends[i]})
            while self.steps < len(rec.steps):
                self._line({"step": rec.steps[self.steps]})
                self.steps += 1
            counts = (rec.allowed, rec.skipped, rec.armed_at)
            if counts != self.counts:
                self.counts = counts
                self._line({"counts": {"allowed": rec.allowed, "skipped": rec.skipped, "armed_at": rec.armed_at}})
            if self.rank is not None and not self.rank_written:
                self.rank_written = True
                self._line({"rank": self.rank})
            if end is not None:
                self._line({"end": end})
                self.done = True
            self.file.flush()

    def finish(self, terminated: bool = False) -> None:
        self._learn_rank()
        self.flush({"at": time.perf_counter(), "error": self.error, "terminated": terminated})

    def _learn_rank(self) -> None:
        """torch.distributed's rank, once its process group is up (over a `torch.multiprocessing.spawn` index)."""
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                self.rank = int(dist.get_rank())
        except Exception:  # a process group being torn down: keep what the environment said
            pass

    def stop(self, reason: str) -> None:
        """A limit was reached in this rank: say so, and ask synclint trace to stop the job."""
        with self.lock:
            self._line({"stopped": reason})
        self.flush()
        try:
            with open(os.path.join(self.folder, STOP_FILE), "x", encoding="utf-8") as stop:
                stop.write(reason)
        except OSError:  # another rank asked first
            pass


def _where(exc: BaseException) -> str:
    from synclint.verify.sites import UserCode

    is_user = UserCode()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user(f.filename)]
    if not frames:
        return ""
    last = frames[-1]
    from synclint.trace.recording import relative

    return f" ({relative(last.filename, os.getcwd())}:{last.lineno}, in {last.name})"


def _failure(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    return f"raised {text}{_where(exc)}"


def start() -> None:
    """Trace this process if it is a rank of the job `synclint trace` runs; never raises."""
    if not wanted():
        return
    folder = os.environ[ENV_DIR]
    os.environ[ENV_INSIDE] = str(os.getpid())
    try:
        _start(folder)
    except Exception as exc:  # the rank runs on, untraced; the file says why
        try:
            with open(os.path.join(folder, f"{os.getpid()}.jsonl"), "a", encoding="utf-8") as file:
                file.write(json.dumps({"process": {"pid": os.getpid(), "started": time.perf_counter()}}) + "\n")
                file.write(json.dumps({"failed": f"{type(exc).__name__}: {exc}"}) + "\n")
        except OSError:
            pass


def _start(folder: str) -> None:
    from synclint.trace.recording import Limits, TraceRecording
    from synclint.trace.session import Settings, detector, watching

    data = json.loads(os.environ.get(ENV_SETTINGS) or "{}")
    settings = Settings.from_json(json.dumps(data.get("settings", {})))
    limits = RankLimits(**data.get("limits", {}))
    chosen = detector(settings, rank=True)
    holder: list[RankFile] = []
    recording = TraceRecording(Limits(limits.skip_syncs, limits.skip_seconds, limits.max_steps, None),
                               stopper=lambda reason: holder[0].stop(reason))
    writer = RankFile(folder, recording, chosen)
    holder.append(writer)
    writer.header()
    stack = watching(chosen, recording, rank=True)

    import torch.distributed as dist

    if dist.is_available():
        init = dist.init_process_group

        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            result = init(*args, **kwargs)
            writer._learn_rank()
            return result

        dist.init_process_group = init_process_group

    try:  # torch.multiprocessing.spawn(fn, nprocs=n) calls fn(i, ...) in child i, through _wrap: i is its rank
        import torch.multiprocessing.spawn

        spawn: Any = sys.modules["torch.multiprocessing.spawn"]  # the attribute of that name is the function
        wrap = spawn._wrap

        def _wrap(fn: Any, i: int, *args: Any, **kwargs: Any) -> Any:
            if writer.rank is None:
                writer.rank = i
            return wrap(fn, i, *args, **kwargs)

        spawn._wrap = _wrap
    except (ImportError, AttributeError):
        pass

    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        writer.error = _failure(exc)
        previous_hook(kind, exc, tb)

    sys.excepthook = excepthook

    def flusher() -> None:
        while not writer.done:
            time.sleep(FLUSH_SECONDS)
            try:
                writer.flush()
            except (OSError, ValueError):  # the file closed at exit
                return

    threading.Thread(target=flusher, name="synclint-trace-flush", daemon=True).start()

    def at_exit() -> None:
        writer.finish()
        stack.close()

    atexit.register(at_exit)
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)

        def terminated(signum: int, frame: Any) -> None:
            writer.finish(terminated=True)
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, terminated)
