#!/usr/bin/env python3
"""synclint over whole real projects: does it finish, crash, or break code it fixes?

What it measures, per tree (vLLM 0.33.0, the newest SGLang and Transformers, torch 2.13.0's own
Python sources): the wall time of one check; findings (at synclint's default confidence); files
synclint could not parse (SYNC000) or crashed on (SYNC001); Python tracebacks on stderr (an
uncaught crash: without --debug synclint prints none of its own); then, on a temporary copy, the
wall time of `--fix --unsafe-fixes`, the fixes applied, the files changed, the changed files
that no longer compile (compile(..., dont_inherit=True)) and the files a second `--fix` changes
again (must be 0), as `fix_tree.py` does. The fix runs' own errors (internal errors, fixes that
raised, fixes dropped because their result would not parse) are counted apart.

The trees are the projects' wheels, downloaded with pip (--no-deps) into DIR/.wheels; only the
.py files of the top-level package are extracted, to DIR/<tree>/<version>/<tree>/. A release
already extracted is skipped (a tree with no pinned version asks pip for the newest first).
Third-party code never enters the repository.

Each check runs, in the tree's parent folder (so that file names come out as `vllm/...`):

    PYTHON -m synclint check --exit-zero --output-format json [--jobs J] vllm

and each file with an internal error is checked once more with --debug, for its traceback.

Usage:
    python bench/real_trees.py                                  # all four trees, under /work/trees
    python bench/real_trees.py --trees vllm,sglang==0.5.0 --jobs 2 --json-out /tmp/real.json

Prints one markdown table; exits 1 when any tree crashed (traceback, internal error, fix that
raised), a fix did not compile or a second fix changed something, 2 when a tree could not be had.
Stdlib only; synclint runs as a subprocess (--python). The wall times depend on what else the
machine runs.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchlib import PROBLEM_CODES, count_lines, iter_py_files, source_fingerprint
from density import error_blocks
from fix_tree import fix_copy

DEFAULT_DIR = Path("/work/trees")
# The binary vLLM wheel is the one published; these tags pick it whatever this machine is.
VLLM_PIP = ("--only-binary", ":all:", "--python-version", "3.12",
            "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_31_x86_64")


@dataclass(frozen=True)
class Project:
    name: str  # the distribution and its top-level package, and the tree's name
    version: str | None  # None: the newest pip finds
    pip_args: tuple[str, ...] = ()


PROJECTS = {
    "vllm": Project("vllm", "0.33.0", VLLM_PIP),
    "sglang": Project("sglang", None),
    "transformers": Project("transformers", None),
    # A local build such as 2.13.0+cpu matches ==2.13.0 (PEP 440).
    "torch": Project("torch", "2.13.0"),
}


@dataclass
class TreeResult:
    tree: str
    version: str = "?"
    path: str = ""
    fetch_note: str = ""  # how the tree was had, or why not
    files: int = 0
    lines: int = 0
    check_wall: float = 0.0
    check_exit: int | None = None
    findings: int = 0
    parse_errors: list[str] = field(default_factory=list)  # "file:row: message" (SYNC000)
    internal_errors: list[str] = field(default_factory=list)  # "file:row: message" (SYNC001)
    internal_tracebacks: list[str] = field(default_factory=list)  # from the --debug rerun
    tracebacks: list[str] = field(default_factory=list)  # stderr excerpts around "Traceback", every run
    fix_wall: float = 0.0
    fix_exits: tuple[int, int] | None = None
    fixes: int = 0
    fixes_per_rule: dict[str, int] = field(default_factory=dict)
    changed: int = 0
    broken: list[str] = field(default_factory=list)
    again: list[str] = field(default_factory=list)
    fix_errors: list[str] = field(default_factory=list)  # internal errors and fixes that raised, either run
    fixes_dropped: list[str] = field(default_factory=list)  # "... dropped: the result would not parse"

    @property
    def failed(self) -> bool:
        return bool(self.tracebacks or self.internal_errors or self.broken or self.again or self.fix_errors)


# --- getting the trees -------------------------------------------------------------------------

def parse_trees(text: str) -> list[Project]:
    projects = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, version = item.partition("==")
        if name not in PROJECTS:
            raise SystemExit(f"real_trees.py: unknown tree {name!r} (known: {', '.join(PROJECTS)})")
        base = PROJECTS[name]
        projects.append(Project(name, version or base.version, base.pip_args))
    return projects


def extracted(root: Path, project: Project, version: str) -> Path | None:
    """The extracted package of `version` (or of a local build of it, 2.13.0+cpu for 2.13.0)."""
    base = root / project.name
    for folder in [base / version, *sorted(base.glob(f"{glob_escape(version)}+*"))]:
        if (folder / project.name).is_dir():
            return folder / project.name
    return None


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def pip_download(project: Project, root: Path) -> tuple[Path | None, str]:
    """(the wheel pip saved or found in DIR/.wheels, pip's output)."""
    wheels = root / ".wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    spec = f"{project.name}=={project.version}" if project.version else project.name
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off", *project.pip_args,
           spec, "-d", str(wheels)]
    print(f"  $ {shlex.join(cmd)}", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    for line in reversed(log.splitlines()):
        match = re.match(r"\s*(?:Saved|File was already downloaded)\s+(\S+\.whl)\s*$", line)
        if match:
            path = Path(match.group(1))
            return (path if path.is_absolute() else wheels / path.name), log
    return None, log


def wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def extract(wheel: Path, project: Project, target: Path) -> int:
    """Only the .py files of the top-level package, into target/<name>/ (whole or not at all)."""
    prefix = project.name + "/"
    with tempfile.TemporaryDirectory(prefix=".extract-", dir=target) as tmp, zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".py")]
        zf.extractall(tmp, names)
        Path(tmp, project.name).rename(target / project.name)
    return len(names)


def fetch(project: Project, root: Path, keep_wheels: bool) -> tuple[Path | None, str, str]:
    """(the extracted package, its version, a note); the package is None when it could not be had."""
    if project.version:
        have = extracted(root, project, project.version)
        if have:
            return have, have.parent.name, "already extracted"
    wheel, log = pip_download(project, root)
    if wheel is None or not wheel.is_file():
        if not project.version:  # offline: the newest release already here
            versions = sorted((p.parent for p in (root / project.name).glob(f"*/{project.name}")),
                              key=lambda p: [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.+]", p.name)])
            if versions:
                return versions[-1] / project.name, versions[-1].name, "pip failed; newest release already here"
        return None, project.version or "?", "pip download failed:\n" + log[-3000:]
    version = wheel_version(wheel)
    have = extracted(root, project, version)
    if have:
        return have, version, "already extracted"
    target = root / project.name / version
    target.mkdir(parents=True, exist_ok=True)
    count = extract(wheel, project, target)
    if not keep_wheels:
        wheel.unlink()
    return target / project.name, version, f"downloaded {wheel.name}, extracted {count} .py files"


# --- measuring ----------------------------------------------------------------------------------

def traceback_excerpts(stderr: str, label: str) -> list[str]:
    """Each "Traceback" on stderr with the lines after it, up to the exception line."""
    lines = stderr.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "Traceback" in line:
            end = i + 1
            while end < len(lines) and (lines[end].startswith(" ") or lines[end] == ""):
                end += 1
            out.append(f"[{label}]\n" + "\n".join(lines[i:end + 1]))
    return out


def problem_line(f: dict) -> str:
    return f"{f['filename']}:{f['location']['row']}: {f['message']}"


def check(result: TreeResult, tree: Path, python: str, jobs: list[str]) -> None:
    cmd = [python, "-m", "synclint", "check", "--exit-zero", "--output-format", "json", *jobs, tree.name]
    print(f"  $ (cd {tree.parent} && {shlex.join(cmd)})", file=sys.stderr, flush=True)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree.parent, capture_output=True, text=True)
    result.check_wall = time.perf_counter() - start
    result.check_exit = proc.returncode
    result.tracebacks += traceback_excerpts(proc.stderr, "check")
    try:
        findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    except json.JSONDecodeError as exc:
        result.tracebacks.append(f"[check] no JSON on stdout ({exc}); stderr ends:\n{proc.stderr[-3000:]}")
        return
    result.findings = sum(1 for f in findings if f["code"] not in PROBLEM_CODES)
    result.parse_errors = [problem_line(f) for f in findings if f["code"] == "SYNC000"]
    internal = [f for f in findings if f["code"] == "SYNC001"]
    result.internal_errors = [problem_line(f) for f in internal]
    files = sorted({f["filename"] for f in internal})
    if files:  # once more with --debug, for the tracebacks (synclint prints them as errors)
        debug = [python, "-m", "synclint", "check", "--exit-zero", "--output-format", "concise", "--debug", *files]
        proc = subprocess.run(debug, cwd=tree.parent, capture_output=True, text=True)
        result.internal_tracebacks = error_blocks(proc.stderr)


def fix(result: TreeResult, tree: Path, python: str, jobs: list[str]) -> None:
    print(f"  fixing a copy of {tree} twice (--fix --unsafe-fixes)", file=sys.stderr, flush=True)
    out = fix_copy(tree, python, unsafe=True, extra=jobs)
    result.fix_wall, result.fix_exits = out.wall1, (out.rc1, out.rc2)
    result.fixes, result.fixes_per_rule = out.total, out.per_rule
    result.changed, result.broken, result.again = len(out.changed), out.broken, out.again
    for label, log in (("fix 1", out.log1), ("fix 2", out.log2)):
        result.tracebacks += traceback_excerpts(log, label)
        for line in log.splitlines():
            if "dropped: the result would not parse" in line:
                result.fixes_dropped.append(f"[{label}] {line}")
            elif line.startswith("synclint: error:") or "fixing failed" in line:
                result.fix_errors.append(f"[{label}] {line}")


def measure(project: Project, root: Path, python: str, jobs: list[str], keep_wheels: bool, do_fix: bool) -> TreeResult:
    result = TreeResult(project.name, project.version or "newest")
    print(f"{project.name}:", file=sys.stderr, flush=True)
    tree, version, note = fetch(project, root, keep_wheels)
    result.version, result.fetch_note = version, note
    print(f"  {note}", file=sys.stderr, flush=True)
    if tree is None:
        return result
    result.path = str(tree)
    paths = list(iter_py_files(tree))
    result.files, result.lines = len(paths), sum(count_lines(p) for p in paths)
    check(result, tree, python, jobs)
    if do_fix:
        fix(result, tree, python, jobs)
    print("  " + ", ".join(f"{h}: {c}" for h, c in zip(HEADERS[2:], row(result)[2:])), file=sys.stderr, flush=True)
    return result


# --- reporting ----------------------------------------------------------------------------------

HEADERS = ("tree", "version", "files", "lines", "check wall s", "findings", "parse errors (SYNC000)",
           "internal errors (SYNC001)", "tracebacks", "fix wall s", "fixes applied", "files changed",
           "non-compiling", "changed on 2nd run", "fix errors", "fixes dropped")


def row(r: TreeResult) -> list[object]:
    if not r.path:
        return [r.tree, r.version, "not had", *[""] * (len(HEADERS) - 3)]
    fixed = r.fix_exits is not None
    return [r.tree, r.version, r.files, r.lines, f"{r.check_wall:.1f}", r.findings, len(r.parse_errors),
            len(r.internal_errors), len(r.tracebacks),
            *((f"{r.fix_wall:.1f}", r.fixes, r.changed, len(r.broken), len(r.again), len(r.fix_errors),
               len(r.fixes_dropped)) if fixed else ["-"] * 7)]


def markdown_table(headers: tuple[str, ...], rows: list[list[object]], left: int = 2) -> str:
    def line(cells: list[object]) -> str:
        return "| " + " | ".join(str(c) for c in cells) + " |"

    return "\n".join([line(list(headers)), "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|",
                      *(line(r) for r in rows)])


def details(r: TreeResult, limit: int) -> list[str]:
    out = []
    sections = (("parse errors (SYNC000)", r.parse_errors), ("internal errors (SYNC001)", r.internal_errors),
                ("internal error tracebacks (--debug)", r.internal_tracebacks), ("tracebacks", r.tracebacks),
                ("changed files that do not compile", r.broken), ("changed again by the 2nd fix", r.again),
                ("fix errors", r.fix_errors), ("fixes dropped", r.fixes_dropped))
    for title, items in sections:
        if items:
            out.append(f"{r.tree} {r.version}: {title}: {len(items)}")
            out += ["  " + item.replace("\n", "\n  ") for item in items[:limit]]
            if len(items) > limit:
                out.append(f"  ... {len(items) - limit} more (--json-out has them all)")
    if not r.path:
        out.append(f"{r.tree}: {r.fetch_note}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", default=",".join(PROJECTS),
                        help="comma-separated, each NAME or NAME==VERSION (default: %(default)s)")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the wheels and trees live (default: %(default)s)")
    parser.add_argument("--python", default=sys.executable, help="the Python that has synclint (default: this one)")
    parser.add_argument("--jobs", type=int, help="synclint worker processes (default: synclint's, the CPU count)")
    parser.add_argument("--no-fix", action="store_true", help="only check; skip the two fix runs")
    parser.add_argument("--drop-wheels", action="store_true", help="delete each wheel once extracted")
    parser.add_argument("--json-out", type=Path, help="write every tree's details here (all errors, tracebacks)")
    parser.add_argument("--show", type=int, default=5, help="how many of each kind of problem to print per tree")
    args = parser.parse_args(argv)

    projects = parse_trees(args.trees)
    root = args.dir.resolve()
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    fingerprint = source_fingerprint(args.python, root if root.is_dir() else None)
    results = [measure(p, root, args.python, jobs, not args.drop_wheels, not args.no_fix) for p in projects]
    fingerprint_after = source_fingerprint(args.python, root)

    print(f"synclint sources {fingerprint}" + ("" if fingerprint_after == fingerprint else
          f" -> {fingerprint_after}: WARNING, synclint or its rules changed during the run"))
    print(f"python: {args.python}; trees under {root}; findings at synclint's default confidence (>= medium)")
    print()
    print(markdown_table(HEADERS, [row(r) for r in results]))
    lines = [line for r in results for line in details(r, args.show)]
    if lines:
        print()
        print("\n".join(lines))
    if args.json_out:
        data = {"fingerprint": [fingerprint, fingerprint_after], "python": args.python,
                "trees": [asdict(r) | {"failed": r.failed} for r in results]}
        args.json_out.write_text(json.dumps(data, indent=1) + "\n")
        print(f"details: {args.json_out}")
    if any(not r.path for r in results):
        return 2
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
