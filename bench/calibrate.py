#!/usr/bin/env python3
"""Calibrate the policy (synclint/policy.py) on measured syncs, and score it on packages it never saw.

    python bench/calibrate.py [--write]                 # calibrate on CALIBRATION, print the table
    python bench/calibrate.py --score PKG [PKG ...]      # score the policy in force on other packages

Labelled data: the runtime ground truths of bench/runtime/<pkg>/ (sync_sites.jsonl, coverage.json),
taken on a GPU over the exact sources that bench/runtime/get_sources.sh lays out in --src-root. synclint
runs over the traced files at every confidence (`--min-confidence low`, JSON with each finding's
evidence); a finding on a line that ran is labelled synced when the line synced (or, for a call-site
finding that names the sync it leads to, `... at FILE:LINE`, when that line did), and not synced
otherwise; a finding on a line that never ran says nothing and is left out. Lines are matched by
statement, as shared/eval/score_runtime.py matches them.

Each finding counts once in every kind of evidence it belongs to (`policy.kinds`); `--write` writes the
counts to synclint/policy_table.py, and the table printed shows every kind with enough examples, its
count, how many synced, the precision and what the policy makes of it.

The split is fixed before anyone looks at the test packages: CALIBRATION are the packages traced in
earlier rounds (read while building the rules) and five traced for it in issue 38; TEST are eight other
packages traced for issue 38 by another engineer, scored here and never read (`--score` with no
package names scores them).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RUNTIME = HERE / "runtime"
SCORER = ROOT.parent / "shared" / "eval" / "score_runtime.py"
TABLE = ROOT / "synclint" / "policy_table.py"

CALIBRATION = ("litgpt", "accelerate", "timm", "nanogpt", "peft", "diffusers", "stable_baselines3",
               "torch_geometric", "kornia", "x_transformers", "vector_quantize_pytorch", "pytorch_tabnet", "torchsde",
               "zuko")
TEST = ("gpytorch", "botorch", "pyro", "torchdiffeq", "e3nn", "monai", "pytorch_metric_learning", "skorch")
KINDS = {"debug-mode", "synchronize"}
TARGET = 0.80  # the default view's precision on the calibration packages (see bench/README.md, "Issue 38")
CHAIN = re.compile(r" at (\S+):(\d+)\s*$")  # a call-site finding names the sync it leads to


def _scorer():
    path = SCORER if SCORER.exists() else Path("/work/shared/eval/score_runtime.py")
    spec = importlib.util.spec_from_file_location("score_runtime", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def repeating(pkg: str) -> set[tuple[str, int]]:
    """The sites that synced more than once in one scenario of the package's trace: on a path that
    repeats (a step, a token, a batch), not once per run."""
    found = set()
    for raw in (RUNTIME / pkg / "sync_sites.jsonl").read_text(encoding="utf-8").splitlines():
        if raw.strip():
            r = json.loads(raw)
            if r.get("path") is not None and r.get("kind") in KINDS and int(r.get("count", 1)) >= 2:
                found.add((r["path"], int(r["line"])))
    return found


def labelled(pkg: str, src_root: Path, synclint: str, lint_cache: Path | None,
             label: str = "any") -> tuple[list[dict], set]:
    """(findings on executed lines at every confidence, each with `synced`; the package's synced sites).
    `label`: "repeats" counts a site as synced when it synced more than once in a scenario (what a user
    acts on: a wait on a path that repeats), "any" when it synced at all.
    With `lint_cache`, synclint's findings are kept there and read back (they do not depend on the
    policy's table: the evidence is the same whatever the table says)."""
    score = _scorer()
    src = (src_root / pkg).resolve()
    sites = score.load_sites(str(RUNTIME / pkg / "sync_sites.jsonl"), KINDS, None)
    if label == "repeats":
        again = repeating(pkg)
        sites = {key: site for key, site in sites.items() if key in again}
    coverage = {p: set(v) for p, v in json.loads((RUNTIME / pkg / "coverage.json").read_text()).items()}
    rel_files = sorted(p for p in {p for p, _ in sites} | set(coverage) if p.endswith(".py") and (src / p).is_file())
    stmts = {p: score.Statements((src / p).read_text(encoding="utf-8", errors="replace")) for p in rel_files}
    kept = lint_cache / f"{pkg}.json" if lint_cache is not None else None
    if kept is not None and kept.exists():
        raw = json.loads(kept.read_text())
    else:
        template = f"{synclint} check --output-format json --exit-zero --no-cache --min-confidence low {{files}}"
        raw = score.run_lint(template, [str(src / p) for p in rel_files], os.getcwd())
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps(raw))
    synced_lines = set(sites)
    spans = {(p, stmts[p].of(ln)) for p, ln in sites if p in stmts}
    out = []
    for f in raw:
        rel = os.path.relpath(os.path.realpath(f["filename"]), src)
        if rel not in stmts:
            continue
        row = f["location"]["row"]
        start, end = stmts[rel].of(row)
        ran = coverage.get(rel, set())
        if not ran.intersection(range(start, end + 1)) and row not in ran:
            continue
        synced = (rel, (start, end)) in spans
        m = CHAIN.search(f.get("message") or "")
        if not synced and m:
            target = os.path.relpath(m.group(1), src) if os.path.isabs(m.group(1)) else m.group(1)
            synced = (target, int(m.group(2))) in synced_lines
        out.append({**f, "path": rel, "synced": synced, "span": (start, end)})
    return out, spans


def _evidence(finding: dict):
    from synclint.evidence import Basis, Certainty, Evidence, Reach

    ev = finding.get("evidence")
    if ev is None:
        return None
    return Evidence(Certainty.parse(ev["certainty"]), ev["runs"], Basis(ev["basis"]), Reach(ev["reach"]),
                    wait=ev.get("wait", True))


def count_rows(findings: list[dict]) -> dict[tuple[str, ...], list[int]]:
    from synclint import policy

    rows: dict[tuple[str, ...], list[int]] = collections.defaultdict(lambda: [0, 0])
    for f in findings:
        ev = _evidence(f)
        if policy.decided_by_definition(ev):
            continue
        for kind in policy.kinds(f["code"], ev):
            rows[kind][0] += 1
            rows[kind][1] += f["synced"]
    return rows


def deciding_rows(findings: list[dict], rows: dict[tuple[str, ...], list[int]]) -> dict[tuple[str, ...], list[int]]:
    """Each finding counted once, in the kind that decides it (the most specific with enough examples)."""
    from synclint import policy

    decided: dict[tuple[str, ...], list[int]] = collections.defaultdict(lambda: [0, 0])
    for f in findings:
        ev = _evidence(f)
        if policy.decided_by_definition(ev):
            continue
        kind = next((k for k in policy.kinds(f["code"], ev) if rows[k][0] >= policy.ENOUGH), None)
        if kind is not None:
            decided[kind][0] += 1
            decided[kind][1] += f["synced"]
    return decided


def operating_point(decided: dict[tuple[str, ...], list[int]], target: float) -> float:
    """The lowest precision a kind may have and still be shown by default: the kinds taken from the
    most precise down, as long as the findings shown together stay at `target` precision or better."""
    shown = synced = 0
    cut = 1.0
    for precision, n, k in sorted(((k / n, n, k) for n, k in decided.values()), reverse=True):
        if (synced + k) / (shown + n) < target:
            break
        shown, synced, cut = shown + n, synced + k, precision
    return round(cut, 3)


def write_table(rows: dict[tuple[str, ...], list[int]], medium_at: float, packages: tuple[str, ...]) -> None:
    lines = [
        f'"""Written by bench/calibrate.py from the runtime traces of {", ".join(packages)}: do not edit.',
        "",
        "ROWS: a kind of evidence (see synclint.policy.kinds) -> (findings on lines that ran, of which synced).",
        f"MEDIUM_AT: the lowest precision of a kind shown by default, chosen so that the default view of the",
        f"calibration packages is {TARGET:.0%} precise or better.",
        '"""',
        f"MEDIUM_AT = {medium_at}",
        "ROWS: dict[tuple[str, ...], tuple[int, int]] = {",
    ]
    for kind in sorted(rows):
        n, k = rows[kind]
        lines.append(f"    {kind!r}: ({n}, {k}),")
    lines.append("}")
    TABLE.write_text("\n".join(lines) + "\n")


def print_table(rows: dict[tuple[str, ...], list[int]], decided: dict[tuple[str, ...], list[int]],
                medium_at: float, beside: tuple[str, dict[tuple[str, ...], list[int]]]) -> None:
    """Every kind with enough examples: its counts, precision, the findings it decides, and its verdict;
    `beside`: the same kinds counted with the other label (its name, its rows), shown and not used."""
    from synclint import policy

    print(f"default view: kinds at {medium_at:.2f} precision or better (high: {policy.HIGH_AT:.2f} with "
          f"{policy.ENOUGH_FOR_HIGH} examples); a kind needs {policy.ENOUGH} examples to decide\n")
    print(f"| kind (rule, certainty, basis, runs) | examples | synced | precision | decides (of them synced) | verdict "
          f"| synced ({beside[0]}) |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for kind in sorted(rows, key=lambda k: (k[0] == "*", k)):
        n, k = rows[kind]
        if n < policy.ENOUGH:
            continue
        if k / n >= policy.HIGH_AT and n >= policy.ENOUGH_FOR_HIGH:
            verdict = "high"
        elif k / n >= medium_at:
            verdict = "medium"
        else:
            verdict = "low"
        dn, dk = decided.get(kind, (0, 0))
        other = beside[1].get(kind, (0, 0))[1]
        print(f"| {' '.join(kind)} | {n} | {k} | {k / n:.2f} | {dn} ({dk}) | {verdict} | {other} ({other / n:.2f}) |")
    few = sum(1 for n, _ in rows.values() if n < policy.ENOUGH)
    print(f"\n{few} kinds have fewer than {policy.ENOUGH} examples: they back off to a coarser kind, and a finding"
          " with no kind of enough examples stays low.")


def score(packages, src_root: Path, synclint: str, lint_cache: Path | None, label: str) -> None:
    """Recall and confirmed precision of the default view (medium and above, as the policy in force
    decides from each finding's evidence), per package and pooled."""
    from synclint import policy
    from synclint.model import Confidence

    total = [0, 0, 0, 0]
    print("| package | sites synced | flagged | recall | findings on lines that ran | synced | precision |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for pkg in packages:
        found, sites = labelled(pkg, src_root, synclint, lint_cache, label)
        found = [f for f in found if policy.confidence(f["code"], _evidence(f)) >= Confidence.MEDIUM]
        flagged = {(f["path"], f["span"]) for f in found if f["synced"] and not CHAIN.search(f.get("message") or "")}
        hit = len(sites & flagged)
        confirmed = sum(f["synced"] for f in found)
        row = (len(sites), hit, len(found), confirmed)
        total = [a + b for a, b in zip(total, row)]
        print(f"| {pkg} | {row[0]} | {row[1]} | {row[1] / max(row[0], 1):.3f} | {row[2]} | {row[3]} | "
              f"{row[3] / max(row[2], 1):.3f} |")
    print(f"| pooled | {total[0]} | {total[1]} | {total[1] / max(total[0], 1):.3f} | {total[2]} | {total[3]} | "
          f"{total[3] / max(total[2], 1):.3f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src-root", type=Path, default=Path("/work/runtime-src"))
    ap.add_argument("--synclint", default="synclint")
    ap.add_argument("--write", action="store_true", help="write synclint/policy_table.py")
    ap.add_argument("--lint-cache", type=Path, default=None,
                    help="keep synclint's findings per package here and reuse them (same synclint, same sources)")
    ap.add_argument("--score", nargs="*", metavar="PKG",
                    help="score the policy in force on these packages (none: the test packages)")
    ap.add_argument("--label", choices=("any", "repeats"), default="any",
                    help="a finding is labelled synced when its line synced at all (any, the default: what "
                         "decides the table) or more than once in a scenario (repeats: a wait on a path that "
                         "repeats); the table printed shows both")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.score is not None:
        score(args.score or TEST, args.src_root, args.synclint, args.lint_cache, args.label)
        return 0
    findings = []
    for pkg in CALIBRATION:
        found, _ = labelled(pkg, args.src_root, args.synclint, args.lint_cache, args.label)
        print(f"{pkg}: {len(found)} findings on lines that ran, {sum(f['synced'] for f in found)} synced", file=sys.stderr)
        findings += found
    rows = count_rows(findings)
    decided = deciding_rows(findings, rows)
    medium_at = operating_point(decided, TARGET)
    if args.write:
        write_table(rows, medium_at, CALIBRATION)
    other = "repeats" if args.label == "any" else "any"
    beside = count_rows([f for pkg in CALIBRATION for f in labelled(pkg, args.src_root, args.synclint, args.lint_cache,
                                                                    other)[0]])
    print_table(rows, decided, medium_at, (other, beside))
    return 0


if __name__ == "__main__":
    sys.exit(main())
