"""Running a job of several processes under the trace: a launcher's ranks, a program's spawned children.

`rank_environment(folder, settings, limits)` is the environment that makes every rank started under it
trace itself (`rank.start`, through a `sitecustomize` it writes in `folder/boot`, first on `PYTHONPATH`;
that one then runs the `sitecustomize` it hides, if the environment has one) into `folder`.
`run_launcher` runs a launcher (`torchrun`) in a process of its own, in a session of its own, with
that environment; passes its output through; stops the job when a rank reached `--max-steps`
(a `stop` file) or `--max-seconds` passed (SIGTERM to the launcher, which stops its workers; SIGKILL
to what is left after a grace period); and reports how it ended. The ranks' files are then read
with `processes.read_processes`. No torch here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import asdict, dataclass
from typing import IO, Callable

from synclint.trace.rank import ENV_DIR, ENV_INSIDE, ENV_SETTINGS, STOP_FILE, RankLimits
from synclint.trace.session import Settings

GRACE_SECONDS = 15.0  # after SIGTERM, before SIGKILL

SITECUSTOMIZE = '''"""Written by `synclint trace`: traces the ranks of its job (synclint.trace.rank)."""
import importlib.machinery
import importlib.util
import os
import sys

try:
    from synclint.trace.rank import start
except ImportError:  # a Python without synclint (another interpreter the program runs): nothing to trace
    pass
else:
    start()
finally:
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
    if _spec is not None and _spec.loader is not None:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
'''


def rank_environment(folder: str, settings: Settings, limits: RankLimits, base: dict | None = None) -> dict[str, str]:
    import synclint

    boot = os.path.join(folder, "boot")
    os.makedirs(boot, exist_ok=True)
    with open(os.path.join(boot, "sitecustomize.py"), "w", encoding="utf-8") as file:
        file.write(SITECUSTOMIZE)
    env = dict(os.environ if base is None else base)
    env.pop(ENV_INSIDE, None)
    env[ENV_DIR] = folder
    env[ENV_SETTINGS] = json.dumps({"settings": json.loads(settings.to_json()), "limits": asdict(limits)})
    # synclint importable in the ranks (they run this interpreter): its folder, unless it is installed
    # in site-packages (which put before the standard library could shadow it).
    home = os.path.dirname(os.path.dirname(os.path.realpath(synclint.__file__)))
    installed = {os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    env["PYTHONPATH"] = os.pathsep.join([boot, *([] if home in installed else [home]),
                                         *filter(None, [env.get("PYTHONPATH")])])
    return env


@dataclass
class LauncherOutcome:
    status: int | None = None  # the launcher's exit status (negative: killed by that signal)
    stopped: str | None = None  # why synclint stopped the job
    error: str | None = None  # how the launcher failed


def _pump(source: IO[bytes], sink: Callable[[], IO[str]]) -> None:
    """Copy the launcher's output to ours as it comes (our streams may be replaced: look them up each line)."""
    for line in iter(source.readline, b""):
        stream = sink()
        try:
            stream.write(line.decode("utf-8", "replace"))
            stream.flush()
        except (OSError, ValueError):
            pass
    source.close()


def _signal_job(proc: subprocess.Popen, signum: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signum)  # the launcher's session; torchrun's workers have sessions of their own
        elif signum == signal.SIGTERM:
            proc.terminate()
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def run_launcher(command: list[str], env: dict[str, str], folder: str, max_seconds: float | None) -> LauncherOutcome:
    outcome = LauncherOutcome()
    try:
        proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        outcome.error = f"cannot start {command[0]}: {exc.strerror or exc}"
        return outcome
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, lambda: sys.stdout), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, lambda: sys.stderr), daemon=True)]
    for pump in pumps:
        pump.start()
    started = time.monotonic()
    stop_file = os.path.join(folder, STOP_FILE)
    terminated_at: float | None = None
    try:
        while proc.poll() is None:
            time.sleep(0.05)
            if terminated_at is None:
                if os.path.exists(stop_file):
                    with open(stop_file, encoding="utf-8") as reason:
                        outcome.stopped = reason.read().strip() or "a rank reached a limit"
                elif max_seconds is not None and time.monotonic() - started >= max_seconds:
                    outcome.stopped = f"{max_seconds:g} s passed (--max-seconds)"
                if outcome.stopped is not None:
                    _signal_job(proc, signal.SIGTERM)
                    terminated_at = time.monotonic()
            elif time.monotonic() - terminated_at > GRACE_SECONDS:
                _signal_job(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
                terminated_at = float("inf")
    except KeyboardInterrupt:
        _signal_job(proc, signal.SIGTERM)
        proc.wait()
        raise
    for pump in pumps:
        pump.join(timeout=5)
    outcome.status = proc.returncode
    if outcome.stopped is None and proc.returncode != 0:
        outcome.error = (f"the launcher was killed by signal {-proc.returncode}" if proc.returncode < 0
                         else f"the launcher exited with status {proc.returncode}")
    return outcome
