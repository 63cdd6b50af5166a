"""The README's examples, run: every ```console block is the output of its `$` commands.

An example is a section of the README (from one heading to the next). Its files are the code
blocks marked just above with `<!-- file: PATH -->`; they are written to a fresh folder, where
the section's console blocks run, in order, each `$` line through bash (so `--fix` in one block
changes what `cat` shows in the next). A console block marked `<!-- cwd: repo -->` runs in the
repository's root instead (commands that write nothing). The commands run as a user runs them:
the `synclint` of this interpreter's environment, the calibrated policy (without the
`SYNCLINT_UNCALIBRATED` that the rules' tests set), no colour, standard error merged into
standard output in the order written.

    python -m tests.readme_examples            # exit 1 and show the blocks that differ
    python -m tests.readme_examples --update   # rewrite the README's console blocks from the runs

`tests/test_readme_examples.py` fails when a block differs from its run.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```\n", re.M | re.S)
MARK = re.compile(r"<!-- (?P<key>file|cwd): (?P<value>[^ ]+) -->\n$")
WIDTH = "100"


@dataclass
class Block:
    start: int  # offsets of the block's body in the README
    end: int
    lang: str
    body: str
    mark: tuple[str, str] | None  # ("file", "model.py") or ("cwd", "repo")


@dataclass
class Example:
    heading: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def consoles(self) -> list[Block]:
        return [block for block in self.blocks if block.lang == "console"]


def examples(readme: str) -> list[Example]:
    """The README's sections that hold a console block, with their marked files."""
    found: list[Example] = []
    current = Example("(top)")
    for match in re.finditer(r"^#+ [^\n]*$|" + FENCE.pattern, readme, re.M | re.S):
        if match.group(0).startswith("#"):
            if current.consoles:
                found.append(current)
            current = Example(match.group(0).lstrip("# ").strip())
            continue
        before = readme[:match.start()]
        mark = MARK.search(before[before.rfind("\n", 0, len(before) - 1) + 1:])
        current.blocks.append(Block(match.start("body"), match.end("body"), match.group("lang"), match.group("body"),
                                    (mark.group("key"), mark.group("value")) if mark else None))
    if current.consoles:
        found.append(current)
    return found


def _environment(home: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("SYNCLINT_UNCALIBRATED", "CI", "FORCE_COLOR") and not name.startswith("PYTEST")}
    env.update(NO_COLOR="1", COLUMNS=WIDTH, TERM="dumb", PYTHONUNBUFFERED="1", SYNCLINT_CACHE_DIR=str(home / "cache"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    return env


def commands(body: str) -> list[str]:
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def run_example(example: Example) -> list[str]:
    """Each console block of `example` as its commands print it now."""
    outputs = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        work = home / "example"
        work.mkdir()
        env = _environment(home)
        for block in example.blocks:
            if block.mark is not None and block.mark[0] == "file":
                path = work / block.mark[1]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.body, encoding="utf-8")
            if block.lang != "console":
                continue
            cwd = REPO if block.mark == ("cwd", "repo") else work
            text = []
            for command in commands(block.body):
                proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, timeout=600)
                text.append(f"$ {command}\n{proc.stdout}")
            outputs.append("".join(text))
    return outputs


def regenerated(readme: str) -> str:
    """The README with every console block replaced by what its commands print."""
    edits: list[tuple[int, int, str]] = []
    for example in examples(readme):
        for block, output in zip(example.consoles, run_example(example)):
            edits.append((block.start, block.end, output))
    for start, end, output in sorted(edits, reverse=True):
        readme = readme[:start] + output + readme[end:]
    return readme


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the README's console blocks (tests/readme_examples.py).")
    parser.add_argument("--update", action="store_true", help="rewrite the README's console blocks from the runs")
    args = parser.parse_args()
    readme = README.read_text(encoding="utf-8")
    new = regenerated(readme)
    if args.update:
        README.write_text(new, encoding="utf-8")
        return 0
    if new == readme:
        return 0
    sys.stdout.writelines(difflib.unified_diff(readme.splitlines(True), new.splitlines(True), "a/README.md",
                                               "b/README.md"))
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
