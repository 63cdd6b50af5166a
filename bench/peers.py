#!/usr/bin/env python3
"""synclint's speed beside its peers, measured side by side in one run on vLLM 0.33.0's package.

What it measures: the whole-process wall time (median of --runs), files and lines per second,
peak memory and CPU time of each tool over the same tree, and each tool's wall time divided by
synclint's cold wall time. The machine is noisy: only numbers from one run of this script
compare, so the runs are interleaved (round 1 runs every tool once, then round 2, ...).

Rows:
  synclint cold       PYTHON -m synclint check --exit-zero [--no-cache] --output-format concise --jobs J vllm
  synclint warm       the same with --cache-dir DIR, after one unmeasured run filled DIR
                      (only when synclint has --cache-dir): nothing changed, so it replays that run
  synclint warm, per-file cache  the same on a copy of DIR whose replay records are removed before
                      each run (as CI meets a restored cache, or any other command line meets
                      DIR): each file's result comes from the cache
  synclint one file   PYTHON -m synclint check --exit-zero --cache-dir DIR --output-format concise vllm/<--one-file>
                      (as pre-commit runs it: interpreter start included, the package's index in the
                      warm run's cache, after one unmeasured run; the file must be in the tree,
                      --limit keeps it). Nothing changed, so synclint replays its last run.
  synclint one file edited  the same after appending a comment to the file (as pre-commit meets
                      it: the file just changed); the file is restored after each run
  synclint one file, fresh copy, no cache  PYTHON -m synclint check --exit-zero --no-cache
                      --output-format concise vllm/<--one-file> in a copy of the tree (made once:
                      --no-cache writes nothing), as the first pre-commit run after installing the
                      hook meets it: nothing kept of the package, which the run indexes as the
                      file needs it (with --baseline-python, the baseline's row too)
  TorchFix            torchfix -j J vllm (TorchFix's default rules; libcst with metadata)
  Fixit               fixit lint vllm (Fixit's default rules; as many processes as CPUs)
  libcst parse xJ     libcst.parse_module of every file in J processes (no metadata, no rules)
  libcst parse x1     the same in 1 process
  ast.parse x1        the stdlib's ast.parse of every file in 1 process
  ruff                ruff check --isolated --no-cache --exit-zero --target-version py312 vllm
                      (ruff's default rules, RAYON_NUM_THREADS=J)
  baseline synclint cold / warm / warm, per-file cache
                      with --baseline-python PY: the same three rows of another synclint (an
                      install of an earlier commit), in the same rounds, with its own cache: the
                      ratios of a change against what it changed, measured side by side (and its
                      one file, fresh copy, no cache)
synclint and the two parse-only rows run under --python (synclint's interpreter and its libcst),
with synclint's bytecode written first, as installing it does; no tool runs with
PYTHONDONTWRITEBYTECODE, which would make it compile its modules on every start;
TorchFix, Fixit and ruff come from their own virtual environment (--peers-venv), created and
filled with pip when it is missing. The corpus is vLLM's wheel, downloaded with pip into
--corpus-dir; its .py files are the tree (skipped when already there; --tree picks any tree).

Each measurement runs in a fresh wrapper process that starts the tool in a new session, waits
for it and reads getrusage(RUSAGE_CHILDREN): its peak RSS is the largest of the tool's processes
(the main one or one worker), not the sum over them. A tool that runs past --timeout is killed
(its whole process group) and reported as a timeout.

Usage:
    python bench/peers.py                                       # downloads the corpus, 3 runs
    python bench/peers.py --tree /work/vllm-src/vllm/0.33.0/vllm --limit 200 --runs 1
    python bench/peers.py --runs 1 --skip fixit --json-out /tmp/peers.json

Stdlib only; every tool runs as a subprocess. vLLM's code and the peers stay outside the
repository (defaults under /work/peers).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import DENSITY_VERSION, count_lines, iter_py_files, source_fingerprint, vllm_tree

PEERS_HOME = Path(os.environ.get("SYNCLINT_PEERS", "/work/peers"))
PEER_PACKAGES = ("torchfix==0.7.0", "fixit", "ruff", "libcst")
PEER_SCRIPTS = ("torchfix", "fixit", "ruff")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_31_x86_64")
ONE_FILE = "model_executor/models/llama.py"
SKIPPABLE = ("baseline", "warm", "warm-entries", "onefile", "onefile-edited", "onefile-fresh", "torchfix", "fixit",
             "libcst-jobs", "libcst-1", "ast", "ruff")

# Runs one command in a new session, waits for it, and prints one JSON line: wall seconds,
# exit status, whether it timed out, and the rusage of every descendant it waited for.
WRAPPER = r"""
import json, os, resource, signal, subprocess, sys, time
spec = json.loads(sys.argv[1])
with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
    start = time.perf_counter()
    proc = subprocess.Popen(spec["cmd"], cwd=spec["cwd"], env=spec["env"], stdin=subprocess.DEVNULL,
                            stdout=out, stderr=err, start_new_session=True)
    timed_out = False
    try:
        status = proc.wait(timeout=spec["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
    wall = time.perf_counter() - start
try:
    os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the tool's own session, if any
except (ProcessLookupError, PermissionError):
    pass
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "status": status, "timed_out": timed_out, "maxrss_kib": usage.ru_maxrss,
                  "cpu": usage.ru_utime + usage.ru_stime}))
"""

# Parses every .py file under argv[1] with PARSER, in argv[2] processes; prints files and errors.
PARSE = r"""
import os, sys
PARSER
def paths(root):
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.join(folder, name)
def one(path):
    with open(path, "rb") as f:
        source = f.read()
    try:
        parse(source)
        return 0
    except Exception:
        return 1
if __name__ == "__main__":
    root, jobs = sys.argv[1], int(sys.argv[2])
    files = list(paths(root))
    if jobs > 1:
        import multiprocessing
        with multiprocessing.Pool(jobs) as pool:
            errors = list(pool.imap_unordered(one, files, chunksize=8))
    else:
        errors = [one(p) for p in files]
    print(f"parsed {len(files)} files, {sum(errors)} errors")
"""
LIBCST_PARSER = "import libcst\nparse = libcst.parse_module"
AST_PARSER = "import ast\nparse = ast.parse"


@dataclass
class Tool:
    key: str
    label: str
    cmd: list[str]
    cwd: Path
    check: Callable[[str, str, int], tuple[bool, str]]
    files: int
    lines: int
    env: dict[str, str] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    skipped: str = ""  # why the row has no measurement
    shown: str = ""  # the command as printed, when the real one is too long to read
    edits: Path | None = None  # a file to change before each run and restore after it
    forget_replays_in: Path | None = None  # a synclint cache folder whose replay records go before each run

    def measured(self) -> list[dict]:
        return [r for r in self.runs if not r["timed_out"] and not r.get("wrapper_error")]

    def wall(self) -> float | None:
        done = self.measured()
        return statistics.median(r["wall"] for r in done) if done and len(done) == len(self.runs) else None


# --- checks: did the tool do plausible work? (exit codes are recorded, never fatal) -------------

def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def check_synclint(out: str, err: str, status: int) -> tuple[bool, str]:
    found = [line.strip() for line in out.splitlines() if line.startswith(("Found ", "All checks passed"))]
    summary = found[-1] if found else last_line(out)
    ok = status == 0 and "Traceback" not in err and bool(summary)
    return ok, summary or f"no output; stderr: {last_line(err)}"


def check_parse(expected_files: int) -> Callable[[str, str, int], tuple[bool, str]]:
    def check(out: str, err: str, status: int) -> tuple[bool, str]:
        summary = last_line(out)
        ok = status == 0 and summary.startswith(f"parsed {expected_files} files")
        return ok, summary or f"no output; stderr: {last_line(err)}"
    return check


def check_torchfix(out: str, err: str, status: int) -> tuple[bool, str]:
    finished = [line for line in err.splitlines() if line.startswith("Finished checking")]
    findings = sum(1 for line in out.splitlines() if ": TOR" in line)
    ok = bool(finished) and status in (0, 1) and "Traceback" not in err
    note = f"{finished[-1].strip()} {findings} findings" if finished else f"no summary; stderr: {last_line(err)}"
    return ok, note


def check_fixit(out: str, err: str, status: int) -> tuple[bool, str]:
    summary = [line for line in (out + "\n" + err).splitlines() if "files checked" in line or "file checked" in line]
    ok = bool(summary) and status in (0, 1)
    return ok, (summary[-1].strip(" 🛠️") if summary else f"no summary; stderr: {last_line(err)}")


def check_ruff(out: str, err: str, status: int) -> tuple[bool, str]:
    summary = [line for line in out.splitlines() if line.startswith(("Found ", "All checks passed"))]
    ok = bool(summary) and status == 0
    return ok, (summary[0].strip() if summary else f"no summary; stderr: {last_line(err)}")


# --- setup: corpus, peers, synclint's options ------------------------------------------------------

def run_quiet(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    print(f"{what}: {shlex.join(cmd)}", file=sys.stderr)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"peers.py: {what} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def ensure_peers(venv: Path, base_python: str) -> Path:
    """The peers' virtual environment, created and filled when one of its tools is missing."""
    python = venv / "bin" / "python"
    if python.exists() and all((venv / "bin" / s).exists() for s in PEER_SCRIPTS):
        return python
    if not python.exists():
        run_quiet([base_python, "-m", "venv", str(venv)], "creating the peers' venv")
    run_quiet([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], "installing the peers")
    return python


def ensure_corpus(corpus_dir: Path, version: str, pip_python: Path) -> Path:
    """vLLM's package from its wheel (only the .py files), downloaded with pip unless already there."""
    tree = vllm_tree(version, corpus_dir)
    done = tree.parent / ".complete"
    if done.exists():
        return tree
    wheels = corpus_dir / ".wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
        run_quiet([str(pip_python), "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                   "--python-version", "3.12", *platforms, f"vllm=={version}", "-d", str(wheels)],
                  "downloading vLLM's wheel")
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        sys.exit(f"peers.py: pip downloaded no vllm-{version} wheel into {wheels}")
    with zipfile.ZipFile(found[0]) as zf:
        zf.extractall(tree.parent, [n for n in zf.namelist() if n.startswith("vllm/") and n.endswith(".py")])
    done.write_text(found[0].name + "\n")
    print(f"extracted {found[0].name} -> {tree}", file=sys.stderr)
    return tree


def subset(tree: Path, limit: int, dest: Path) -> Path:
    """The first `limit` files of `tree` (sorted by path), copied under dest/<tree's name>."""
    names = sorted(p.relative_to(tree).as_posix() for p in iter_py_files(tree))[:limit]
    copy = dest / tree.name
    for name in names:
        target = copy / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tree / name, target)
    return copy


def synclint_flags(python: str) -> set[str]:
    """The options of `synclint check` that this synclint has (it is still growing)."""
    proc = subprocess.run([python, "-m", "synclint", "check", "--help"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"peers.py: `{python} -m synclint check --help` failed:\n{proc.stderr[-2000:]}")
    return {word.strip(",[]") for word in proc.stdout.split() if word.startswith("--")}


def compile_bytecode(python: str) -> None:
    """Write synclint's bytecode, as installing a wheel does: a run that compiles its modules
    first measures the compiler, not synclint (the peers come from pip, compiled)."""
    code = ("import compileall, os, synclint, synclint.rules\n"
            "for folder in [os.path.dirname(synclint.__file__), *synclint.rules.__path__]:\n"
            "    compileall.compile_dir(folder, quiet=1)\n")
    subprocess.run([python, "-c", code], env=tool_environment({}), check=True)


def tool_environment(extra: dict[str, str]) -> dict[str, str]:
    """This environment for a measured tool, less PYTHONDONTWRITEBYTECODE (set on some machines:
    it makes every run compile every module it imports), plus `extra`."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **extra}


def versions(python: str, packages: tuple[str, ...]) -> dict[str, str]:
    code = ("import importlib.metadata as m, sys\n"
            "print('python', sys.version.split()[0])\n"
            "for p in sys.argv[1:]:\n"
            "    try: print(p, m.version(p))\n"
            "    except m.PackageNotFoundError: print(p, '-')\n")
    proc = subprocess.run([python, "-c", code, *packages], capture_output=True, text=True)
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


# --- measuring --------------------------------------------------------------------------------------

def measure(tool: Tool, timeout: float, scratch: Path, index: int) -> dict:
    out, err = scratch / f"{tool.key}.{index}.out", scratch / f"{tool.key}.{index}.err"
    spec = {"cmd": tool.cmd, "cwd": str(tool.cwd), "env": tool_environment(tool.env), "timeout": timeout,
            "stdout": str(out), "stderr": str(err)}
    original = tool.edits.read_bytes() if tool.edits is not None else b""
    stat = tool.edits.stat() if tool.edits is not None else None
    try:
        if tool.forget_replays_in is not None:
            for records in tool.forget_replays_in.glob("v*/replay"):
                shutil.rmtree(records, ignore_errors=True)
        if tool.edits is not None:
            tool.edits.write_bytes(original + f"# edited by bench/peers.py before run {index}\n".encode())
        proc = subprocess.run([sys.executable, "-I", "-c", WRAPPER, json.dumps(spec)], capture_output=True,
                              text=True, timeout=timeout + 120)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as exc:
        return {"wall": None, "status": None, "timed_out": False, "maxrss_kib": None, "cpu": None,
                "wrapper_error": str(exc), "ok": False, "note": "the measuring wrapper failed"}
    finally:
        if tool.edits is not None and stat is not None:
            # The same bytes and times again, so that the other rows see the file unchanged.
            tool.edits.write_bytes(original)
            os.utime(tool.edits, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    stdout = out.read_text(errors="replace")
    stderr = err.read_text(errors="replace")
    if result["timed_out"]:
        result.update(ok=False, note=f"timeout after {timeout:.0f} s")
    else:
        result["ok"], result["note"] = tool.check(stdout, stderr, result["status"])
    if not result["ok"]:
        result["stderr_tail"] = stderr[-3000:]
        result["stdout_tail"] = stdout[-1000:]
    out.unlink()
    err.unlink()
    return result


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def median_cpu(tool: Tool) -> float | None:
    done = tool.measured()
    return statistics.median(r["cpu"] for r in done) if done and len(done) == len(tool.runs) else None


def rows_for(tools: list[Tool], base: float | None, base_cpu: float | None, timeout: float) -> list[tuple]:
    rows = []
    for tool in tools:
        if tool.skipped:
            rows.append((tool.label, "-", "-", "-", "-", "-", "-", "-", "-", "-", f"not run: {tool.skipped}"))
            continue
        wall = tool.wall()
        done = tool.measured()
        cpu = median_cpu(tool)
        rss = max(r["maxrss_kib"] for r in done) / 1024 if done else None
        statuses = ",".join(sorted({str(r["status"]) for r in tool.runs}))
        notes = "; ".join(sorted({r["note"] for r in tool.runs}))
        if not all(r["ok"] for r in tool.runs):
            notes = "WARNING: " + notes
        if wall is None and any(r["timed_out"] for r in tool.runs):
            # Bounds: it needed more than `timeout` seconds.
            rows.append((tool.label, f"timeout (>{timeout:.0f})", f"<{tool.files / timeout:,.1f}",
                         f"<{tool.lines / timeout:,.0f}", fmt(rss, ",.0f"), "-",
                         f">{timeout / base:.2f}" if base else "-", "-", tool.files, statuses, notes))
            continue
        if wall is None:
            wall_cell = "failed"
        else:
            walls = [r["wall"] for r in done]
            spread = f" ({min(walls):.2f}-{max(walls):.2f})" if len(walls) > 1 else ""
            wall_cell = f"{wall:.2f}{spread}"
        rows.append((tool.label, wall_cell, fmt(tool.files / wall if wall else None, ",.1f"),
                     fmt(tool.lines / wall if wall else None, ",.0f"), fmt(rss, ",.0f"), fmt(cpu, ".2f"),
                     fmt(wall / base if wall and base else None, ".2f"),
                     fmt(cpu / base_cpu if cpu is not None and base_cpu else None, ".2f"), tool.files, statuses, notes))
    return rows


def markdown(headers: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, help="the package to measure (default: vLLM's from --corpus-dir)")
    parser.add_argument("--corpus-dir", type=Path, default=PEERS_HOME / "corpus",
                        help="where vLLM's wheel is downloaded and extracted (default: %(default)s)")
    parser.add_argument("--version", default=DENSITY_VERSION, help="the vLLM release (default: %(default)s)")
    parser.add_argument("--peers-venv", type=Path, default=PEERS_HOME / "venv",
                        help="the peers' virtual environment, created if missing (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that has synclint; it also runs the parse-only rows (default: this one)")
    parser.add_argument("--baseline-python", help="also measure the synclint of this interpreter (cold, warm, "
                        "per-file cache), side by side: an earlier commit's install")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes or threads for every tool that takes a number (default: %(default)s, the CPUs)")
    parser.add_argument("--runs", type=int, default=3, help="measured runs per tool; the median counts (default: 3)")
    parser.add_argument("--skip", default="", help=f"comma-separated rows to leave out: {','.join(SKIPPABLE)}")
    parser.add_argument("--limit", type=int, help="measure only the first N files (sorted), copied to a temporary tree")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per tool run (default: %(default)s)")
    parser.add_argument("--one-file", default=ONE_FILE,
                        help="the one-file row's file, under the tree (default: %(default)s)")
    parser.add_argument("--json-out", type=Path, help="write every measurement here")
    args = parser.parse_args(argv)

    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if skip - set(SKIPPABLE):
        parser.error(f"--skip takes {','.join(SKIPPABLE)}; not {','.join(sorted(skip - set(SKIPPABLE)))}")
    venv_needed = not {"torchfix", "fixit", "ruff"} <= skip or args.tree is None
    peers_python = ensure_peers(args.peers_venv, sys.executable) if venv_needed else None
    if args.tree is not None:
        full_tree = args.tree.resolve()
    else:
        assert peers_python is not None
        full_tree = ensure_corpus(args.corpus_dir, args.version, peers_python)
    if not full_tree.is_dir():
        parser.error(f"no such folder: {full_tree}")
    one_file = full_tree / args.one_file
    if not one_file.is_file():
        parser.error(f"no such file: {one_file} (--one-file)")

    flags = synclint_flags(args.python)
    no_cache = ["--no-cache"] if "--no-cache" in flags else []
    bin_dir = args.peers_venv / "bin"
    with tempfile.TemporaryDirectory(prefix="synclint-peers-") as tmp_name:
        tmp = Path(tmp_name)
        tree = subset(full_tree, args.limit, tmp / "subset") if args.limit else full_tree
        if not (tree / args.one_file).is_file():  # the one-file row checks a file of the measured tree
            (tree / args.one_file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(one_file, tree / args.one_file)
        files = list(iter_py_files(tree))
        n_files, n_lines = len(files), sum(count_lines(p) for p in files)
        one_lines = count_lines(one_file)
        scratch = tmp / "out"
        scratch.mkdir()
        cache_dir = tmp / "synclint-cache"
        entries_cache_dir = tmp / "synclint-cache-entries"
        cwd, name = tree.parent, tree.name
        fresh = tmp / "fresh"  # a copy of the tree that no run with a cache has seen
        if "onefile-fresh" not in skip:
            shutil.copytree(tree, fresh / name)
        synclint = [args.python, "-m", "synclint", "check", "--exit-zero"]
        jobs = ["--jobs", str(args.jobs)]

        def tool(key: str, label: str, cmd: list[str], check, **kw) -> Tool:
            return Tool(key, label, cmd, kw.pop("cwd", cwd), check, kw.pop("files", n_files),
                        kw.pop("lines", n_lines), **kw)

        def parse_tool(key: str, label: str, parser: str, processes: int) -> Tool:
            cmd = [args.python, "-c", PARSE.replace("PARSER", parser), name, str(processes)]
            shown = shlex.join([args.python, "-c", f"<bench/peers.py's PARSE with {parser.split()[-1]}>", name,
                                str(processes)])
            return tool(key, label, cmd, check_parse(n_files), shown=shown)

        def synclint_runs(prefix: str, label: str, command: list[str], cache: Path, entries: Path,
                          cold_flags: list[str]) -> list[Tool]:
            return [
                tool(f"{prefix}cold", f"{label} cold", command + cold_flags + ["--output-format", "concise"] + jobs
                     + [name], check_synclint),
                tool(f"{prefix}warm", f"{label} warm", command + ["--cache-dir", str(cache), "--output-format",
                     "concise"] + jobs + [name], check_synclint),
                # The warm command with its replay record gone (CI restoring the cache on a new
                # checkout, or any other command line): each file's result from the cache.
                tool(f"{prefix}warm-entries", f"{label} warm, per-file cache", command + ["--cache-dir", str(entries),
                     "--output-format", "concise"] + jobs + [name], check_synclint, forget_replays_in=entries),
            ]

        def fresh_run(key: str, label: str, command: list[str], cold_flags: list[str]) -> Tool:
            # The first pre-commit run after installing the hook: one file, nothing kept of its package.
            return tool(key, f"{label} one file, fresh copy, no cache", command + cold_flags + [
                        "--output-format", "concise", f"{name}/{args.one_file}"], check_synclint, cwd=fresh, files=1,
                        lines=one_lines, skipped="" if cold_flags else "this synclint has no --no-cache")

        baseline = []
        if args.baseline_python and "baseline" not in skip:
            base_flags = synclint_flags(args.baseline_python)
            base_command = [args.baseline_python, "-m", "synclint", "check", "--exit-zero"]
            base_cold = ["--no-cache"] if "--no-cache" in base_flags else []
            baseline = synclint_runs("baseline-", "baseline synclint", base_command, tmp / "baseline-cache",
                                     tmp / "baseline-cache-entries", base_cold)
            baseline.append(fresh_run("baseline-onefile-fresh", "baseline synclint", base_command, base_cold))
        tools = [
            *synclint_runs("", "synclint", synclint, cache_dir, entries_cache_dir, no_cache),
            *baseline,
            # As pre-commit runs it: one file of the tree, its package's index in the warm cache.
            tool("onefile", "synclint one file", synclint + ["--cache-dir", str(cache_dir), "--output-format", "concise",
                 f"{name}/{args.one_file}"], check_synclint, files=1, lines=one_lines),
            tool("onefile-edited", "synclint one file edited", synclint + ["--cache-dir", str(cache_dir),
                 "--output-format", "concise", f"{name}/{args.one_file}"], check_synclint, files=1, lines=one_lines,
                 edits=tree / args.one_file),
            fresh_run("onefile-fresh", "synclint", synclint, no_cache),
            tool("torchfix", "TorchFix", [str(bin_dir / "torchfix"), "-j", str(args.jobs), name], check_torchfix),
            tool("fixit", "Fixit", [str(bin_dir / "fixit"), "lint", name], check_fixit),
            parse_tool("libcst-jobs", f"libcst parse x{args.jobs}", LIBCST_PARSER, args.jobs),
            parse_tool("libcst-1", "libcst parse x1", LIBCST_PARSER, 1),
            parse_tool("ast", "ast.parse x1", AST_PARSER, 1),
            tool("ruff", "ruff", [str(bin_dir / "ruff"), "check", "--isolated", "--no-cache", "--exit-zero",
                                  "--target-version", "py312", "--output-format", "concise", name], check_ruff,
                 env={"RAYON_NUM_THREADS": str(args.jobs)}),
        ]
        for t in tools:
            if t.key in skip or (t.key == "baseline-onefile-fresh" and "onefile-fresh" in skip):
                t.skipped = "--skip"
        warm = next(t for t in tools if t.key == "warm")
        if not warm.skipped and "--cache-dir" not in flags:
            warm.skipped = "this synclint has no --cache-dir"
        entries = next(t for t in tools if t.key == "warm-entries")
        entries.skipped = entries.skipped or (warm.skipped and "needs the warm row's cache")
        if baseline:
            if "--cache-dir" not in synclint_flags(args.baseline_python):
                baseline[1].skipped = baseline[2].skipped = "this synclint has no --cache-dir"
            compile_bytecode(args.baseline_python)

        compile_bytecode(args.python)
        info = versions(args.python, ("libcst",))
        peer_versions = versions(str(peers_python), ("torchfix", "fixit", "ruff", "libcst")) if peers_python else {}
        fingerprint = source_fingerprint(args.python, cwd)
        print(f"tree: {full_tree}" + (f" (first {args.limit} files, copied to {tree})" if args.limit else ""))
        print(f"{n_files} .py files, {n_lines:,} lines; one file: {args.one_file} ({one_lines:,} lines)")
        print(f"jobs {args.jobs}, runs {args.runs}, timeout {args.timeout:.0f} s, CPUs {os.cpu_count()}, "
              f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"synclint python {info.get('python')}, libcst {info.get('libcst')}, sources {fingerprint}; "
              f"peers: " + ", ".join(f"{k} {v}" for k, v in peer_versions.items()))
        if os.environ.get("PYTHONPATH"):
            print(f"PYTHONPATH={os.environ['PYTHONPATH']} (every command inherits it)")
        print("commands (in the tree's parent folder):")
        for t in tools:
            if not t.skipped:
                env = " ".join(f"{k}={v}" for k, v in t.env.items())
                print(f"  {t.label}: {(env + ' ') if env else ''}{t.shown or shlex.join(t.cmd)}")
        sys.stdout.flush()

        fills = [(warm, entries, next(t for t in tools if t.key == "onefile"))]
        if baseline:
            fills.append((baseline[1], baseline[2], None))
        for warm_row, entries_row, one in fills:
            if warm_row.skipped:
                continue
            fill = measure(warm_row, args.timeout, scratch, 0)
            print(f"filled {warm_row.label}'s cache in {fmt(fill['wall'], '.2f')} s ({fill['note']})", flush=True)
            if one is not None and not one.skipped:
                measure(one, args.timeout, scratch, 0)  # its own record of a run, as after a first commit
            if not entries_row.skipped:
                # Its own copy of the filled cache (hard links: entries are only ever replaced, by
                # rename), whose replay records it removes without touching the other rows'.
                shutil.copytree(warm_row.cmd[warm_row.cmd.index("--cache-dir") + 1],
                                entries_row.forget_replays_in, copy_function=os.link)
        started = time.time()
        for index in range(1, args.runs + 1):
            for t in tools:
                if t.skipped:
                    continue
                result = measure(t, args.timeout, scratch, index)
                t.runs.append(result)
                print(f"  run {index}/{args.runs} {t.label}: {fmt(result['wall'], '.2f')} s, "
                      f"{fmt(result['maxrss_kib'] and result['maxrss_kib'] / 1024, '.0f')} MiB, exit "
                      f"{result['status']}: {result['note']}", file=sys.stderr, flush=True)
        fingerprint_after = source_fingerprint(args.python, cwd)

    base = tools[0].wall()
    headers = ("tool", "wall s", "files/s", "lines/s", "peak RSS MiB", "CPU s", "wall x synclint cold",
               "CPU x synclint cold", "files", "exit", "output")
    print()
    print(markdown(headers, rows_for(tools, base, median_cpu(tools[0]), args.timeout)))
    print()
    print(f"wall s: whole process, interpreter start included, median of {args.runs} runs (min-max); CPU s: median "
          f"user+system time of the process and its children; wall x synclint cold: this row's wall / synclint "
          f"cold's wall (lower is faster); CPU x synclint cold: the same for CPU time (steadier when the machine "
          f"is busy). Peak RSS: the largest single process (main or one worker) over the runs, not the sum over "
          f"the workers. TorchFix parses only files that mention `torch`; Fixit uses one process per CPU whatever "
          f"--jobs says. Measured in {time.time() - started:.0f} s, load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    if fingerprint_after != fingerprint:
        print(f"WARNING: synclint's sources changed during the run ({fingerprint} -> {fingerprint_after})")
    for t in tools:
        for i, r in enumerate(t.runs, 1):
            if not r["ok"]:
                print(f"WARNING: {t.label} run {i}: exit {r['status']}, {r['note']}")
                tail = (r.get("stderr_tail") or r.get("stdout_tail") or r.get("wrapper_error") or "").strip()
                if tail:
                    print("  " + "\n  ".join(tail.splitlines()[-8:]))
    if args.json_out:
        args.json_out.write_text(json.dumps({
            "tree": str(full_tree), "limit": args.limit, "files": n_files, "lines": n_lines, "jobs": args.jobs,
            "runs": args.runs, "timeout": args.timeout, "synclint_python": args.python,
            "synclint_sources": [fingerprint, fingerprint_after], "versions": {"synclint-python": info,
                                                                                "peers": peer_versions},
            "tools": [{"key": t.key, "label": t.label, "cmd": t.cmd, "env": t.env, "files": t.files,
                       "lines": t.lines, "skipped": t.skipped, "median_wall": t.wall(), "runs": t.runs}
                      for t in tools],
        }, indent=1) + "\n")
        print(f"measurements: {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
