"""What the bench scripts share: where things live, walking a tree of .py files, tables.

Not a benchmark itself; `recall.py`, `density.py`, `precision.py` and `regex_baseline.py`
import it as a sibling module (they are run as `python bench/NAME.py`).
"""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# ../shared/eval beside the checkout: the corpus of real sync sites and its scorer.
EVAL_DIR = REPO.parent / "shared" / "eval"
# Extracted vLLM wheels, laid out as VLLM_SRC/vllm/<version>/vllm/... (see vllm_corpus.sh).
VLLM_SRC = Path(os.environ.get("VLLM_SRC", "/work/vllm-src"))
DENSITY_VERSION = "0.33.0"
CONFIDENCES = ("high", "medium", "low")  # most sure first
PROBLEM_CODES = ("SYNC000", "SYNC001")  # parse errors and internal errors, not findings


def vllm_tree(version: str = DENSITY_VERSION, src: Path = VLLM_SRC) -> Path:
    """The extracted `vllm` package of one release."""
    return src / "vllm" / version / "vllm"


def iter_py_files(root: Path) -> Iterator[Path]:
    """Every .py file under `root` (or `root` itself), in a stable order."""
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def count_lines(path: Path) -> int:
    """Physical lines, counted the way score_sites.py counts them."""
    return len(path.read_bytes().splitlines())


def child_cpu_seconds() -> float:
    """User + system time of the finished child processes (and theirs, synclint's workers) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def per_kloc(count: int, lines: int) -> float:
    return count * 1000.0 / lines if lines else 0.0


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1, align: str | None = None) -> str:
    """A plain-text table: the first `left` columns left-aligned, the rest right-aligned, unless
    `align` spells each column out ("llrrl": l left, r right)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    align = align or "l" * left + "r" * (len(headers) - left)

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out.extend(line(row) for row in cells[1:])
    return "\n".join(out)


def source_fingerprint(python: str, cwd: Path | None = None) -> str:
    """A short hash of the synclint engine and rule sources that `python`, started in `cwd`, imports
    (the working directory comes first on sys.path: a checkout's own synclint wins there).

    Rules change while they are written; a run whose fingerprint differs at its start and its end
    measured a moving target, and its numbers do not belong together.
    """
    proc = subprocess.run(
        [python, "-c", "import synclint, synclint.rules as r; print(*synclint.__path__, *r.__path__, sep='\\n')"],
        capture_output=True, text=True, cwd=cwd,
    )
    if proc.returncode != 0:
        return "unknown (synclint not importable)"
    digest = hashlib.sha256()
    for folder in sorted(set(proc.stdout.split())):
        for path in sorted(iter_py_files(Path(folder))):
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]
