#!/usr/bin/env python3
"""Fix a copy of a real tree and prove nothing broke: every changed file compiles, a second run is a no-op.

    python bench/fix_tree.py /work/vllm-src/vllm/0.19.0/vllm [--unsafe] [--config FILE]

Copies TREE to a temporary folder, runs `synclint check --fix` there (with `--unsafe-fixes`
when asked), then compiles every file whose bytes changed, runs the fix a second time and
counts the files it changed again (must be 0). Prints fixes per rule, changed files, compile
failures and wall times. The original tree is never touched.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.py") if p.is_file()}


def run_fix(python: str, tree: Path, unsafe: bool, config: str | None) -> tuple[float, str, int]:
    cmd = [python, "-m", "synclint", "check", "--fix", "--exit-zero", "--output-format", "concise", "."]
    if unsafe:
        cmd.append("--unsafe-fixes")
    if config:
        cmd += ["--config", config]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    return time.perf_counter() - start, proc.stderr, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--unsafe", action="store_true", help="apply unsafe fixes too")
    parser.add_argument("--config", help="a synclint configuration file to use")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has synclint")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="synclint-fix-") as tmp:
        copy = Path(tmp) / args.tree.name
        shutil.copytree(args.tree, copy, symlinks=True)
        before = snapshot(copy)
        wall1, log1, rc1 = run_fix(args.python, copy, args.unsafe, args.config)
        after = snapshot(copy)
        changed = sorted(name for name in after if before.get(name) != after[name])
        broken = []
        for name in changed:
            try:
                compile(after[name], name, "exec", dont_inherit=True)
            except SyntaxError as exc:
                broken.append(f"{name}: {exc}")
        wall2, log2, rc2 = run_fix(args.python, copy, args.unsafe, args.config)
        again = sorted(name for name, data in snapshot(copy).items() if after.get(name) != data)

    match = re.search(r"Fixed (\d+) findings?(?: \(([^)]*)\))?", log1)
    total = int(match.group(1)) if match else 0
    per_rule = dict(item.split(": ") for item in match.group(2).split(", ")) if match and match.group(2) else {}
    print(f"tree: {args.tree}  ({len(before)} files)  unsafe fixes: {'yes' if args.unsafe else 'no'}")
    print(f"{'rule':10s} {'fixes':>6s}")
    for code, count in sorted(per_rule.items()):
        print(f"{code:10s} {int(count):6d}")
    print(f"{'TOTAL':10s} {total:6d}")
    print(f"files changed: {len(changed)}; not compiling: {len(broken)}; changed again by a second run: {len(again)}")
    print(f"wall: first run {wall1:.1f} s (exit {rc1}), second run {wall2:.1f} s (exit {rc2})")
    for line in broken + [f"changed again: {name}" for name in again]:
        print("  " + line)
    errors = [line for line in (log1 + log2).splitlines() if "Traceback" in line or "internal error" in line]
    for line in errors[:20]:
        print("  " + line)
    return 1 if broken or again or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
