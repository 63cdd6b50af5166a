#!/usr/bin/env bash
# The CUDA proof of `synclint verify`, in one command on a GPU machine, from the repository root:
#
#   bash bench/verify_cuda.sh [more `synclint verify` arguments]
#
# 1. `synclint verify --device cuda` over every fixture: bench/results/verify-cuda.json and .log;
# 2. the GPU-only tests: the CPU simulation agrees with CUDA's debug mode on every catalogue row,
#    and the pytest plugin finds planted syncs with the debug mode (bench/results/verify-cuda-tests.log).
#
# Needs python3 with torch (CUDA), rich and pyyaml, as the device tool's GPU image has them. libcst is not
# there: put its wheel in .whl/ (ignored by git) and carry that folder, e.g. here
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl libcst==1.9.0
# synclint runs from the working tree (PYTHONPATH), nothing is installed in the image's environment.
# When $OUT is set (the device tool), the results are copied there so that they come back.
# Exit status: that of `synclint verify` (0 all verified, 1 a fixed kernel still syncs/waits/differs, 2 error),
# or 3 if only the GPU tests failed.
set -uo pipefail
cd "$(dirname "$0")/.."

if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || exit 2
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1 COLUMNS=200 PYTHONDONTWRITEBYTECODE=1

python3 -c 'import importlib.metadata as m, torch, libcst, rich; print("torch", torch.__version__, "CUDA",
    torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else "NO GPU",
    "| libcst", m.version("libcst"), "| rich", m.version("rich"))' || exit 2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>/dev/null

mkdir -p bench/results
python3 -m synclint verify --device cuda --json bench/results/verify-cuda.json "$@" 2>&1 | tee bench/results/verify-cuda.log
status=${PIPESTATUS[0]}

python3 -m pytest -q -p no:cacheprovider -o addopts="" \
    "tests/test_verify.py::test_simulation_agrees_with_cuda_on_every_catalogue_row" \
    "tests/test_pytest_plugin.py::test_on_a_gpu_the_debug_mode_finds_the_planted_sites" \
    2>&1 | tee bench/results/verify-cuda-tests.log
tests=${PIPESTATUS[0]}

if [ -n "${OUT:-}" ]; then
    cp bench/results/verify-cuda.json bench/results/verify-cuda.log bench/results/verify-cuda-tests.log "$OUT"/ 2>/dev/null
fi
echo "synclint verify exit status: $status; GPU tests exit status: $tests"
if [ "$status" -ne 0 ]; then exit "$status"; fi
if [ "$tests" -ne 0 ]; then exit 3; fi
exit 0
