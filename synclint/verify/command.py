"""`synclint verify`: each fixture's kernels run before and after the real fixer, with evidence.

For each kernel: syncs before -> after (counted by the CUDA debug mode and the synchronize
wrappers, or by the CPU simulation), host wait before -> after (CUDA: host time of the call
with ~20 ms of GPU work queued), outputs equal (exactly, unless the fixture documents a
tolerance), and time per pipeline step. Exit 1 if a fixed kernel still syncs, still waits,
computes something else, differs from `after.py`, or raises, and the fixture does not
document why; 2 on a usage error.

Importing this module costs no torch: `run()` imports it.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
DEFAULT_REPEAT = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="*", help="rule codes (SYNC101) or fixture folders (default: every fixture)")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="where to run (default: cuda if available, else cpu)")
    parser.add_argument("--json", type=Path, dest="json_file", metavar="FILE", help="write every number to FILE")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT, metavar="N",
                        help=f"timed runs per kernel, after warm-up (default {DEFAULT_REPEAT})")
    parser.add_argument("--fixtures", type=Path, metavar="DIR",
                        help="the folder that rule codes are looked up in (default: ./fixtures, else the ones installed "
                             "with synclint)")


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Context:
    torch: Any
    device_kind: str  # "cuda" or "cpu"
    plain_device: Any
    clock: Any
    repeat: int
    device_name: str


def _setup(device: str | None, repeat: int) -> Context:
    import platform

    import torch

    from synclint.verify.fixtures import FixtureError
    from synclint.verify.measure import CpuClock

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise FixtureError("--device cuda: torch sees no CUDA device (torch "
                               f"{torch.__version__}); use --device cpu for the simulation")
        from synclint.verify.cuda import HostClock

        plain = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.init()
        clock = HostClock(plain)
        name = torch.cuda.get_device_name(plain)
        return Context(torch, "cuda", plain, clock, repeat, name)
    # One thread: the simulation's timings are the kernels' host cost, not the thread pool's start-up.
    torch.set_num_threads(1)
    return Context(torch, "cpu", torch.device("cpu"), CpuClock(), repeat,
                   f"{platform.machine()} CPU, 1 thread (simulated GPU)")


def _detector(ctx: Context, files: list[str]):
    from synclint.verify.sites import UserCode

    is_user = UserCode(files)
    if ctx.device_kind == "cuda":
        from synclint.verify.cuda import CudaDetector

        return CudaDetector(is_user, ctx.plain_device)
    from synclint.verify.cpu import Simulator

    return Simulator(is_user, placement=True)


def _rule_names() -> dict[str, str]:
    try:
        from synclint.registry import all_rules

        return {code: rule.name for code, rule in all_rules().items()}
    except Exception:  # the verifier must run even if a rule module is broken
        return {}


def _relative(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _site_list(sites: list[dict], display: dict[str, str]) -> list[dict]:
    return [{**s, "file": display.get(s["file"], s["file"])} for s in sites]


def verify_fixture(folder: Path, ctx: Context, rule_names: dict[str, str]) -> list[dict]:
    """One row per kernel of the fixture (or one error row if the fixture cannot be loaded)."""
    from synclint.verify.fixtures import exec_module, forget_module, load, notes_of
    from synclint.verify.measure import compare, measure

    base = {
        "fixture": folder.name, "rule": folder.name, "rule_name": rule_names.get(folder.name),
        "device": ctx.device_kind, "device_name": ctx.device_name, "simulated": ctx.device_kind != "cuda",
        "torch": ctx.torch.__version__, "repeat": ctx.repeat,
        "queue_ms": getattr(ctx.clock, "queue_ms", None),
    }
    try:
        fixture = load(folder)
    except Exception as exc:
        return [_error_row(base, "", f"cannot read the fixture: {type(exc).__name__}: {exc}")]
    if fixture.fixer_problem:
        _progress(f"{folder.name}: {fixture.fixer_problem}")
    elif not fixture.fixer_matches:
        _progress(f"{folder.name}: the fixer's output differs from {'after.py' if fixture.has_fix else 'before.py'}:\n"
                  + fixture.fixer_diff())

    before_file = str(folder.resolve() / "before.py")
    after_file = None
    if fixture.has_fix and fixture.fixed_text is not None:
        after_file = str(folder.resolve() / "after.py") if fixture.fixer_matches \
            else f"<synclint fix of {_relative(folder / 'before.py')}>"
    display = {before_file: _relative(folder / "before.py")}
    if after_file:
        display[after_file] = _relative(folder / "after.py") if fixture.fixer_matches else after_file
    tag = f"synclint_verify_{folder.name}_{abs(hash(str(folder.resolve())))}"
    modules = []
    try:
        try:
            before = exec_module(fixture.before_text, before_file, f"{tag}_before")
            modules.append(before)
            kernels = tuple(before.KERNELS)
            notes = notes_of(before)
        except Exception as exc:
            return [_error_row(base, "", f"before.py does not import: {type(exc).__name__}: {exc}")]
        after = None
        after_problem = fixture.fixer_problem if fixture.has_fix else None
        if after_file and fixture.fixed_text is not None:
            try:
                after = exec_module(fixture.fixed_text, after_file, f"{tag}_after")
                modules.append(after)
                missing = [k for k in kernels if not callable(getattr(after, k, None))]
                if missing:
                    after_problem = f"the fixed module lacks {', '.join(missing)}"
            except Exception as exc:
                after_problem = f"the fixed module does not import: {type(exc).__name__}: {exc}"
        mismatched = fixture.kernels_changed_by_fixer_mismatch(kernels)
        rows = []
        for kernel in kernels:
            rows.append(_verify_kernel(kernel, before, after, after_problem, fixture, kernel in mismatched,
                                       notes.get(kernel, {}), ctx,
                                       [before_file] + ([after_file] if after_file else []), display, base,
                                       compare, measure))
        return rows
    finally:
        for module in modules:
            forget_module(module)


def _error_row(base: dict, kernel: str, message: str) -> dict:
    _progress(f"{base['fixture']} {kernel}: ERROR {message}")
    return {**base, "kernel": kernel, "status": "error", "ok": False, "note": message,
            "syncs_before": None, "syncs_after": None, "host_wait_us_before": None, "host_wait_us_after": None,
            "outputs_equal": None, "step_ms_before": None, "step_ms_after": None}


def _run(module, kernel: str, ctx: Context, files: list[str], measure):
    fn = getattr(module, kernel)

    def make_args(device):
        return tuple(module.make_inputs(device)[kernel])

    detector = _detector(ctx, files)
    result = measure(fn, make_args, detector, ctx.clock, ctx.plain_device, ctx.repeat)
    if result.error:
        _progress(f"  {kernel} in {module.__file__} raised:\n{result.error_traceback}")
    return result


def _verify_kernel(kernel, before, after, after_problem, fixture, mismatched, note, ctx, files, display, base, compare,
                   measure):
    row: dict[str, Any] = {**base, "kernel": kernel}
    b = _run(before, kernel, ctx, files, measure)
    a = _run(after, kernel, ctx, files, measure) if after is not None and not after_problem else None
    simulated = base["simulated"]

    def put(suffix: str, m) -> None:
        row[f"syncs_{suffix}"] = None if m is None else m.syncs
        row[f"host_wait_us_{suffix}"] = None if m is None else m.host_wait_us
        row[f"host_idle_us_{suffix}"] = None if m is None else m.host_idle_us
        row[f"device_us_{suffix}"] = None if m is None else m.device_us
        row[f"step_ms_{suffix}"] = None if m is None else m.step_ms
        row[f"waited_{suffix}"] = None if m is None else m.waited
        row[f"waits_{suffix}"] = None if m is None else m.waits
        row[f"races_{suffix}"] = None if m is None else m.races
        row[f"sites_{suffix}"] = [] if m is None else _site_list(m.sites, display)
        row[f"error_{suffix}"] = None if m is None else m.error

    put("before", b)
    put("after", a)
    row["fixer_matches_after"] = (not mismatched) if fixture.has_fix else None
    row["outputs_equal"] = None
    row["outputs_difference"] = None
    row["speedup"] = None  # on CUDA only: a CPU run has no GPU queue, its step times say nothing of a GPU's
    if a is not None and b.step_ms and a.step_ms and not simulated:
        row["speedup"] = b.step_ms / a.step_ms

    problems: list[str] = []
    documented: list[str] = []
    cpu_note = note.get("cpu") if simulated else None
    syncs_reason = note.get("syncs") or cpu_note

    if b.error:
        problems.append(f"before raised {b.error}")
    if not fixture.has_fix:
        status = "no fix"
        if mismatched:
            problems.append("the fixer changed before.py, but the fixture has no after.py")
        if not b.error and not (b.syncs or b.waited or b.waits) and not syncs_reason:
            status = "not observed"
        elif syncs_reason:
            documented.append(syncs_reason)
    else:
        status = "fixed"
        if after_problem:
            problems.append(after_problem)
        elif mismatched:
            problems.append("the fixer's output for this kernel differs from after.py")
        if a is not None and a.error:
            problems.append(f"after raised {a.error}")
        if a is not None and not a.error and not b.error:
            tolerance = note.get("tolerance") or {}
            try:
                difference = compare(b.result, a.result, float(tolerance.get("rtol", 0.0)),
                                     float(tolerance.get("atol", 0.0)))
            except Exception as exc:  # an output type the comparison cannot handle
                difference = f"cannot compare: {type(exc).__name__}: {exc}"
            row["outputs_equal"] = difference is None
            row["outputs_difference"] = difference
            if difference:
                if note.get("outputs"):
                    documented.append(note["outputs"])
                else:
                    problems.append(f"outputs differ ({difference})")
            left = []
            if a.syncs:
                left.append(f"still syncs ({a.syncs})")
            if a.waited:
                left.append(f"still waits ({a.host_wait_us / 1e3:.1f} ms with {ctx.clock.queue_ms:.0f} ms queued)")
            if a.waits:
                left.append(f"still waits ({a.waits} large pageable copies)")
            if a.races and a.races > (b.races or 0):
                left.append(f"reads a non-blocking copy before it lands ({a.races})")
            if left:
                if syncs_reason:
                    documented.append(syncs_reason)
                else:
                    problems.extend(left)
            elif not (b.syncs or b.waited or b.waits):
                if syncs_reason:
                    documented.append(syncs_reason)
                else:
                    status = "not observed"
    if problems:
        status = "error" if (b.error or (a is not None and a.error)) else "FAIL"
    elif documented and status == "fixed":
        status = "documented"
    row["status"] = status
    row["ok"] = not problems
    row["documented"] = "; ".join(dict.fromkeys(documented)) or None
    notes = problems + documented
    if status == "not observed":
        notes.append("the original showed no sync here: not observable on the CPU" if simulated
                     else "the original did not sync here")
    if b.races and not documented:
        notes.append(f"{b.races} host read(s) of a non-blocking copy before it landed")
    row["note"] = "; ".join(dict.fromkeys(notes))
    _progress(f"  {fixture.code} {kernel}: syncs {_fmt(row['syncs_before'])} -> {_fmt(row['syncs_after'])}, "
              f"{status}" + (f" ({row['note']})" if row["note"] else ""))
    return row


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def print_table(rows: list[dict], ctx: Context) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, emoji=False, soft_wrap=False,
                      width=None if sys.stdout.isatty() else max(160, int(os.environ.get("COLUMNS", 0) or 0)))
    simulated = ctx.device_kind != "cuda"
    title = (f"synclint verify on {ctx.device_name}, torch {ctx.torch.__version__}, median of {ctx.repeat}"
             + (" (simulated: syncs the CPU run would have had on a GPU)" if simulated else
                f", {ctx.clock.queue_ms:.1f} ms of GPU work queued for the host wait"))
    table = Table(title=title, title_justify="left")
    table.add_column("fixture")
    table.add_column("kernel")
    table.add_column("syncs", justify="right")
    table.add_column("host wait µs" if not simulated else "CPU time µs", justify="right")
    table.add_column("outputs equal", justify="center")
    if not simulated:
        table.add_column("speedup/step", justify="right")
    table.add_column("verdict")
    for row in rows:
        after = row.get("syncs_after")
        syncs = f"{_fmt(row.get('syncs_before'))} -> {_fmt(after)}" if row.get("fixer_matches_after") is not None \
            else _fmt(row.get("syncs_before"))
        key = "host_idle_us" if simulated else "host_wait_us"
        wait = f"{_fmt(row.get(key + '_before'))}" + (
            f" -> {_fmt(row.get(key + '_after'))}" if row.get(key + "_after") is not None else "")
        equal = {True: "yes", False: "NO", None: "-"}[row.get("outputs_equal")]
        speedup = f"{row['speedup']:.2f}x" if row.get("speedup") else "-"
        verdict = row["status"] + (f": {row['note']}" if row.get("note") else "")
        style = None if row["ok"] else "bold red"
        cells = [row["fixture"], row.get("kernel", ""), syncs, wait, equal, *([] if simulated else [speedup]), verdict]
        table.add_row(*cells, style=style)
    console.print(table)
    if simulated:
        from synclint.verify.cpu import CATALOGUE_COVERAGE

        console.print("No speedups: a CPU run has no GPU queue to wait for, so its times (CPU time: the kernel "
                      "computed on this CPU) say nothing of a GPU's; `--device cuda` measures the host wait and the "
                      "speedup.", style="dim")

        blind = [row for row, seen in CATALOGUE_COVERAGE.items() if seen.startswith("no")]
        console.print("The CPU simulation cannot see: " + "; ".join(blind) + ".", style="dim")
    failed = [r for r in rows if not r["ok"]]
    console.print(f"{len(rows)} kernels, {len(failed)} failed" + (
        ": " + ", ".join(f"{r['fixture']}.{r.get('kernel', '')}" for r in failed) if failed else "."))


def run(args: argparse.Namespace) -> int:
    import json

    from synclint.verify.fixtures import FixtureError, default_root, resolve

    if args.repeat < 1:
        print("synclint: error: --repeat must be at least 1", file=sys.stderr)
        return EXIT_ERROR
    try:
        import torch  # noqa: F401
    except ImportError:
        print("synclint: error: `synclint verify` needs torch and numpy: install synclint with its verify extra, "
              "as `pip install 'path/to/synclint[verify]'` (a CPU-only torch first: `pip install torch "
              "--index-url https://download.pytorch.org/whl/cpu`)", file=sys.stderr)
        return EXIT_ERROR
    root = args.fixtures or default_root(Path.cwd())
    try:
        folders = resolve(list(args.targets), root)
        ctx = _setup(args.device, args.repeat)
    except FixtureError as exc:
        print(f"synclint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # CUDA initialisation or the clock's calibration failed
        import traceback

        traceback.print_exc()
        print(f"synclint: error: cannot set up --device {args.device or 'auto'}: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return EXIT_ERROR
    queue = f", GPU queue {ctx.clock.queue_ms:.1f} ms ({ctx.clock.cycles_per_ms:,.0f} cycles/ms)" \
        if ctx.device_kind == "cuda" else " (simulated)"
    _progress(f"synclint verify: {len(folders)} fixtures on {ctx.device_kind}: {ctx.device_name}, "
              f"torch {ctx.torch.__version__}, repeat {ctx.repeat}{queue}")
    rule_names = _rule_names()
    rows: list[dict] = []
    for i, folder in enumerate(folders, 1):
        _progress(f"[{i}/{len(folders)}] {folder.name}")
        try:
            rows.extend(verify_fixture(folder, ctx, rule_names))
        except Exception as exc:  # never lose the other fixtures' results
            import traceback

            _progress(traceback.format_exc())
            rows.append(_error_row({"fixture": folder.name, "rule": folder.name, "device": ctx.device_kind,
                                    "simulated": ctx.device_kind != "cuda"}, "", f"{type(exc).__name__}: {exc}"))
    if args.json_file is not None:
        try:
            args.json_file.parent.mkdir(parents=True, exist_ok=True)
            args.json_file.write_text(json.dumps(rows, indent=2, default=str) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"synclint: error: cannot write {args.json_file}: {exc.strerror or exc}", file=sys.stderr)
            print_table(rows, ctx)
            return EXIT_ERROR
    print_table(rows, ctx)
    return EXIT_FAILED if any(not r["ok"] for r in rows) else EXIT_OK
