#!/usr/bin/env python3
"""Fix a copy of a real tree and prove nothing broke: every changed file compiles, a second run is a no-op.

    python bench/fix_tree.py /work/vllm-src/vllm/0.19.0/vllm [--unsafe] [--config FILE]

Copies TREE to a temporary folder, runs `synclint check --fix` there (with `--unsafe-fixes`
when asked), then compiles every file whose bytes changed, runs the fix a second time and
counts the files it changed again (must be 0). Prints fixes per rule, changed files, compile
failures and wall times. The original tree is never touched. `real_trees.py` imports
`fix_copy` from here (a sibling module).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.py") if p.is_file()}


def run_fix(python: str, tree: Path, unsafe: bool, config: str | None, extra: Sequence[str] = ()) -> tuple[float, str, int]:
    # Run in the tree's parent: `python -m` puts its working directory first on sys.path, and a
    # tree such as torch/ holds signal/ and random.py, which would shadow the stdlib's.
    cmd = [python, "-m", "synclint", "check", "--fix", "--exit-zero", "--output-format", "concise", *extra, tree.name]
    if unsafe:
        cmd.append("--unsafe-fixes")
    if config:
        cmd += ["--config", config]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree.parent, capture_output=True, text=True)
    return time.perf_counter() - start, proc.stderr, proc.returncode


@dataclass
class FixOutcome:
    """What two `--fix` runs did to a copy of a tree."""

    files: int  # .py files in the copy
    changed: list[str]  # files whose bytes the first run changed
    broken: list[str]  # "NAME: error" for each changed file that no longer compiles
    again: list[str]  # files the second run changed again
    wall1: float
    wall2: float
    rc1: int
    rc2: int
    log1: str  # stderr of each run
    log2: str
    total: int = 0  # fixes the first run applied
    per_rule: dict[str, int] = field(default_factory=dict)

    @property
    def errors(self) -> list[str]:
        """The stderr lines of either run that show a crash or an internal error."""
        return [line for line in (self.log1 + self.log2).splitlines() if "Traceback" in line or "internal error" in line]


def fix_copy(tree: Path, python: str, unsafe: bool, config: str | None = None, extra: Sequence[str] = ()) -> FixOutcome:
    """Fix a temporary copy of `tree` twice (`extra`: more synclint options) and compare the bytes."""
    with tempfile.TemporaryDirectory(prefix="synclint-fix-") as tmp:
        copy = Path(tmp) / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        before = snapshot(copy)
        wall1, log1, rc1 = run_fix(python, copy, unsafe, config, extra)
        after = snapshot(copy)
        changed = sorted(name for name in after if before.get(name) != after[name])
        broken = []
        for name in changed:
            try:
                compile(after[name], name, "exec", dont_inherit=True)
            except SyntaxError as exc:
                broken.append(f"{name}: {exc}")
        wall2, log2, rc2 = run_fix(python, copy, unsafe, config, extra)
        again = sorted(name for name, data in snapshot(copy).items() if after.get(name) != data)

    outcome = FixOutcome(len(before), changed, broken, again, wall1, wall2, rc1, rc2, log1, log2)
    match = re.search(r"Fixed (\d+) findings?(?: \(([^)]*)\))?", log1)
    outcome.total = int(match.group(1)) if match else 0
    if match and match.group(2):
        outcome.per_rule = {code: int(n) for code, n in (item.split(": ") for item in match.group(2).split(", "))}
    return outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", type=Path)
    parser.add_argument("--unsafe", action="store_true", help="apply unsafe fixes too")
    parser.add_argument("--config", help="a synclint configuration file to use")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has synclint")
    args = parser.parse_args()

    out = fix_copy(args.tree, args.python, args.unsafe, args.config)
    print(f"tree: {args.tree}  ({out.files} files)  unsafe fixes: {'yes' if args.unsafe else 'no'}")
    print(f"{'rule':10s} {'fixes':>6s}")
    for code, count in sorted(out.per_rule.items()):
        print(f"{code:10s} {count:6d}")
    print(f"{'TOTAL':10s} {out.total:6d}")
    print(f"files changed: {len(out.changed)}; not compiling: {len(out.broken)}; "
          f"changed again by a second run: {len(out.again)}")
    print(f"wall: first run {out.wall1:.1f} s (exit {out.rc1}), second run {out.wall2:.1f} s (exit {out.rc2})")
    for line in out.broken + [f"changed again: {name}" for name in out.again]:
        print("  " + line)
    for line in out.errors[:20]:
        print("  " + line)
    return 1 if out.broken or out.again or out.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
