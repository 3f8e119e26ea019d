#!/usr/bin/env bash
# One device call: what the early launch (programmatic dependent launch of the Hopper kernel) has not yet been
# checked by: the conv dgrad / wgrad and planner GPU tests in C++, then the Python GPU tests of the paths that
# launch early (GEMM, Hopper conv, ops, the warm fast path). Usage (device machine): OUT=... scripts/gpu/launch_early_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
start=$(date +%s)
nvidia-smi -L
scripts/gpu/build_gpu_targets.sh tilefuse_gpu_tests || exit 1
echo "[$(( $(date +%s) - start )) s] built"
gt=$(find build -name tilefuse_gpu_tests -type f | head -1)
timeout 200 "$gt" --gtest_filter='Conv2dSm90Dgrad*:Conv2dSm90Wgrad*:GemmSelect.*:GemmSm90LaunchChain.*' > "$OUT/gtest.log" 2>&1
echo "gtest rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" "$OUT/gtest.log" | head -30
echo "[$(( $(date +%s) - start )) s] C++ tests done"
scripts/gpu/python_stage.sh "${PYTEST_TIMEOUT:-330}" -rfE tests/python/test_gemm_gpu.py tests/python/test_conv2d_sm90_gpu.py \
  tests/python/test_ops_gpu.py tests/python/test_fast_path_gpu.py
rc=$?
echo "[$(( $(date +%s) - start )) s] python rc $rc"
