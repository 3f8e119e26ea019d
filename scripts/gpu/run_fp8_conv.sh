#!/usr/bin/env bash
# One device call for the FP8 conv (issue 8): build the FP8 conv bench and the GPU tests, run the FP8
# conv, ScaledGemm and conv selection tests, then tilefuse-conv-fp8-bench. Results under $OUT.
# Carry ["third_party/googletest"] (scripts/gpu/prepare_carry.sh). Usage: scripts/gpu/run_fp8_conv.sh [gtest filter]
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
filter="${1:-Conv2dSm90Fp8*:Conv2dSmall.E4m3*:ScaledGemm.*:Conv2dSm90Select*}"
set -x
nvidia-smi -L
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_BUILD_BENCH=ON > $OUT/configure.log 2>&1
(time ninja -C bd -j16 bench/tilefuse-conv-fp8-bench tests/gpu/tilefuse_gpu_tests) > $OUT/build.log 2>&1 || { tail -50 $OUT/build.log; exit 1; }
tail -3 $OUT/build.log
timeout "${TILEFUSE_TEST_TIMEOUT_S:-200}" bd/tests/gpu/tilefuse_gpu_tests --gtest_filter="$filter" --gtest_output=json:$OUT/gpu-tests.json > $OUT/gpu-tests.log 2>&1; echo "tests rc $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran" $OUT/gpu-tests.log | head -30
grep -B2 -A12 "Failure" $OUT/gpu-tests.log | head -60
timeout "${TILEFUSE_BENCH_TIMEOUT_S:-240}" bd/bench/tilefuse-conv-fp8-bench > $OUT/conv-fp8-bench.md 2>&1; echo "bench rc $?"
cat $OUT/conv-fp8-bench.md | head -80
