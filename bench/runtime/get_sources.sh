#!/usr/bin/env bash
# Recreate the exact package sources the runtime traces were taken on (see SOURCES.md).
#
#   bench/runtime/get_sources.sh [DIR]      # default DIR=/work/runtime-src: the --src of score_runtime.py
#   bench/runtime/get_sources.sh --rt DIR   # also lay out DIR/src + DIR/whl for the GPU run (DIR=/work/main/.rt)
#
# DIR/<pkg> is each package directory (the one with __init__.py): litgpt, accelerate, timm, and
# nanoGPT (its scripts, with an empty __init__.py added so the scorer takes the folder).
# Needs pip (PyPI) and the nanoGPT git mirror (or network access to GitHub for a clone).
set -euo pipefail
RT=""
if [ "${1:-}" = "--rt" ]; then RT=${2:?--rt needs a directory}; DEST=$RT/src; else DEST=${1:-/work/runtime-src}; fi
PY=${PY:-python3}
NANOGPT_COMMIT=3adf61e154c3fe3fca428ad6bc3818b27a3b8291
NANOGPT_MIRROR=${NANOGPT_MIRROR:-/work/.mirror/karpathy+nanoGPT/repo}
WHEELS="accelerate==1.15.0 timm==1.0.31 litgpt==0.5.13 peft==0.21.2"
EXTRA_WHEELS="jsonargparse==4.41.0 docstring_parser==0.18.0 typeshed_client==2.15.0"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$DEST"
$PY -m pip download -q --no-deps --only-binary=:all: -d "$tmp/whl" $WHEELS
for w in "$tmp"/whl/*.whl; do
  $PY - "$w" "$DEST" <<'PYEOF'
import sys, zipfile, shutil, os
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    tops = {n.split("/")[0] for n in z.namelist() if not n.split("/")[0].endswith((".dist-info", ".data"))}
    for t in tops:
        shutil.rmtree(os.path.join(dest, t), ignore_errors=True)
    z.extractall(dest, [n for n in z.namelist() if n.split("/")[0] in tops])
print("extracted", os.path.basename(whl), "->", ", ".join(sorted(tops)))
PYEOF
done
rm -rf "$DEST/nanogpt"; mkdir -p "$DEST/nanogpt"
if [ -d "$NANOGPT_MIRROR" ]; then
  git --git-dir="$NANOGPT_MIRROR" archive "$NANOGPT_COMMIT" model.py train.py sample.py bench.py configurator.py | tar x -C "$DEST/nanogpt"
else
  git clone -q https://github.com/karpathy/nanoGPT "$tmp/nanoGPT" && git -C "$tmp/nanoGPT" checkout -q "$NANOGPT_COMMIT"
  cp "$tmp"/nanoGPT/{model,train,sample,bench,configurator}.py "$DEST/nanogpt/"
fi
echo "nanoGPT $NANOGPT_COMMIT -> $DEST/nanogpt"
if [ -n "$RT" ]; then
  mkdir -p "$RT/whl"; rm -f "$RT"/whl/*.whl
  $PY -m pip download -q --no-deps --only-binary=:all: -d "$RT/whl" $EXTRA_WHEELS
  mkdir -p "$RT/bench"; rm -rf "$RT/bench/runtime"; cp -r "$(dirname "$0")" "$RT/bench/runtime"
  echo "GPU layout in $RT: src/ whl/ bench/runtime/ ($(du -sh "$RT" | cut -f1))"
else
  : > "$DEST/nanogpt/__init__.py"   # the scorer wants a package directory; the GPU run has none
fi
