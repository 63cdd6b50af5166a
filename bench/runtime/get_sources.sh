#!/usr/bin/env bash
# Recreate the exact package sources the runtime traces were taken on (see SOURCES.md).
#
#   bench/runtime/get_sources.sh [DIR]      # default DIR=/work/runtime-src: the --src of score_runtime.py (SRC_PKGS picks)
#   bench/runtime/get_sources.sh --rt DIR   # lay out DIR/{srcwhl,src,whl,bench/runtime} for the GPU run
#
# DIR/<pkg> is each package directory (the one with __init__.py): litgpt, accelerate, timm, peft,
# diffusers, stable_baselines3, torch_geometric, kornia, gpytorch, botorch, pyro (pyro-ppl),
# torchdiffeq, e3nn, monai, pytorch_metric_learning, skorch, x_transformers, vector_quantize_pytorch,
# pytorch_tabnet, torchsde, zuko, and nanoGPT (its scripts, with an empty __init__.py added so the
# scorer takes the folder; likewise pytorch_tabnet, whose wheel has no __init__.py).
# With --rt, RT_PKGS (default: all) picks the packages that travel: their wheels go to DIR/srcwhl
# (run_all.sh unpacks them into DIR/src there, which keeps the carried size down), nanoGPT's scripts
# to DIR/src/nanogpt, and the wheels of the dependencies the GPU image lacks to DIR/whl.
# Needs pip (PyPI) and the nanoGPT git mirror (or network access to GitHub for a clone).
set -euo pipefail
RT=""
if [ "${1:-}" = "--rt" ]; then RT=${2:?--rt needs a directory}; DEST=$RT/src; else DEST=${1:-/work/runtime-src}; fi
PY=${PY:-python3}
NANOGPT_COMMIT=3adf61e154c3fe3fca428ad6bc3818b27a3b8291
NANOGPT_MIRROR=${NANOGPT_MIRROR:-/work/.mirror/karpathy+nanoGPT/repo}
declare -A WHEEL=(
  [litgpt]=litgpt==0.5.13 [accelerate]=accelerate==1.15.0 [timm]=timm==1.0.31 [peft]=peft==0.21.2
  [diffusers]=diffusers==0.42.1 [stable_baselines3]=stable-baselines3==2.9.2
  [torch_geometric]=torch-geometric==2.8.1 [kornia]=kornia==0.9.0
  [gpytorch]=gpytorch==1.15.2 [botorch]=botorch==0.18.1 [pyro]=pyro-ppl==1.9.2 [torchdiffeq]=torchdiffeq==0.2.5
  [e3nn]=e3nn==0.6.0 [monai]=monai==1.6.1 [pytorch_metric_learning]=pytorch-metric-learning==2.9.0
  [skorch]=skorch==1.4.0
  [x_transformers]=x-transformers==2.31.10 [vector_quantize_pytorch]=vector-quantize-pytorch==1.32.0
  [pytorch_tabnet]=pytorch-tabnet==4.1.0 [torchsde]=torchsde==0.2.6 [zuko]=zuko==1.6.0
)
# what the GPU image lacks, per package (pure Python unless a platform is named in PLATFORM_WHEELS)
declare -A DEPS=(
  [litgpt]="jsonargparse==4.41.0 docstring_parser==0.18.0 typeshed_client==2.15.0"
  [stable_baselines3]="gymnasium==1.4.0 farama-notifications==0.0.6"
  [pyro]="pyro-api==0.1.2"
  [x_transformers]="einx==0.4.3 frozendict==2.5.1 loguru==0.7.3 torch-einops-utils==0.2.0"
  [vector_quantize_pytorch]="einx==0.4.3 frozendict==2.5.1 loguru==0.7.3 torch-einops-utils==0.2.0"
  [torchsde]="trampoline==0.1.2"
)
declare -A PLATFORM_DEPS=([kornia]="kornia-rs==0.2.0")
ALL_PKGS="litgpt accelerate timm nanogpt peft diffusers stable_baselines3 torch_geometric kornia
  gpytorch botorch pyro torchdiffeq e3nn monai pytorch_metric_learning skorch
  x_transformers vector_quantize_pytorch pytorch_tabnet torchsde zuko"
PKGS=${RT_PKGS:-$ALL_PKGS}
[ -n "$RT" ] || PKGS=${SRC_PKGS:-$ALL_PKGS}   # SRC_PKGS picks packages for the --src layout too

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$DEST"
wheels=""
for p in $PKGS; do [ "$p" = nanogpt ] || wheels="$wheels ${WHEEL[$p]}"; done
if [ -n "$wheels" ]; then $PY -m pip download -q --no-deps --only-binary=:all: -d "$tmp/whl" $wheels; fi
if [ -n "$RT" ]; then
  mkdir -p "$RT/srcwhl"; rm -f "$RT"/srcwhl/*.whl
  if [ -n "$wheels" ]; then cp "$tmp"/whl/*.whl "$RT/srcwhl/"; fi
else
  for w in "$tmp"/whl/*.whl; do
    $PY - "$w" "$DEST" $PKGS <<'PYEOF'
import sys, zipfile, shutil, os
whl, dest, pkgs = sys.argv[1], sys.argv[2], set(sys.argv[3:])
with zipfile.ZipFile(whl) as z:
    tops = {n.split("/")[0] for n in z.namelist() if not n.split("/")[0].endswith((".dist-info", ".data"))}
    # only the package directories (botorch's and e3nn's wheels also carry build/, docs/, examples/, ...)
    tops = (tops & pkgs) or tops
    for t in tops:
        shutil.rmtree(os.path.join(dest, t), ignore_errors=True)
    z.extractall(dest, [n for n in z.namelist() if n.split("/")[0] in tops])
print("extracted", os.path.basename(whl), "->", ", ".join(sorted(tops)))
PYEOF
  done
fi
if [[ " $PKGS " == *" nanogpt "* ]]; then
  rm -rf "$DEST/nanogpt"; mkdir -p "$DEST/nanogpt"
  if [ -d "$NANOGPT_MIRROR" ]; then
    git --git-dir="$NANOGPT_MIRROR" archive "$NANOGPT_COMMIT" model.py train.py sample.py bench.py configurator.py | tar x -C "$DEST/nanogpt"
  else
    git clone -q https://github.com/karpathy/nanoGPT "$tmp/nanoGPT" && git -C "$tmp/nanoGPT" checkout -q "$NANOGPT_COMMIT"
    cp "$tmp"/nanoGPT/{model,train,sample,bench,configurator}.py "$DEST/nanogpt/"
  fi
  echo "nanoGPT $NANOGPT_COMMIT -> $DEST/nanogpt"
  [ -n "$RT" ] || : > "$DEST/nanogpt/__init__.py"   # the scorer wants a package directory; the GPU run has none
fi
# the scorer wants a package directory; pytorch_tabnet's wheel ships none (the GPU run imports it as a namespace package)
if [ -z "$RT" ] && [[ " $PKGS " == *" pytorch_tabnet "* ]]; then : > "$DEST/pytorch_tabnet/__init__.py"; fi
if [ -n "$RT" ]; then
  mkdir -p "$RT/whl"; rm -f "$RT"/whl/*.whl
  deps=""; pdeps=""
  for p in $PKGS; do deps="$deps ${DEPS[$p]:-}"; pdeps="$pdeps ${PLATFORM_DEPS[$p]:-}"; done
  deps=$(printf '%s\n' $deps | sort -u | tr '\n' ' ')   # packages that share a dependency name it once
  if [ -n "${deps// /}" ]; then $PY -m pip download -q --no-deps --only-binary=:all: -d "$RT/whl" $deps; fi
  # the GPU machine: x86-64, CPython 3.12
  if [ -n "${pdeps// /}" ]; then
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$RT/whl" $pdeps
  fi
  mkdir -p "$RT/bench"; rm -rf "$RT/bench/runtime"; cp -r "$(dirname "$0")" "$RT/bench/runtime"
  echo "GPU layout in $RT ($PKGS): srcwhl/ src/ whl/ bench/runtime/ ($(du -sh "$RT" | cut -f1))"
fi
