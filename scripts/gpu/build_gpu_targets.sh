#!/usr/bin/env bash
# Configures build/ for the Hopper GPU (tests, GPU tests, bench) and builds the given ninja targets with every
# core; logs in $OUT/cmake.log and $OUT/build.log, the first errors printed on failure. Shared by the device
# scripts. Usage: scripts/gpu/build_gpu_targets.sh <target>...
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_GPU_TESTS=ON \
  -DTILEFUSE_BUILD_BENCH=ON -DTILEFUSE_CUDA_ARCHS=90a > "$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
ninja -C build -j"$(nproc)" "$@" > "$OUT/build.log" 2>&1 || { grep -m20 -B2 -A10 error "$OUT/build.log"; exit 1; }
