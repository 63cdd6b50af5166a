"""Re-filtering a cached analysis: a second run that changes only the view, and `--diff` on a cached tree.

The cache keeps every rule's findings at every confidence and in every context (synclint.view):
a run that changes only `--select`, `--ignore`, `--extend-select`, `--min-confidence`,
`per-file-ignores`, `ignore-contexts` or the test setting should cost a fraction of the first
(the goal: at most a quarter). `--diff` on a cached tree should cost about what `check` does.

The trees are copied into a temporary folder (their packages kept whole above them: a vLLM
subfolder keeps `vllm/__init__.py`), and every run starts there with an empty cache:

    python bench/refilter.py                      # litgpt, accelerate, nanoGPT, vLLM's v1/worker and v1/attention
    python bench/refilter.py --tree /work/trees/litgpt --jobs 2

One table: each command, its wall time, CPU time (synclint and its workers), exit code, and its
wall time over the first run's. Numbers from a shared machine move by a fifth from run to run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import VLLM_SRC, child_cpu_seconds, iter_py_files, table, vllm_tree

TREES = Path(os.environ.get("TREES", "/work/trees"))
DEFAULT_TREES = (TREES / "litgpt", TREES / "accelerate", TREES / "nanoGPT",
                 vllm_tree(src=VLLM_SRC) / "v1" / "worker", vllm_tree(src=VLLM_SRC) / "v1" / "attention")

# Config files beside the trees (settings only `--config` can name from the command line); the
# project root, and so the cache, stays the temporary folder.
CONFIGS = {
    "per-file-ignores.toml": 'per-file-ignores = { "accelerate/src/**" = ["SYNC107"], "vllm/**" = ["SYNC102"] }\n',
    "ignore-contexts.toml": 'ignore-contexts = ["init", "code"]\n',
    "include-tests.toml": "include-tests = true\n",
}

VIEWS = (
    ("--min-confidence", "low"),
    ("--min-confidence", "high"),
    ("--select", "SYNC107"),
    ("--ignore", "SYNC101,SYNC107"),
    ("--select", "SYNC101", "--extend-select", "SYNC110"),
    ("--include-tests",),
    ("--config", "per-file-ignores.toml"),
    ("--config", "ignore-contexts.toml"),
    ("--config", "include-tests.toml"),
)


def copy_tree(source: Path, into: Path) -> Path:
    """Copy `source` under `into`, with the `__init__.py` of the packages above it."""
    top = source
    while (top.parent / "__init__.py").is_file():
        top = top.parent
    relative = source.relative_to(top.parent)  # vllm/v1/worker
    for depth in range(1, len(relative.parts)):
        package = Path(*relative.parts[:depth])  # vllm, then vllm/v1
        (into / package).mkdir(parents=True, exist_ok=True)
        shutil.copy2(top.parent / package / "__init__.py", into / package / "__init__.py")
    shutil.copytree(source, into / relative, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    return into / relative


def drop_replays(root: Path) -> None:
    """Forget the recorded runs (synclint.cache.replay), keeping every file's cached result."""
    for folder in root.glob(".synclint_cache/v*/replay"):
        shutil.rmtree(folder)


def run(python: str, root: Path, jobs: int, args: tuple[str, ...]) -> tuple[float, float, int, str]:
    cpu = child_cpu_seconds()
    start = time.perf_counter()
    proc = subprocess.run([python, "-m", "synclint", "check", "-j", str(jobs), *args, "."], cwd=root,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "CI": "1"}, check=False)
    wall = time.perf_counter() - start
    problem = ""
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        problem = (proc.stderr.strip().splitlines() or ["?"])[-1][:60]  # (an older synclint lacks an option)
    return wall, child_cpu_seconds() - cpu, proc.returncode, problem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, action="append", help="a tree to copy and check (repeat; default: "
                        + ", ".join(str(t) for t in DEFAULT_TREES) + ")")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has synclint")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    trees = args.tree or list(DEFAULT_TREES)
    with tempfile.TemporaryDirectory(prefix="synclint-refilter-") as tmp:
        root = Path(tmp)
        for tree in trees:
            copy_tree(tree.resolve(), root)
        for name, text in CONFIGS.items():
            (root / name).write_text(text)
        # As in real use, the trees were not written just now: a run records its output for a replay
        # only when no input changed in the two seconds before it started (synclint.cache.replay).
        time.sleep(2.1)
        files = sum(1 for _ in iter_py_files(root))
        lines = sum(len(path.read_bytes().splitlines()) for path in iter_py_files(root))
        rows = []

        def measure(label: str, command: tuple[str, ...], first: float | None = None) -> float:
            wall, cpu, code, problem = run(args.python, root, args.jobs, command)
            rows.append((label, f"synclint check {' '.join(command)} .".replace("  ", " "), f"{wall:.2f}",
                         f"{cpu:.2f}", f"{code} {problem}".strip(), f"{wall / first:.3f}" if first else "1.000"))
            return wall

        first = measure("first run (empty cache)", ())
        measure("the same command again", (), first)
        measure("and again (replayed, if the last run kept a record)", (), first)
        drop_replays(root)
        measure("the same command, replay records removed (per-file cache)", (), first)
        for view in VIEWS:
            measure("second run, another view (a new command line)", view, first)
        measure("--diff after those checks", ("--diff",), first)
        measure("--diff again", ("--diff",), first)
        drop_replays(root)
        measure("--diff again, replay records removed (cached fixes)", ("--diff",), first)
        drop_replays(root)
        measure("check, replay records removed (to compare)", (), first)
        print(f"{files} files, {lines:,} lines ({', '.join(str(t) for t in trees)}); --jobs {args.jobs}; "
              f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}")
        print(table(["run", "command", "wall s", "CPU s", "exit", "wall / first"], rows, left=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
