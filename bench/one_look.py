#!/usr/bin/env python3
"""Issue 44's table: what a cold run, the first pre-commit run on a fresh clone and an edited file
cost, as ratios to a floor measured in the same run, for this checkout beside a commit you name.

    python bench/one_look.py --tree /work/vllm-src/vllm/0.22.0/vllm --commit 01a26dc
    python bench/one_look.py --tree /work/trees/litgpt/litgpt --then-python /work/venv-base/bin/python --runs 3

Rows, for "now" (--python, default this interpreter) and "then" (--commit REV, installed with pip
into a virtual environment under --work, kept there for the next run; or --then-python, an
interpreter that has the other synclint), measured in rounds that alternate the two:

  parse          libcst.parse_module of every file in --jobs processes (bench/peers.py's PARSE): the floor
  import         `python -c "import libcst, rich.console"`: the floor of a one-file run
  cold           synclint check --no-cache -v --jobs J TREE; `-v`'s last line gives the analyses
  one file, fresh copy   synclint check --no-cache FILE in a copy of the tree no run has seen (the
                 first pre-commit run after installing the hook)
  one file edited        synclint check --cache-dir D FILE after one run over the tree filled D and
                 a comment was appended to FILE (pre-commit after an edit); FILE is restored after each run

The ratios are issue 44's: cold / parse (target <= 2.0), fresh / cold (<= 0.25), edited / import
(<= 1.5); peak memory is the largest single process (<= 500 MB). Medians of --runs. A bench
script: it prints, asserts nothing, and exits 0 (2 when it cannot run).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import REPO, iter_py_files
from peers import LIBCST_PARSER, PARSE, Tool, check_parse, compile_bytecode, measure

ONE_FILE = "model_executor/models/llama.py"
_ANALYSES = re.compile(r"synclint: (\d+) analyses; (\d+) files indexed, (\d+) checked")


def check_verbose(out: str, err: str, status: int) -> tuple[bool, str]:
    """A synclint run with `-v`: its summary line and its count of analyses."""
    found = [line.strip() for line in out.splitlines() if line.startswith(("Found ", "All checks passed"))]
    counted = _ANALYSES.search(err)
    note = (found[-1] if found else "no summary") + (f"; {counted.group(0)}" if counted else "")
    return status == 0 and "Traceback" not in err and bool(found), note


def check_ran(out: str, err: str, status: int) -> tuple[bool, str]:
    return status == 0 and "Traceback" not in err, "ran"


def installed(commit: str, work: Path) -> str:
    """The interpreter of a virtual environment with synclint at `commit` (made once, kept in `work`)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
                         capture_output=True, text=True)
    if sha.returncode != 0:
        sys.exit(f"one_look.py: no commit {commit!r} in {REPO}")
    full = sha.stdout.strip()
    venv = work / f"synclint-{full[:12]}"
    python = venv / "bin" / "python"
    if python.exists():
        return str(python)
    source = work / f"src-{full[:12]}"
    if not source.exists():
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", full], capture_output=True,
                                 check=True).stdout
        source.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], check=True)
    return str(python)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the package to measure")
    parser.add_argument("--one-file", default=ONE_FILE, help="the file of the one-file rows, in the tree "
                        "(default: %(default)s; else the tree's largest file)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter of synclint now")
    then = parser.add_mutually_exclusive_group()
    then.add_argument("--commit", help="measure this commit beside it (installed under --work)")
    then.add_argument("--then-python", help="measure the synclint of this interpreter beside it")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "synclint-one-look",
                        help="where --commit's install is kept (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=1, help="rounds; the median counts (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)

    tree = args.tree.resolve()
    files = list(iter_py_files(tree))
    if not tree.is_dir() or not files:
        parser.error(f"no .py files under {tree}")
    one = args.one_file if (tree / args.one_file).is_file() else (
        max(files, key=lambda p: p.stat().st_size).relative_to(tree).as_posix())
    versions = {"now": args.python}
    if args.commit:
        args.work.mkdir(parents=True, exist_ok=True)
        versions[args.commit] = installed(args.commit, args.work)
    elif args.then_python:
        versions["then"] = args.then_python
    for python in versions.values():
        compile_bytecode(python)

    with tempfile.TemporaryDirectory(prefix="synclint-one-look-") as tmp_name:
        tmp = Path(tmp_name)
        work_tree = tmp / "tree" / tree.name  # edited in place: a copy
        shutil.copytree(tree, work_tree)
        cwd, name = work_tree.parent, tree.name
        scratch = tmp / "out"
        scratch.mkdir()
        parse = Tool("parse", "parse", [args.python, "-c", PARSE.replace("PARSER", LIBCST_PARSER), name,
                                        str(args.jobs)], cwd, check_parse(len(files)), len(files), 0)
        importing = Tool("import", "import", [args.python, "-c", "import libcst, rich.console"], cwd, check_ran, 1, 0)
        rows: dict[str, dict[str, Tool]] = {}
        for label, python in versions.items():
            check = [python, "-m", "synclint", "check", "--exit-zero", "--output-format", "concise"]
            fresh = tmp / f"fresh-{len(rows)}"
            shutil.copytree(tree, fresh / name)
            cache = tmp / f"cache-{len(rows)}"
            rows[label] = {
                "cold": Tool("cold", "cold", [*check, "--no-cache", "-v", "--jobs", str(args.jobs), name], cwd,
                             check_verbose, len(files), 0),
                "fresh": Tool("fresh", "one file, fresh copy", [*check, "--no-cache", "-v", "--jobs", str(args.jobs),
                                                                 f"{name}/{one}"], fresh, check_verbose, 1, 0),
                "edited": Tool("edited", "one file edited", [*check, "--cache-dir", str(cache), f"{name}/{one}"], cwd,
                               check_ran, 1, 0, edits=work_tree / one),
            }
            fill = Tool("fill", "fill", [*check, "--cache-dir", str(cache), "--jobs", str(args.jobs), name], cwd,
                        check_ran, len(files), 0)
            measure(fill, args.timeout, scratch, 0)  # the package's state, as a first run over it leaves it
            measure(rows[label]["edited"], args.timeout, scratch, 0)
        print(f"tree: {tree}, {len(files)} files; one file: {one}; jobs {args.jobs}; runs {args.runs}; "
              f"CPUs {os.cpu_count()}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        for label, python in versions.items():
            print(f"{label}: {python}")
        for index in range(1, args.runs + 1):
            for t in [parse, importing, *(t for by_row in rows.values() for t in by_row.values())]:
                result = measure(t, args.timeout, scratch, index)
                t.runs.append(result)
                print(f"  run {index} {t.label} ({shlex.join(t.cmd[1:4])}...): {result['wall']:.2f} s, "
                      f"{(result['maxrss_kib'] or 0) / 1024:.0f} MiB: {result['note']}", file=sys.stderr, flush=True)

    def wall(t: Tool) -> float:
        return statistics.median(r["wall"] for r in t.runs)

    def peak(t: Tool) -> float:
        return max(r["maxrss_kib"] or 0 for r in t.runs) / 1024

    def analyses(t: Tool) -> str:
        found = _ANALYSES.search(t.runs[-1]["note"])
        return f"{found.group(1)} for {found.group(2)} files" if found else "-"

    floor, start = wall(parse), wall(importing)
    print(f"\nfloors: libcst parse x{args.jobs} {floor:.2f} s; `import libcst, rich.console` {start:.2f} s\n")
    labels = list(rows)
    lines = [("measure", *labels, "target")]
    lines.append(("cold, no cache: s (x parse)", *(f"{wall(r['cold']):.1f} ({wall(r['cold']) / floor:.2f}x)"
                                                  for r in rows.values()), "<= 2.0x"))
    lines.append(("analyses (`-v`)", *(analyses(r["cold"]) for r in rows.values()), "one per file"))
    lines.append(("one file, fresh copy: s (x cold)", *(f"{wall(r['fresh']):.1f} ({wall(r['fresh']) / wall(r['cold']):.2f}x)"
                                                        for r in rows.values()), "<= 0.25x"))
    lines.append(("  its analyses", *(analyses(r["fresh"]) for r in rows.values()), ""))
    lines.append(("one file edited: s (x import)", *(f"{wall(r['edited']):.2f} ({wall(r['edited']) / start:.2f}x)"
                                                     for r in rows.values()), "<= 1.5x"))
    lines.append(("peak memory, MiB (cold)", *(f"{peak(r['cold']):.0f}" for r in rows.values()), "<= 500 MB"))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(lines[0]))]
    for i, line in enumerate(lines):
        print("| " + " | ".join(str(cell).ljust(widths[j]) for j, cell in enumerate(line)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 0


if __name__ == "__main__":
    sys.exit(main())
