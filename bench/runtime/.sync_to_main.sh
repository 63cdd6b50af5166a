#!/bin/sh
# copy bench/runtime to /work/main/.rt/bench/runtime (what the GPU machine receives)
set -e
rm -rf /work/main/.rt/bench/runtime && mkdir -p /work/main/.rt/bench && cp -r "$(dirname "$0")" /work/main/.rt/bench/runtime
find /work/main/.rt/bench -name __pycache__ -prune -exec rm -rf {} +
