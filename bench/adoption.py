"""Adopting synclint on a formatted package: does what it writes survive the project's formatter,
and does `--fix` tell the truth? (issue 45's targets). Prints one table row per package.

    python bench/adoption.py --tree /tmp/pkgs/litgpt --src litgpt [--formatter ruff] [--unsafe-fixes]

On a fresh copy of TREE (nothing in it is changed), for the files under SRC:
- noqa: `check --add-noqa`, then black, then `ruff format`, then `check`: its exit code and findings;
- fix: `check --fix`, then the formatter (`ruff format` or black, with the project's own
  configuration, run from the copy's root) over the files --fix touched: how many it would
  reformat, and of those, how many it already reformatted before the fix (formatter drift);
- report: the findings `--fix` printed, against those the next `check` prints (equal or not).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PYTHON = sys.executable


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env={"NO_COLOR": "1", "COLUMNS": "200",
                                                                               "PATH": "/usr/bin:/bin"})


def synclint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run([PYTHON, "-m", "synclint", "check", "--output-format", "concise", "--no-cache", *args], cwd)


def findings(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stdout.splitlines() if ": SYNC" in line]


def formatter(tool: str, cwd: Path, files: list[str], check: bool) -> subprocess.CompletedProcess:
    if tool == "black":
        return run([PYTHON, "-m", "black", "-q", *(["--check"] if check else []), *files], cwd)
    return run([PYTHON, "-m", "ruff", "format", "--no-cache", *(["--check"] if check else []), *files], cwd)


def unformatted(tool: str, cwd: Path, files: list[str]) -> set[str]:
    """The files the formatter would change (its `--check` of each file alone: exit 1)."""
    return {name for name in files if formatter(tool, cwd, [name], check=True).returncode == 1}


def touched(proc: subprocess.CompletedProcess, copy: Path, original: Path, src: str) -> list[str]:
    changed = []
    for path in sorted((copy / src).rglob("*.py")):
        rel = path.relative_to(copy)
        if (original / rel).read_bytes() != path.read_bytes():
            changed.append(str(rel))
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--src", required=True, help="the package's folder under TREE")
    parser.add_argument("--formatter", choices=("ruff", "black"), default="ruff", help="the project's formatter")
    parser.add_argument("--unsafe-fixes", action="store_true")
    args = parser.parse_args()
    tree = args.tree.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        before = findings(synclint(copy, args.src))
        noqa = run([PYTHON, "-m", "synclint", "check", "--add-noqa", "--no-cache", "-q", args.src], copy)
        formatter("black", copy, [args.src], check=False)
        formatter("ruff", copy, [args.src], check=False)
        after_noqa = synclint(copy, args.src)
        shutil.rmtree(copy)
        shutil.copytree(tree, copy, symlinks=True)
        fix = synclint(copy, "--fix", *(["--unsafe-fixes"] if args.unsafe_fixes else []), args.src)
        files = touched(fix, copy, tree, args.src)
        drift = unformatted(args.formatter, tree, files) if files else set()
        reformat = unformatted(args.formatter, copy, files) if files else set()
        again = synclint(copy, *(["--unsafe-fixes"] if args.unsafe_fixes else []), args.src)
        fixed_line = next((line for line in fix.stderr.splitlines() if line.startswith("Fixed")), "")
        same = findings(fix) == findings(again)
        summary_fix = [line for line in fix.stdout.splitlines() if line.startswith(("Found", "All checks", "["))]
        summary_again = [line for line in again.stdout.splitlines() if line.startswith(("Found", "All checks", "["))]
        diffs = {name: run([PYTHON, "-m", "ruff", "format", "--no-cache", "--diff", name], copy).stdout
                 if args.formatter == "ruff" else run([PYTHON, "-m", "black", "-q", "--diff", name], copy).stdout
                 for name in sorted(reformat - drift)}
    print("| package | findings | --add-noqa | then black, ruff format, check | --fix | files touched "
          "| formatter would reformat (of them, before the fix too) | report after --fix == next check |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {tree.name} ({args.src}) | {len(before)} | {noqa.stderr.strip().splitlines()[0] if noqa.stderr else ''} "
          f"| exit {after_noqa.returncode}, {len(findings(after_noqa))} findings | {fixed_line} | {len(files)} "
          f"| {len(reformat)} ({len(reformat & drift)}) | {'yes' if same and summary_fix == summary_again else 'NO'} |")
    for name, diff in diffs.items():
        print(f"  reformatted after the fix: {name}\n{diff[-3000:]}")
    if not same or summary_fix != summary_again:
        fix_set, again_set = set(findings(fix)), set(findings(again))
        for line in sorted(fix_set - again_set):
            print(f"  only in --fix's report: {line}")
        for line in sorted(again_set - fix_set):
            print(f"  only in the next check: {line}")
        print(f"  --fix's summary: {summary_fix}\n  the next check's: {summary_again}")
    for line in findings(after_noqa):
        print(f"  left after --add-noqa and the formatters: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
