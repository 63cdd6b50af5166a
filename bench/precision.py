#!/usr/bin/env python3
"""Precision of synclint on real code, judged by a person on a random sample of findings.

What it measures: of the findings a default run reports (medium or high confidence), how many
are real syncs. A finding is "tp" when the line really makes the host wait on a CUDA tensor (as
`../shared/reference/sync-catalogue.md` measures it), "fp" otherwise; a person decides by
reading the code around the line.

Two steps:

    # 1. draw the sample from density.py's raw findings (reproducible: same findings + seed,
    #    same sample) and write the CSV with an empty verdict column
    python bench/density.py --json-out /tmp/density.json
    python bench/precision.py --findings /tmp/density.json --seed 0 --n 100

    # 2. fill in verdict (tp / fp) and a note for every row, then
    python bench/precision.py --score

A false finding whose note carries the tag `[unreached]` is one where the value is on the GPU and
the line would make the host wait, but nothing in the package reaches the line (a branch no caller
takes, training-only code); --score also prints the precision with those counted true.

The CSV (default bench/precision_sample.csv) has the columns id, code, confidence, file
(relative to the release folder, e.g. vllm/v1/worker/gpu_model_runner.py), line, source_line,
verdict, note. It carries one source line per finding and nothing else of vLLM's code.
Sampling refuses to overwrite a CSV that already has verdicts unless --force is given.
Stdlib only.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

from benchlib import BENCH, CONFIDENCES, PROBLEM_CODES, table, vllm_tree

COLUMNS = ("id", "code", "confidence", "file", "line", "source_line", "verdict", "note")
# Optional: the finding's `because` and the class of evidence it names (`evidence_class`), for the
# calibration table (--score prints precision per class: high wants >= 95%, medium >= 85%).
EVIDENCE_COLUMNS = ("evidence", "because")
# The classes of evidence a finding's `because` names, the first that matches (most specific first).
EVIDENCE_CLASSES = (
    ("set-up code (demoted)", ("in set-up code",)),
    ("interval (demoted)", ("once every",)),
    ("other accelerator (demoted)", ("code, not CUDA",)),
    ("explicit synchronize", ("device-wide synchronize", "synchronize")),
    ("a library that syncs inside", ("GradScaler.", "reads its scale", "found_inf")),
    ("a property that syncs", ("is a property defined at",)),
    ("a callee that syncs", ("SYNC1",)),
    ("made on a device", ("made by torch.",)),
    ("a caller passes a GPU tensor", ("passes `", "passes it")),
    ("moved or made on the GPU", ("moved by .to", "device '", 'device "', ".cuda()", "a .gpu buffer", "moved to the device")),
    ("returned by a helper", ("returned by ",)),
    ("a module's output or parameters", ("module's output", "runs a module", "module's parameter", "module's tensors")),
    ("read as only a tensor can be", ("is read as only a tensor", "as only a tensor or an array has", "is used as a tensor",
                                      "is used as only a tensor", "isinstance(")),
    ("model code", ("in code that runs a model", "nn.Module", "model code", "is an argument of nn.Module.forward")),
    ("a package that runs on GPUs", ("in a package that runs on GPUs",)),
    ("a file that puts its model on the GPU", ("in a file that puts its model or data on the GPU",)),
    ("annotated or named", ("is annotated", "by its name", "activation")),
)


def evidence_class(because: str | None) -> str:
    """The class of evidence a finding's `because` names (a measurement's grouping, not a rule)."""
    text = because or ""
    for name, needles in EVIDENCE_CLASSES:
        if any(needle in text for needle in needles):
            return name
    return "other" if text else "none given"
# A note tag: the line would sync on a GPU tensor, but nothing in the package reaches it.
UNREACHED = "[unreached]"
VERDICTS = ("tp", "fp")
DEFAULT_CSV = BENCH / "precision_sample.csv"


def eligible(findings: list[dict], min_confidence: str) -> list[dict]:
    """Real findings at `min_confidence` or above, in a stable order (the sampling population)."""
    wanted = CONFIDENCES[: CONFIDENCES.index(min_confidence) + 1]
    kept = [f for f in findings if f["code"] not in PROBLEM_CODES and f.get("confidence") in wanted]
    return sorted(kept, key=lambda f: (f["filename"], f["location"]["row"], f["location"]["column"], f["code"]))


def relative_name(filename: str, root: Path) -> str:
    path = Path(filename)
    if path.is_absolute():
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return filename
    return path.as_posix()


def source_line(root: Path, rel: str, row: int) -> str:
    try:
        lines = (root / rel).read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[row - 1].strip() if 0 < row <= len(lines) else ""


def has_verdicts(csv_path: Path) -> bool:
    if not csv_path.exists():
        return False
    with csv_path.open(newline="", encoding="utf-8") as fh:
        return any((row.get("verdict") or "").strip() for row in csv.DictReader(fh))


def draw(args: argparse.Namespace) -> int:
    findings = json.loads(args.findings.read_text())
    population = eligible(findings, args.min_confidence)
    if not population:
        sys.exit(f"precision.py: no findings at {args.min_confidence} confidence or above in {args.findings}")
    if has_verdicts(args.csv) and not args.force:
        sys.exit(f"precision.py: {args.csv} already has verdicts; pass --force to replace it, or --csv elsewhere")
    picked = random.Random(args.seed).sample(population, min(args.n, len(population)))
    # Numbered in file order, so that a reader goes through each file once.
    picked.sort(key=lambda f: (f["filename"], f["location"]["row"], f["location"]["column"], f["code"]))
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with args.csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow((*COLUMNS, *EVIDENCE_COLUMNS))
        for i, f in enumerate(picked, 1):
            rel = relative_name(f["filename"], args.root)
            row = f["location"]["row"]
            writer.writerow((i, f["code"], f["confidence"], rel, row, source_line(args.root, rel, row), "", "",
                             evidence_class(f.get("because")), f.get("because") or ""))
    by_conf = {c: sum(f["confidence"] == c for f in population) for c in CONFIDENCES}
    print(f"population: {len(population)} findings at {args.min_confidence} or above in {args.findings} "
          f"({', '.join(f'{c} {n}' for c, n in by_conf.items() if n)})")
    print(f"sample: {len(picked)} findings, seed {args.seed} -> {args.csv}")
    levels = [c for c in CONFIDENCES if by_conf[c]]
    print(table(("code", *levels),
                [(code, *(sum(f["code"] == code and f["confidence"] == c for f in picked) for c in levels))
                 for code in sorted({f["code"] for f in picked})]))
    return 0


def wilson(tp: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (honest on 20 judged findings, unlike p +- 2 sigma)."""
    if n == 0:
        return 0.0, 0.0
    p = tp / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def score(args: argparse.Namespace) -> int:
    with args.csv.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = [c for c in COLUMNS if rows and c not in rows[0]]
    if missing:
        sys.exit(f"precision.py: {args.csv} lacks the columns {', '.join(missing)}")
    bad = [r["id"] for r in rows if (r["verdict"] or "").strip().lower() not in (*VERDICTS, "")]
    if bad:
        sys.exit(f"precision.py: verdict must be tp, fp or empty; rows {', '.join(bad)} say otherwise")
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])  # tp, fp, unjudged
    for r in rows:
        verdict = (r["verdict"] or "").strip().lower()
        slot = VERDICTS.index(verdict) if verdict else 2
        keys = [("all", "all"), ("confidence", r["confidence"]), ("rule", r["code"])]
        if r.get("evidence"):
            keys.append(("evidence", f"{r['confidence']}: {r['evidence']}"))
        for key in keys:
            groups[key][slot] += 1

    def line(kind: str, key: str) -> tuple:
        tp, fp, open_ = groups[(kind, key)]
        judged = tp + fp
        lo, hi = wilson(tp, judged)
        precision = f"{tp / judged:.3f}" if judged else "-"
        return (key, judged, tp, fp, open_, precision, f"{lo:.2f}-{hi:.2f}" if judged else "-")

    rows_out = [line("all", "all")]
    rows_out += [line("confidence", c) for c in CONFIDENCES if ("confidence", c) in groups]
    rows_out += [line("rule", code) for _, code in sorted(k for k in groups if k[0] == "rule")]
    rows_out += [line("evidence", key) for _, key in sorted(k for k in groups if k[0] == "evidence")]
    print(f"precision from {args.csv} ({len(rows)} sampled findings)")
    print(table(("group", "judged", "tp", "fp", "unjudged", "precision", "95% CI"), rows_out))
    unreached = [r for r in rows if (r["verdict"] or "").strip().lower() == "fp" and UNREACHED in r["note"]]
    if unreached:
        tp, judged = groups[("all", "all")][0] + len(unreached), sum(groups[("all", "all")][:2])
        lo, hi = wilson(tp, judged)
        print(f"\n{len(unreached)} false findings are {UNREACHED}: the value is on the GPU and the line would make "
              f"the host wait, but no caller in the package reaches it (a dead branch, training-only code). "
              f"Counted true, as a linter that cannot know the callers' arguments would: "
              f"{tp}/{judged} = {tp / judged:.3f} ({lo:.2f}-{hi:.2f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--score", action="store_true", help="score a filled CSV instead of drawing a sample")
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="the sample (default: %(default)s)")
    parser.add_argument("--findings", type=Path, help="density.py --json-out file to sample from")
    parser.add_argument("--root", type=Path, default=vllm_tree().parent,
                        help="the folder file names are relative to, where source lines are read "
                             "(default: %(default)s)")
    parser.add_argument("--n", type=int, default=100, help="sample size (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument("--min-confidence", choices=CONFIDENCES, default="medium",
                        help="sample findings at this confidence or above (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="overwrite a CSV that already has verdicts")
    args = parser.parse_args(argv)
    if args.score:
        return score(args)
    if args.findings is None:
        parser.error("--findings FILE is required to draw a sample (or pass --score)")
    return draw(args)


if __name__ == "__main__":
    sys.exit(main())
