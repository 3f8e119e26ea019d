#!/usr/bin/env bash
# One device call for the early launch (programmatic dependent launch): build, tilefuse-launch-chain (chains of
# GEMMs strict / early beside cuBLAS, stream and graph), then the Hopper GEMM, conv and FP8 GPU tests, all of
# which now launch early. Usage (device machine): OUT=... scripts/gpu/launch_chain.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
start=$(date +%s)
nvidia-smi -L
scripts/gpu/build_gpu_targets.sh tilefuse_launch_chain tilefuse_gpu_tests || exit 1
echo "[$(( $(date +%s) - start )) s] built"
chain=$(find build -name tilefuse-launch-chain -type f | head -1)
timeout 150 "$chain" --reps 15 | tee "$OUT/launch-chain.md"
echo "[$(( $(date +%s) - start )) s] chains timed"
gt=$(find build -name tilefuse_gpu_tests -type f | head -1)
timeout "${TEST_TIMEOUT:-200}" "$gt" --gtest_filter='GemmSm90*:GemmSelect.*:Conv2dSm90*:ScaledGemm.*' > "$OUT/gtest.log" 2>&1
echo "gtest rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests? ran" "$OUT/gtest.log" | head -30
echo "[$(( $(date +%s) - start )) s] done"
