#!/usr/bin/env bash
# Fetches the vLLM source trees that bench/ measures synclint on: the releases named by
# ../shared/eval/vllm_syncfix.jsonl (for recall.py) and 0.33.0 (for density.py and precision.py).
# vLLM's code is never copied into this repository; it lands in DIR, laid out as
# DIR/vllm/<version>/vllm/... (the layout score_sites.py --wheels DIR expects).
#
# Usage: bench/vllm_corpus.sh [DIR [VERSION...]]
#   DIR       default: $VLLM_SRC, else /work/vllm-src
#   VERSION   default: the corpus releases plus 0.33.0; releases already extracted are skipped
#
# It calls ../shared/eval/get_vllm_wheels.sh (beside this checkout) when that exists, and otherwise
# downloads the wheels itself with pip (PYTHON, default python3) and extracts only their .py files.
# Wheels are kept in DIR/.wheels unless KEEP_WHEELS=0.
set -euo pipefail

case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  -*) echo "vllm_corpus.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-${VLLM_SRC:-/work/vllm-src}}
shift || true
density_version=0.33.0
shared="$here/../../shared/eval/get_vllm_wheels.sh"

if [ -f "$shared" ]; then
  if [ $# -gt 0 ]; then
    bash "$shared" "$dir" "$@"
  else
    bash "$shared" "$dir"                       # its default: every release the corpus names
    bash "$shared" "$dir" "$density_version"
  fi
  exit 0
fi

# No shared/ beside the checkout: the releases vllm_syncfix.jsonl names, as of this writing.
corpus_versions="0.11.0 0.11.1 0.15.1 0.17.0 0.17.1 0.18.0 0.19.0 0.19.1 0.20.0 0.20.1 0.20.2 0.21.0 0.22.0 0.26.0 0.27.0 0.28.0"
if [ $# -gt 0 ]; then versions="$*"; else versions="$corpus_versions $density_version"; fi
python=${PYTHON:-python3}
mkdir -p "$dir/.wheels"
for v in $versions; do
  [ -d "$dir/vllm/$v/vllm" ] && continue
  platforms=()
  for tag in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_24 manylinux_2_17 manylinux2014; do
    platforms+=(--platform "${tag}_x86_64")
  done
  "$python" -m pip download -q --no-deps --only-binary :all: --python-version 3.12 "${platforms[@]}" \
    "vllm==$v" -d "$dir/.wheels"
  wheel=$(ls "$dir"/.wheels/vllm-"$v"-*.whl | head -1)
  # Only the .py files: the wheels are mostly compiled kernels.
  "$python" - "$wheel" "$dir/vllm/$v" <<'EOF'
import sys
import zipfile

wheel, dest = sys.argv[1:3]
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(dest, [n for n in zf.namelist() if n.startswith("vllm/") and n.endswith(".py")])
EOF
  [ "${KEEP_WHEELS:-1}" = 0 ] && rm -f "$wheel"
  echo "vllm $v -> $dir/vllm/$v"
done
