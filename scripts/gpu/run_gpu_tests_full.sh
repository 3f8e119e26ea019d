#!/usr/bin/env bash
# One device call: build the GPU tests and run all of them (or the gtest filter given), then
# compute-sanitizer memcheck on the small-shape subset. Results under $OUT. Carry
# ["third_party/googletest"] (scripts/gpu/prepare_carry.sh).
# Usage: scripts/gpu/run_gpu_tests_full.sh [gtest filter] [memcheck filter]
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
filter="${1:-*}"
memcheck_filter="${2:-Conv2dSmall.*:GemmSm90Small.*}"
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=ON \
  -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_BUILD_BENCH=OFF > "$OUT/configure.log" 2>&1
(time ninja -C bd -j"$(nproc)" tests/gpu/tilefuse_gpu_tests) > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
tail -3 "$OUT/build.log"
timeout "${TILEFUSE_TEST_TIMEOUT_S:-330}" bd/tests/gpu/tilefuse_gpu_tests --gtest_filter="$filter" \
  --gtest_output=json:"$OUT/gpu-tests.json" > "$OUT/gpu-tests.log" 2>&1
echo "tests rc $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$OUT/gpu-tests.log" | head -30
timeout "${TILEFUSE_MEMCHECK_TIMEOUT_S:-90}" compute-sanitizer --tool memcheck --error-exitcode 1 \
  bd/tests/gpu/tilefuse_gpu_tests --gtest_filter="$memcheck_filter" > "$OUT/memcheck.log" 2>&1
echo "memcheck rc $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | head -10
