"""The program `synclint trace` runs: `python script.py args...`, `python -m module args...`, or a launcher.

A program runs in synclint's own interpreter (the detector hooks this process), as `python` would run
it: `sys.argv` is the program's, the script's folder (or, with `-m`, the current folder) is first
on `sys.path`, and `__name__` is `"__main__"`. Everything is put back afterwards.

A launcher (`torchrun ...`, `python -m torch.distributed.run ...`, `python -m torch.distributed.launch ...`)
runs as a process of its own, with synclint's interpreter (`python -m torch.distributed.run` is what
`torchrun` is), and its ranks are traced (`job`). No torch here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import runpy
import signal
import sys
import threading
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from synclint.trace.recording import StopTrace

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?", re.IGNORECASE)
USAGE = ("synclint trace [options] -- python script.py [args...]  (or: -- python -m module [args...], "
         "-- torchrun [options] script.py [args...])")
LAUNCHERS = {"torch.distributed.run", "torch.distributed.launch"}


class ProgramError(Exception):
    """The command after `--` cannot be run: a usage error (exit 2)."""


@dataclass(frozen=True)
class Program:
    script: str | None  # a path, or
    module: str | None  # a module name
    args: tuple[str, ...]  # the program's own arguments
    torchrun: bool = False  # written as `torchrun ...`

    @property
    def launcher(self) -> bool:
        """A module that starts the ranks in processes of their own (torchrun)."""
        return self.module in LAUNCHERS

    @property
    def shown(self) -> str:
        if self.torchrun:
            return " ".join(["torchrun", *self.args])
        return " ".join(["python", self.script or f"-m {self.module}", *self.args])

    def command(self) -> list[str]:
        """The launcher's command line, run with synclint's interpreter."""
        return [sys.executable, "-m", self.module or "", *self.args]


def parse_program(words: list[str]) -> Program:
    """The words after `--`. `python` (any `pythonX.Y`, or a path to one) may be left out before a `.py`."""
    if not words:
        raise ProgramError(f"nothing to run after `--`: {USAGE}")
    if os.path.basename(words[0]) in ("torchrun", "torchrun.exe"):
        return Program(None, "torch.distributed.run", tuple(words[1:]), torchrun=True)
    if _PYTHON.fullmatch(os.path.basename(words[0])):
        words = words[1:]
    elif not words[0].endswith(".py"):
        raise ProgramError(f"synclint trace runs Python programs, not {words[0]!r}: {USAGE}")
    if not words:
        raise ProgramError(f"`python` needs a script or `-m module`: {USAGE}")
    if words[0] == "-m":
        if len(words) < 2:
            raise ProgramError(f"`-m` needs a module name: {USAGE}")
        return Program(None, words[1], tuple(words[2:]))
    if words[0].startswith("-"):
        raise ProgramError(f"python option {words[0]} is not supported here, only a script or `-m module`: {USAGE}")
    if not os.path.isfile(words[0]):
        raise ProgramError(f"{words[0]}: no such file")
    return Program(words[0], None, tuple(words[1:]))


@dataclass
class Outcome:
    stopped: str | None = None  # why a limit stopped it
    error: str | None = None  # how it failed: an exception, a non-zero exit status


@contextmanager
def _as_main(program: Program) -> Iterator[None]:
    saved_argv, saved_path, saved_main = sys.argv[:], sys.path[:], sys.modules.get("__main__")
    if program.script is not None:
        sys.argv = [program.script, *program.args]
        sys.path.insert(0, os.path.dirname(os.path.abspath(program.script)))
    else:
        sys.argv = [program.module or "", *program.args]
        sys.path.insert(0, os.getcwd())
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


@contextmanager
def _deadline(seconds: float | None, stop: Callable[[str], None]) -> Iterator[None]:
    """`stop(reason)` (which raises StopTrace) in the main thread after `seconds`, by SIGALRM where there is one."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        yield
        return

    def alarm(signum, frame) -> None:
        stop(f"{seconds:g} s passed (--max-seconds)")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _where(exc: BaseException, is_user: Callable[[str], bool]) -> str:
    """`file:line, in function` of the innermost frame of the user's code in the exception's traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user(f.filename)]
    if not frames:
        return ""
    last = frames[-1]
    return f" ({os.path.relpath(last.filename) if not last.filename.startswith('<') else last.filename}:" \
           f"{last.lineno}, in {last.name})"


def run_program(program: Program, is_user: Callable[[str], bool], max_seconds: float | None,
                stop: Callable[[str], None]) -> Outcome:
    """Run it to its end, to a limit (`StopTrace`), or to its failure; never raises but KeyboardInterrupt."""
    outcome = Outcome()
    with _as_main(program):
        if program.module is not None:
            try:
                found = importlib.util.find_spec(program.module)
            except (ImportError, ValueError) as exc:  # its parent package is missing or broken
                raise ProgramError(f"cannot import {program.module}: {exc}") from None
            if found is None:
                raise ProgramError(f"no module named {program.module!r}")
        try:
            with _deadline(max_seconds, stop):
                if program.script is not None:
                    # As python (3.9+) runs a script: by its absolute path (its __file__, what spawned children re-run).
                    runpy.run_path(os.path.abspath(program.script), run_name="__main__")
                else:
                    assert program.module is not None  # a program is a script or a module (`Program`)
                    runpy.run_module(program.module, run_name="__main__", alter_sys=True)
        except StopTrace as limit:
            outcome.stopped = limit.reason
        except SystemExit as exit_:
            if exit_.code not in (None, 0):
                status = exit_.code if isinstance(exit_.code, int) else 1
                outcome.error = f"the program exited with status {status}" + (
                    "" if isinstance(exit_.code, int) else f": {exit_.code}")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the program's own failure: reported, not re-raised
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
            outcome.error = f"the program raised {text}{_where(exc, is_user)}"
    return outcome
