#!/usr/bin/env bash
# The Python path's speed on the device machine, in one job: tilefuse-bench (the C++ device API beside cuDNN)
# on the ResNet-50 layers, then the same problems from Python (bench/python/conv_layers.py) and the ResNet-50
# training step (bench/python/resnet50_train.py), all on this GPU in this run. Results in $OUT/python-bench.tgz.
# With GEMM=1, the GEMM preset too (tilefuse-bench gemm --preset issue3 --kernel auto --split-k 0: the planner's
# kernel and split, what Python runs; then bench/python/gemm_shapes.py).
# With FP8=1, the FP8 shapes too (tilefuse-fp8-bench's default set: issue 7's four and 4096x7168x16384, then
# bench/python/fp8_shapes.py). CONV=0 skips the conv preset, its Python rows and the training step.
# PHASE=cpp runs only the install and the C++ benches, PHASE=python only the Python side, reading the C++ JSON
# that a PHASE=cpp call left in build/bench-json on the same (warm) machine: two calls where one would not fit.
# Usage: OUT=... [GEMM=1 [GEMM_PRESET=issue38-wide]] [FP8=1] [CONV=0] [PHASE=cpp|python] scripts/gpu/python_bench.sh [conv preset, default resnet50]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# Everything is written to a work folder and archived into $OUT/python-bench.tgz at the end: a device call brings
# back at most 8 files, and this script writes about 26.
RESULTS="${OUT:-gpu-out}"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
OUT="$(mktemp -d /tmp/python-bench.XXXXXX)"
trap 'tar czf "$RESULTS/python-bench.tgz" -C "$OUT" .' EXIT
preset="${1:-resnet50}"
export PATH="/usr/local/cuda/bin:${PATH}"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
t0=$(date +%s)
J=build/bench-json  # the C++ benches' JSON, kept between calls on a warm machine
phase="${PHASE:-all}"
mkdir -p "$J"
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi -L
git rev-parse HEAD 2>/dev/null || echo "commit: ${GIT_COMMIT:-unknown}"
if [[ "$phase" != python ]]; then
(python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > "$OUT/pip.log" 2>&1;
 echo "pip rc $?" >> "$OUT/pip.log") &
pip_pid=$!
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_BENCH=ON -DTILEFUSE_CUDA_ARCHS=90a \
  > "$OUT/configure.log" 2>&1 && ninja -C build bench/tilefuse-bench ${FP8:+bench/tilefuse-fp8-bench} \
  > "$OUT/build-bench.log" 2>&1
stamp "tilefuse-bench built (rc $?)"
if [[ "${CONV:-1}" != 0 ]]; then
  build/bench/tilefuse-bench conv2d --preset "$preset" --mode all --json "$J/cpp-$preset-all.json" > "$OUT/cpp-all.log" 2>&1
  build/bench/tilefuse-bench conv2d --preset "$preset" --epilogue bias_relu_residual --json "$J/cpp-$preset-fused.json" \
    > "$OUT/cpp-fused.log" 2>&1
fi
if [[ -n "${GEMM:-}" ]]; then
  build/bench/tilefuse-bench gemm --preset "${GEMM_PRESET:-issue3}" --kernel auto --split-k 0 --json "$J/cpp-gemm.json" > "$OUT/cpp-gemm.log" 2>&1
fi
if [[ -n "${FP8:-}" ]]; then
  build/bench/tilefuse-fp8-bench --json "$J/cpp-fp8.json" > "$OUT/cpp-fp8.log" 2>&1
  stamp "tilefuse-fp8-bench (rc $?)"
fi
stamp "tilefuse-bench done"
wait "$pip_pid"
tail -1 "$OUT/pip.log"
cp "$J"/*.json "$OUT"/ 2>/dev/null
fi
[[ "$phase" == cpp ]] && exit 0
export PYTHONPATH="$PWD/build/python/site"
if [[ "${CONV:-1}" != 0 ]]; then
  for kind in all fused; do
    python3 bench/python/conv_layers.py --cpp-json "$J/cpp-$preset-$kind.json" --json "$OUT/py-$preset-$kind.json" \
      --markdown "$OUT/py-$preset-$kind.md" > "$OUT/py-$kind.log" 2>&1
    stamp "python $kind (rc $?)"
    tail -6 "$OUT/py-$preset-$kind.md"
  done
fi
if [[ -n "${GEMM:-}" ]]; then
  python3 bench/python/gemm_shapes.py --cpp-json "$J/cpp-gemm.json" --json "$OUT/py-gemm.json" \
    --markdown "$OUT/py-gemm.md" > "$OUT/py-gemm.log" 2>&1
  stamp "python gemm (rc $?)"
  tail -3 "$OUT/py-gemm.md"
fi
if [[ -n "${FP8:-}" ]]; then
  python3 bench/python/fp8_shapes.py --cpp-json "$J/cpp-fp8.json" --json "$OUT/py-fp8.json" \
    --markdown "$OUT/py-fp8.md" > "$OUT/py-fp8.log" 2>&1
  stamp "python fp8 (rc $?)"
  tail -4 "$OUT/py-fp8.md"
fi
if [[ "${CONV:-1}" != 0 && "$preset" == resnet50 ]]; then
  python3 bench/python/resnet50_train.py --json "$OUT/resnet50-train.json" --markdown "$OUT/resnet50-train.md" \
    ${TILEFUSE_TRAIN_ARGS:-} > "$OUT/train.log" 2>&1
  stamp "training step (rc $?)"
  tail -4 "$OUT/train.log"
fi
