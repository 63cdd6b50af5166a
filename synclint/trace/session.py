"""What watches one traced process: the detector, the timing of waits, the pageable copies, the steps.

`Settings` is what `synclint trace` chose (it travels to the ranks of a job as JSON in the
environment); `watching(settings, recording)` picks the detector and enters everything that records
into `recording`, in this process or in a rank:

- on CUDA, `synclint.verify`'s `CudaDetector` (the sync debug mode and the synchronize wrappers), the
  waits timed by `timing.CallStarts` (Python 3.12+; before it `WaitTimer`, a `TorchFunctionMode`),
  and `copies.PageableCopies`, the non-blocking copies that wait without the debug mode knowing;
- without CUDA, the CPU simulation (`Simulator`), untimed;
- on both, a global optimizer-step hook that marks the timeline's steps.

Importing this module costs no torch; `watching` imports it.
"""

from __future__ import annotations

import json
import os
import threading
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any, Callable

from synclint.trace.recording import TraceRecording


class SessionError(Exception):
    """The trace cannot start: no torch, no CUDA for `--device cuda`, a `--source` that is no folder."""


@dataclass(frozen=True)
class Settings:
    device: str = "auto"  # auto, cuda, cpu
    no_times: bool = False
    sources: tuple[str, ...] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Settings":
        data = json.loads(text)
        sources = data.get("sources")
        return cls(data.get("device", "auto"), bool(data.get("no_times")), None if sources is None else tuple(sources))


@dataclass
class Detector:
    """The chosen detector and what it can say: `cuda` (else the simulation) and `timed`."""

    detector: Any
    cuda: bool
    timed: bool

    @property
    def kind(self) -> str:
        return self.detector.kind

    @property
    def untimed(self) -> str | None:
        """Why the run has no times (None: it has)."""
        if self.timed:
            return None
        return "not timed: --no-times" if self.cuda else "simulated on the CPU: counts only, no times"


def detector(settings: Settings, rank: bool = False) -> Detector:
    """The detector `settings` ask for; raises SessionError when it cannot be had. In a rank (`rank`),
    `settings.device` is what `synclint trace` found, and CUDA is not asked about: asking starts CUDA's
    runtime, which must wait for the rank's own choice of devices (`CUDA_VISIBLE_DEVICES` set by the script)."""
    try:
        import torch
    except ImportError:
        raise SessionError("synclint trace needs torch: pip install 'synclint[verify]'") from None
    from synclint.verify.sites import UserCode

    for folder in settings.sources or ():
        if not os.path.isdir(folder):
            raise SessionError(f"--source {folder}: no such folder")
    is_user = UserCode(sources=None if settings.sources is None else list(settings.sources))
    device = settings.device
    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        if not rank and not torch.cuda.is_available():
            raise SessionError(f"--device cuda: torch {torch.__version__} sees no CUDA device; "
                               "--device cpu runs the simulation")
        from synclint.verify.cuda import CudaDetector

        # torch.device("cuda"), not the current device: asking for it would start CUDA on GPU 0 in
        # every rank of a job, before the rank picks its own.
        return Detector(CudaDetector(is_user, device=torch.device("cuda")), True, not settings.no_times)
    from synclint.verify.cpu import Simulator

    return Detector(Simulator(is_user, placement=False), False, False)


def _after_cuda_starts(stack: ExitStack, enter: Callable[[], None]) -> None:
    """`enter()` once CUDA has started: now if it has, else as the program's first CUDA call starts it
    (`torch.cuda._lazy_init`, which torch calls from Python and C++ alike, by name), on the main thread."""
    import torch.cuda as cuda

    if cuda.is_initialized():
        enter()
        return
    original = cuda._lazy_init

    def _lazy_init() -> None:
        original()
        if cuda._lazy_init is _lazy_init and threading.current_thread() is threading.main_thread():
            cuda._lazy_init = original
            enter()

    cuda._lazy_init = _lazy_init
    stack.callback(lambda: setattr(cuda, "_lazy_init", original) if cuda._lazy_init is _lazy_init else None)


def _import_dynamo_before_the_program() -> None:
    """Import `torch._dynamo` now, before the program runs, not halfway through it.

    torch wraps every `TorchDispatchMode`'s `__torch_dispatch__` in `torch._disable_dynamo`, which
    imports `torch._dynamo` on the mode's first operation. That import imports
    `torch.distributed.nn.functional`, whose functions take `group=group.WORLD` as a default argument,
    evaluated then: when the first operation the simulation sees comes after `init_process_group`
    (a rank that starts its process group first, as torchrun's scripts do), ten default tuples keep
    the default process group for good. `destroy_process_group()` then frees nothing: gloo's worker
    threads live on into the interpreter's shutdown, where one that drops the last reference to a
    finished work releases its tensors' Python objects, needs the GIL, is ended by the finalizing
    interpreter (`pthread_exit`) inside a noexcept destructor, and the rank aborts ("terminate called
    without an active exception", SIGABRT). Imported first, the defaults hold `None`, as in the
    program run without the trace."""
    import torch._dynamo  # noqa: F401


def watching(chosen: Detector, recording: TraceRecording, rank: bool = False) -> ExitStack:
    """Everything that records into `recording`, entered; close the stack to stop. In a rank the CUDA
    detector starts with the program's own first CUDA call: the sync debug mode starts CUDA, and
    started before the rank picks its device it would put a context on GPU 0 in every rank. The CPU
    simulation (a `TorchDispatchMode`) loads `torch._dynamo` first (`_import_dynamo_before_the_program`)."""
    if not chosen.cuda:
        _import_dynamo_before_the_program()
    stack = ExitStack()
    try:
        if rank and chosen.cuda:
            _after_cuda_starts(stack, lambda: stack.enter_context(chosen.detector.watch(recording)))
        else:
            stack.enter_context(chosen.detector.watch(recording))
        if chosen.cuda:
            from synclint.trace.copies import PageableCopies

            stack.enter_context(PageableCopies(chosen.detector.is_user, recording))
        if chosen.timed:
            from synclint.trace import timing

            if timing.available():
                starts = stack.enter_context(timing.CallStarts())
                recording.starts = starts
                stack.callback(setattr, recording, "starts", None)
            else:
                from synclint.verify.cuda import WaitTimer

                stack.enter_context(WaitTimer(recording))
        from torch.optim.optimizer import register_optimizer_step_post_hook

        handle = register_optimizer_step_post_hook(lambda optimizer, args, kwargs: recording.step())
        stack.callback(handle.remove)
    except BaseException:
        stack.close()
        raise
    return stack
