#!/usr/bin/env bash
# Score linters against the runtime ground truth of every package in bench/runtime/<pkg>/.
#
#   bench/runtime/score_all.sh [SYNCLINT] [SRC_ROOT]
#     SYNCLINT  the synclint executable (default /work/venvs/base/bin/synclint)
#     SRC_ROOT  where get_sources.sh put the exact sources (default /work/runtime-src)
#   Env: DETAILS=DIR keeps each scorer's --json and stdout there (default: a temp dir, removed);
#        PKGS="litgpt accelerate timm nanogpt peft"; SHOW_MISSES=1 lists the sites synclint (default) misses.
#
# For each package it runs shared/eval/score_runtime.py three times: synclint at its default
# confidence, synclint --min-confidence low, and bench/regex_baseline.py; then prints one table
# (sites synced, flagged, recall, findings on executed lines, confirmed, confirmed precision) and
# pooled totals (sums of sites/flagged and of findings/confirmed over the packages).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$(dirname "$HERE")
SYNCLINT=${1:-/work/venvs/base/bin/synclint}
SRC_ROOT=${2:-/work/runtime-src}
SCORER=${SCORER:-$(cd "$BENCH/.." && pwd)/../shared/eval/score_runtime.py}
[ -f "$SCORER" ] || SCORER=/work/shared/eval/score_runtime.py
PKGS=${PKGS:-"litgpt accelerate timm nanogpt peft"}
keep=${DETAILS:-}
DET=${DETAILS:-$(mktemp -d)}
mkdir -p "$DET"
[ -n "$keep" ] || trap 'rm -rf "$DET"' EXIT

declare -A LINT=(
  [synclint]="$SYNCLINT check --output-format json --exit-zero {files}"
  [synclint-low]="$SYNCLINT check --output-format json --exit-zero --min-confidence low {files}"
  [regex]="python3 $BENCH/regex_baseline.py {files}"
)
for pkg in $PKGS; do
  [ -s "$HERE/$pkg/sync_sites.jsonl" ] || { echo "skip $pkg: no $HERE/$pkg/sync_sites.jsonl" >&2; continue; }
  [ -d "$SRC_ROOT/$pkg" ] || { echo "skip $pkg: no $SRC_ROOT/$pkg (run get_sources.sh)" >&2; continue; }
  for name in synclint synclint-low regex; do
    python3 "$SCORER" --sites "$HERE/$pkg/sync_sites.jsonl" --coverage "$HERE/$pkg/coverage.json" \
      --src "$SRC_ROOT/$pkg" --lint "${LINT[$name]}" --json "$DET/$pkg.$name.json" --show 200 \
      > "$DET/$pkg.$name.txt"
  done
done

python3 - "$DET" "$HERE" $PKGS <<'PY'
import json, os, re, sys, collections
det, here, pkgs = sys.argv[1], sys.argv[2], sys.argv[3:]
names = ["synclint", "synclint-low", "regex"]
rows, pooled = [], {n: [0, 0, 0, 0] for n in names}
for pkg in pkgs:
    for n in names:
        p = os.path.join(det, f"{pkg}.{n}.json")
        if not os.path.exists(p):
            continue
        d = json.load(open(p))
        sites = len(d["sites"]); flagged = sum(1 for s in d["sites"] if s["flagged_by"])
        fe = len(d["findings_on_executed"]); conf = sum(1 for f in d["findings_on_executed"] if f["confirmed"])
        rows.append((pkg, n, sites, flagged, fe, conf))
        for i, v in enumerate((sites, flagged, fe, conf)):
            pooled[n][i] += v
for n in names:
    rows.append(("POOLED", n, *pooled[n]))
print(f"| package | linter | sites synced | flagged | recall | findings on executed lines | confirmed | confirmed precision |")
print(f"|---|---|---:|---:|---:|---:|---:|---:|")
for pkg, n, s, f, fe, c in rows:
    print(f"| {pkg} | {n} | {s} | {f} | {f / s if s else 0:.3f} | {fe} | {c} | {c / fe if fe else 0:.3f} |")
if os.environ.get("SHOW_MISSES"):
    for pkg in pkgs:
        p = os.path.join(det, f"{pkg}.synclint.json")
        if not os.path.exists(p):
            continue
        vias = collections.defaultdict(set)
        for line in open(os.path.join(here, pkg, "sync_sites.jsonl")):
            r = json.loads(line)
            if r["path"] is not None:
                vias[(r["path"], r["line"])].add(r.get("via") or "")
        print(f"\n{pkg}: sites synclint (default) misses")
        for s in json.load(open(p))["sites"]:
            if not s["flagged_by"]:
                print(f"  {s['hits']:6d}  {'/'.join(s['kinds']):18s} {s['path']}:{s['line']}  {(s['code'] or '').strip()[:90]}"
                      f"  [via {', '.join(sorted(vias[(s['path'], s['line'])]))[:80]}]")
PY
