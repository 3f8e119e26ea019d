#!/usr/bin/env bash
# One device call for the Hopper dgrad and wgrad (issue 8): build tilefuse-bench and the GPU tests, run the
# dgrad, wgrad, coordinate and selection tests (and compute-sanitizer on the small Hopper dgrad and
# wgrad), then the conv2d benchmark in the given modes on the layer sets beside cuDNN. Optionally the
# ResNet-50 wgrad under forced tiles and Nsight Compute on one layer. Results under $OUT.
# Carry ["third_party/googletest"] (scripts/gpu/prepare_carry.sh).
# Usage: scripts/gpu/run_backward.sh [gtest filter] [bench modes, default dgrad,wgrad]
#   PRESETS (default "resnet50 unet"): the layer sets; TILES (e.g. "large medium"): also time the ResNet-50
#   wgrad under each forced tile (ab.sh tiles); NCU_LAYER (tilefuse-bench conv2d arguments): also
#   profile that layer (profile_conv_layer.sh).
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
filter="${1:-Conv2dSm90Dgrad*:Conv2dSm90Wgrad*:Conv2dSmall.*grad*:Conv2dCoordinates.*:Conv2dSm90Select*:Conv2dDgrad.*:Conv2dWgrad.*}"
modes="${2:-dgrad,wgrad}"
set -x
nvidia-smi -L
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_BUILD_BENCH=ON > $OUT/configure.log 2>&1
(time ninja -C bd -j16 bench/tilefuse-bench tests/gpu/tilefuse_gpu_tests) > $OUT/build.log 2>&1 || { tail -50 $OUT/build.log; exit 1; }
tail -3 $OUT/build.log
timeout "${TILEFUSE_TEST_TIMEOUT_S:-240}" bd/tests/gpu/tilefuse_gpu_tests --gtest_filter="$filter" --gtest_output=json:$OUT/gpu-tests.json > $OUT/gpu-tests.log 2>&1; echo "tests rc $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran" $OUT/gpu-tests.log | head -30
grep -B2 -A12 "Failure" $OUT/gpu-tests.log | head -60
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 bd/tests/gpu/tilefuse_gpu_tests --gtest_filter='Conv2dSmall.Bf16DgradSm90:Conv2dSmall.Bf16WgradSm90' > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"
tail -5 $OUT/memcheck.log
for preset in ${PRESETS:-resnet50 unet}; do
  timeout "${TILEFUSE_BENCH_TIMEOUT_S:-300}" bd/bench/tilefuse-bench conv2d --preset $preset --mode "$modes" --dtype bf16 --json $OUT/bench-$preset.json > $OUT/bench-$preset.txt 2>&1; echo "bench $preset rc $?"
  grep -v "^\s*$" $OUT/bench-$preset.txt | tail -45
done
python3 scripts/gpu/summarize_bench_json.py $OUT
if [[ -n ${TILES:-} ]]; then
  # shellcheck disable=SC2086
  MODE=wgrad timeout "${TILEFUSE_TILES_TIMEOUT_S:-150}" scripts/gpu/ab.sh tiles bd resnet50 none $TILES > $OUT/tiles.txt 2>&1; echo "tiles rc $?"
  cat $OUT/tiles.txt
fi
if [[ -n ${NCU_LAYER:-} ]]; then
  # shellcheck disable=SC2086
  timeout "${TILEFUSE_NCU_TIMEOUT_S:-120}" scripts/gpu/profile_conv_layer.sh bd layer $NCU_LAYER > $OUT/ncu.log 2>&1; echo "ncu rc $?"
  tail -3 $OUT/ncu.log
  grep -E "Duration|Throughput|L2 Cache|DRAM|Registers|Achieved|Busy" $OUT/ncu-layer-detail.txt 2>/dev/null | head -60
fi
