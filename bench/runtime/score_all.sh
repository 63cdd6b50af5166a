#!/usr/bin/env bash
# Score linters against the runtime ground truth of every package in bench/runtime/<pkg>/.
#
#   bench/runtime/score_all.sh [SYNCLINT] [SRC_ROOT]
#     SYNCLINT  the synclint executable (default /work/venvs/base/bin/synclint)
#     SRC_ROOT  where get_sources.sh put the exact sources (default /work/runtime-src)
#   Env: DETAILS=DIR keeps each scorer's --json and stdout there (default: a temp dir, removed);
#        PKGS (default: every read package, below); SHOW_MISSES=1 lists the sites synclint (default) misses.
#   kornia is the *unread* package of issue 27: it is left out of the default PKGS so that nobody
#   reads synclint's findings or misses on it while building; score it once, at the end, with PKGS=kornia.
#   The held-out eight of branch runtime-traces are kept out likewise (a test split for calibration):
#   PKGS="gpytorch botorch pyro torchdiffeq e3nn monai pytorch_metric_learning skorch", once.
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
PKGS=${PKGS:-"litgpt accelerate timm nanogpt peft diffusers stable_baselines3 torch_geometric"}
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
  # score_runtime.py takes exit status 1 with no output as "no findings": make sure the linter really runs here
  probe="$SRC_ROOT/$pkg/$(python3 -c 'import json, sys; print(sorted(json.load(open(sys.argv[1])))[0])' "$HERE/$pkg/coverage.json")"
  if ! "$SYNCLINT" check --output-format json --exit-zero "$probe" 2>"$DET/$pkg.probe.err" \
       | python3 -c 'import json, sys; assert isinstance(json.load(sys.stdin), list)' 2>/dev/null; then
    echo "score_all: '$SYNCLINT check' fails on $probe; not scoring:" >&2; tail -n 3 "$DET/$pkg.probe.err" >&2; exit 2
  fi
  for name in synclint synclint-low regex; do
    python3 "$SCORER" --sites "$HERE/$pkg/sync_sites.jsonl" --coverage "$HERE/$pkg/coverage.json" \
      --src "$SRC_ROOT/$pkg" --lint "${LINT[$name]}" --json "$DET/$pkg.$name.json" --show 200 \
      > "$DET/$pkg.$name.txt"
  done
done

SRC_ROOT="$SRC_ROOT" python3 - "$DET" "$HERE" $PKGS <<'PY'
import json, os, re, sys, collections
det, here, pkgs = sys.argv[1], sys.argv[2], sys.argv[3:]
names = ["synclint", "synclint-low", "regex"]
rows, pooled = [], {n: [0, 0, 0, 0, 0] for n in names}
CHAIN = re.compile(r" at (\S+):(\d+)\s*$")
src_root = {pkg: os.path.realpath(os.path.join(os.environ["SRC_ROOT"], pkg)) for pkg in pkgs}
for pkg in pkgs:
    for n in names:
        p = os.path.join(det, f"{pkg}.{n}.json")
        if not os.path.exists(p):
            continue
        d = json.load(open(p))
        sites = len(d["sites"]); flagged = sum(1 for s in d["sites"] if s["flagged_by"])
        fe = len(d["findings_on_executed"]); conf = sum(1 for f in d["findings_on_executed"] if f["confirmed"])
        # A call-site finding (SYNC112: a call to a function that syncs; SYNC105: a property whose getter syncs)
        # names the sync it leads to ("... at FILE:LINE"); it can never match a site, since a site is the innermost
        # package frame. The last two columns also credit it when that named line synced at runtime.
        synced = {(s["path"], s["line"]) for s in d["sites"]}
        chain = 0
        for f in d["findings_on_executed"]:
            m = CHAIN.search(f.get("message") or "")
            if not f["confirmed"] and m:
                rel = os.path.relpath(m.group(1), src_root.get(pkg, "/")) if os.path.isabs(m.group(1)) else m.group(1)
                chain += (rel, int(m.group(2))) in synced
        rows.append((pkg, n, sites, flagged, fe, conf, conf + chain))
        for i, v in enumerate((sites, flagged, fe, conf, conf + chain)):
            pooled[n][i] += v
for n in names:
    rows.append(("POOLED", n, *pooled[n]))
print("| package | linter | sites synced | flagged | recall | findings on executed lines | confirmed | confirmed precision "
      "| + call chains ending on a synced line | precision with chains |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for pkg, n, s, f, fe, c, cc in rows:
    print(f"| {pkg} | {n} | {s} | {f} | {f / s if s else 0:.3f} | {fe} | {c} | {c / fe if fe else 0:.3f} | {cc} "
          f"| {cc / fe if fe else 0:.3f} |")
# Recall over the *direct* sites only: those where the op that waited was called on the package's own line
# (no torch/lightning/... frame in between: ``via`` is null, or an explicit synchronize). The other sites
# waited inside a library call made from that line (torch.save, Module.to, load_state_dict, GradScaler.step,
# fabric.log_dict, ...); a linter can only flag them by knowing that API.
def direct_sites(pkg):
    rows = collections.defaultdict(list)
    for line in open(os.path.join(here, pkg, "sync_sites.jsonl")):
        r = json.loads(line)
        if r["path"] is not None:
            rows[(r["path"], r["line"])].append(r)
    return {k for k, rs in rows.items() if all(r["kind"] == "synchronize" or not r.get("via") for r in rs)}
drows, dpooled = [], {n: [0, 0] for n in names}
for pkg in pkgs:
    if not os.path.exists(os.path.join(det, f"{pkg}.synclint.json")):
        continue
    direct = direct_sites(pkg)
    for n in names:
        p = os.path.join(det, f"{pkg}.{n}.json")
        if not os.path.exists(p):
            continue
        ss = [s for s in json.load(open(p))["sites"] if (s["path"], s["line"]) in direct]
        f = sum(1 for s in ss if s["flagged_by"])
        drows.append((pkg, n, len(ss), f))
        dpooled[n][0] += len(ss); dpooled[n][1] += f
for n in names:
    drows.append(("POOLED", n, *dpooled[n]))
print("\n| package | linter | direct sites | flagged | recall on direct sites |")
print("|---|---|---:|---:|---:|")
for pkg, n, s, f in drows:
    print(f"| {pkg} | {n} | {s} | {f} | {f / s if s else 0:.3f} |")
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
