#!/usr/bin/env bash
# Run every workload scenario under trace_syncs.py on the GPU machine, in one call.
#
#   bash .rt/bench/runtime/run_all.sh            # from the root of the copied checkout, $OUT set
#
# Layout it expects (all under $RT, default .rt/, which travels with carry; see get_sources.sh --rt):
#   $RT/srcwhl/*.whl      the exact packages traced (unpacked here into $RT/src, first on PYTHONPATH)
#   $RT/src/nanogpt       nanoGPT's scripts (and any package already unpacked)
#   $RT/whl/*.whl         wheels of dependencies missing there (jsonargparse, gymnasium, kornia_rs, ...)
#   $RT/bench/runtime/    this folder
# Env: JOBS (parallel scenarios, default 5), SCEN_TIMEOUT (s, default 150), DEADLINE (s after start
# after which no scenario starts, default 430), ONLY (regex over "pkg/scenario", default all),
# PKGS (default: the packages with a workload whose source is in $RT/src after unpacking). Results: $OUT/results.tgz (results/<pkg>/...,
# logs/), $OUT/summary.txt. A failing scenario is logged with its traceback and the rest go on.
set -u
RT=${RT:-$PWD/.rt}
OUT=${OUT:-/tmp/rt-out}
JOBS=${JOBS:-5}
SCEN_TIMEOUT=${SCEN_TIMEOUT:-150}
DEADLINE=${DEADLINE:-430}
ONLY=${ONLY:-.}
PY=${PY:-python3}
WORK=${WORK:-/tmp/rt-work}
mkdir -p "$OUT" "$WORK/logs" "$WORK/raw" "$WORK/results"
START=$(date +%s)
export RT_START=$START RT_SCEN_TIMEOUT=$SCEN_TIMEOUT RT_DEADLINE=$DEADLINE RT_WORK=$WORK PY

if ls "$RT"/whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/rt-site "$RT"/whl/*.whl \
    > "$WORK/logs/pip-install.log" 2>&1 || echo "wheel install failed (see logs/pip-install.log)"
fi
mkdir -p "$RT/src"
for w in "$RT"/srcwhl/*.whl; do
  [ -e "$w" ] || continue
  $PY - "$w" "$RT/src" <<'PYEOF' >> "$WORK/logs/pip-install.log" 2>&1 || echo "unpacking $w failed"
import os, shutil, sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    tops = {n.split("/")[0] for n in z.namelist() if not n.split("/")[0].endswith((".dist-info", ".data"))}
    for t in tops:
        shutil.rmtree(os.path.join(dest, t), ignore_errors=True)
    z.extractall(dest, [n for n in z.namelist() if n.split("/")[0] in tops])
print("unpacked", os.path.basename(whl), "->", ", ".join(sorted(tops)))
PYEOF
done
if [ -z "${PKGS:-}" ]; then
  PKGS=""
  for w in "$RT"/bench/runtime/workloads/*.py; do
    p=$(basename "$w" .py); [ -d "$RT/src/$p" ] && PKGS="$PKGS $p"
  done
fi
export RT_SRC="$RT/src"
export PYTHONPATH="$RT/src:/tmp/rt-site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-3} TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=disabled
# coverage's sys.monitoring core (Python >= 3.12) costs far less than the trace function
$PY -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' && export COVERAGE_CORE=${COVERAGE_CORE:-sysmon}

{
  echo "== environment"; date -u; $PY --version
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  $PY - <<'PYEOF'
import importlib
for m in ["litgpt", "accelerate", "timm", "peft", "diffusers", "stable_baselines3", "gymnasium", "torch_geometric",
          "kornia", "kornia_rs", "lightning", "torchmetrics", "tokenizers", "jsonargparse", "coverage",
          "huggingface_hub", "safetensors", "tiktoken", "tensorboard", "opt_einsum", "numpy", "scipy", "PIL",
          "torchvision", "transformers", "gpytorch", "linear_operator", "botorch", "pyro", "pyroapi", "torchdiffeq",
          "e3nn", "opt_einsum_fx", "sympy", "monai", "einops", "skimage", "pytorch_metric_learning", "skorch", "sklearn",
          "x_transformers", "vector_quantize_pytorch", "einx", "frozendict", "loguru", "torch_einops_utils",
          "pytorch_tabnet.tab_model", "pandas", "torchsde", "trampoline", "zuko"]:
    try:
        mod = importlib.import_module(m)
        print(f"{m:16s} {getattr(mod, '__version__', '?'):12s} {getattr(mod, '__file__', '')}")
    except Exception as e:
        print(f"{m:16s} MISSING {type(e).__name__}: {e}")
PYEOF
  echo "PKGS:$PKGS"
  $PY -m pip list 2>/dev/null
} > "$WORK/logs/environment.txt" 2>&1

$PY "$RT/bench/runtime/trace_syncs.py" selftest > "$WORK/logs/selftest.log" 2>&1; echo "selftest rc=$?" >> "$WORK/logs/selftest.log"

run_one() {
  pkg=$1; scen=$2
  now=$(date +%s); el=$((now - RT_START)); left=$((RT_DEADLINE - el))
  log="$RT_WORK/logs/$pkg.$scen.log"
  if [ "$left" -le 0 ]; then echo "SKIPPED: deadline passed before start" > "$log"; echo "$pkg/$scen skipped"; return 0; fi
  t=$RT_SCEN_TIMEOUT; [ "$left" -lt "$t" ] && t=$left; [ "$t" -lt 30 ] && t=30
  s0=$(date +%s)
  timeout -k 10 "$t" $PY "$RT_SRC/../bench/runtime/trace_syncs.py" run --workload "$RT_SRC/../bench/runtime/workloads/$pkg.py" \
      --scenario "$scen" --out "$RT_WORK/raw/$pkg" > "$log" 2>&1
  rc=$?
  echo "rc=$rc wall=$(( $(date +%s) - s0 ))s timeout=${t}s" >> "$log"
  echo "$pkg/$scen rc=$rc $(( $(date +%s) - s0 ))s"
}
export -f run_one

: > "$WORK/jobs.txt"
for pkg in $PKGS; do
  for s in $($PY "$RT/bench/runtime/trace_syncs.py" list --workload "$RT/bench/runtime/workloads/$pkg.py"); do
    echo "$pkg $s" | grep -E -- "$ONLY" >> "$WORK/jobs.txt" || true
  done
done
# longest first (the model zoos, litgpt and timm training, diffusers' sampling sweeps, sb3's learners, monai's
# networks and training, botorch's loops, e3nn's models, pyro's MCMC), then the rest
LONG_RE='^(timm zoo|litgpt model_zoo|litgpt (pretrain|finetune)|timm train|diffusers (schedulers|pipelines)|stable_baselines3|monai (networks|seg)|botorch|e3nn train|pyro mcmc)'
{ grep -E "$LONG_RE" "$WORK/jobs.txt"; grep -vE "$LONG_RE" "$WORK/jobs.txt"; } > "$WORK/jobs.sorted"
echo "$(wc -l < "$WORK/jobs.sorted") scenarios, $JOBS at a time"
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$WORK/jobs.sorted" | tee "$WORK/logs/jobs.log"

{
  echo "== wall $(( $(date +%s) - START ))s"; cat "$WORK/logs/selftest.log"
  for pkg in $PKGS; do
    [ -d "$WORK/raw/$pkg" ] || { echo "$pkg: no results"; continue; }
    $PY "$RT/bench/runtime/trace_syncs.py" merge --in "$WORK/raw/$pkg" --out "$WORK/results/$pkg"
  done
  for f in "$WORK"/logs/*.log; do
    if ! grep -q "rc=0 " "$f" 2>/dev/null && [[ "$f" != *selftest* && "$f" != *jobs* && "$f" != *pip-install* ]]; then
      echo "---- $(basename "$f") (last lines)"; tail -n 25 "$f"
    fi
  done
} > "$WORK/summary.txt" 2>&1
cp "$WORK/summary.txt" "$OUT/summary.txt"
cp "$WORK/logs/environment.txt" "$OUT/environment.txt"
tar czf "$OUT/results.tgz" -C "$WORK" results raw logs summary.txt
cat "$WORK/summary.txt"
