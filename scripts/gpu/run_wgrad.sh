#!/usr/bin/env bash
# One device call for the Hopper wgrad's speed (issue 8): build tilefuse-bench and the GPU tests, run the
# wgrad, split-K and selection tests, then the wgrad benchmark on both layer sets beside cuDNN, the
# ResNet-50 wgrad under forced tiles, and Nsight Compute on one layer. Results under $OUT.
# Carry ["third_party/googletest"] (scripts/gpu/prepare_carry.sh).
# Usage: scripts/gpu/run_wgrad.sh [gtest filter] [forced tiles, default "large medium"] [ncu layer args]
#   (an empty string skips the tiles or the profile); MODES (default wgrad) and PRESETS (default
#   "resnet50 unet") choose the benchmark rows.
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
filter="${1:-*Wgrad*:Conv2dAuto.*:Conv2dSmall.*:*CanImplement*:GemmSelect.*:Conv2dSm90Select*}"
tiles="${2-large medium}"
ncu_layer="${3---n 64 --h 7 --w 7 --c 512 --k 2048 --r 1 --s 1 --pad 0 --mode wgrad}"
set -x
nvidia-smi -L
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_BUILD_BENCH=ON > $OUT/configure.log 2>&1
(time ninja -C bd -j16 bench/tilefuse-bench tests/gpu/tilefuse_gpu_tests) > $OUT/build.log 2>&1 || { tail -50 $OUT/build.log; exit 1; }
tail -3 $OUT/build.log
timeout "${TILEFUSE_TEST_TIMEOUT_S:-150}" bd/tests/gpu/tilefuse_gpu_tests --gtest_filter="$filter" --gtest_output=json:$OUT/gpu-tests.json > $OUT/gpu-tests.log 2>&1; echo "tests rc $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran" $OUT/gpu-tests.log | head -30
grep -B2 -A12 "Failure" $OUT/gpu-tests.log | head -60
for preset in ${PRESETS:-resnet50 unet}; do
  timeout "${TILEFUSE_BENCH_TIMEOUT_S:-120}" bd/bench/tilefuse-bench conv2d --preset $preset --mode "${MODES:-wgrad}" --dtype bf16 --json $OUT/bench-$preset.json > $OUT/bench-$preset.txt 2>&1; echo "bench $preset rc $?"
done
python3 scripts/gpu/summarize_bench_json.py $OUT
if [[ -n $tiles ]]; then
  MODE=wgrad timeout "${TILEFUSE_TILES_TIMEOUT_S:-150}" scripts/gpu/compare_conv_tiles.sh bd resnet50 none $tiles > $OUT/tiles.txt 2>&1; echo "tiles rc $?"
  cat $OUT/tiles.txt
fi
if [[ -n $ncu_layer ]]; then
  TILEFUSE_PROFILE_PEER=1 timeout "${TILEFUSE_NCU_TIMEOUT_S:-120}" scripts/gpu/profile_conv_layer.sh bd layer $ncu_layer > $OUT/ncu.log 2>&1; echo "ncu rc $?"
  tail -3 $OUT/ncu.log
  grep -E "Duration|Throughput|L2 Cache|DRAM|Registers|Achieved|Busy" $OUT/ncu-layer-detail.txt 2>/dev/null | head -60
fi
