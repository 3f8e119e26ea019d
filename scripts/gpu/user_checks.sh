#!/usr/bin/env bash
# The independent user checks on the device machine, one call: the Python package installed (python_stage.sh's
# way), then scripts/gpu/user_check_api.py and user_check_backend.py on GPU 0, and user_check_parallel.py under
# torchrun on every GPU where there are 2 or more (NVLink multicast off). About 5 minutes on 2 H200s (pip 55-70 s,
# the API check ~30, the backend ~140, the parallel one ~25 plus torchrun's start); the timeouts keep it under 600 s.
# Results in $OUT: user-check-{api,backend,parallel}.md / .log. Usage: OUT=... scripts/gpu/user_checks.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:${PATH}" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > "$OUT/pip.log" 2>&1 ||
  { echo "pip install failed"; tail -30 "$OUT/pip.log"; exit 1; }
echo "[$(( $(date +%s) - start )) s] pip install"
export PYTHONPATH="$PWD/build/python/site"
status=0
# the backend check times ResNet-50 at batch 8 instead of 32 once 150 s have passed before its timing row, and skips
# that row past 270 s: inside its 300 s timeout (pip 85 + 90 + 300 + 120 s at the worst: under 600)
for check in "api 90" "backend 300 --budget-s 150"; do
  set -- $check
  check=$1 limit=$2
  CUDA_VISIBLE_DEVICES=0 timeout "$limit" python3 "scripts/gpu/user_check_$check.py" --markdown "$OUT/user-check-$check.md" \
    "${@:3}" > "$OUT/user-check-$check.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  echo "[$(( $(date +%s) - start )) s] user_check_$check rc $rc"
  tail -2 "$OUT/user-check-$check.md" 2>/dev/null || tail -20 "$OUT/user-check-$check.log"
done
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -ge 2 ]; then
  timeout 120 torchrun --nproc-per-node "$gpus" scripts/gpu/user_check_parallel.py \
    --markdown "$OUT/user-check-parallel.md" --check-timeout 90 --total-timeout 115 \
    > "$OUT/user-check-parallel.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  echo "[$(( $(date +%s) - start )) s] user_check_parallel on $gpus GPUs rc $rc"
  tail -2 "$OUT/user-check-parallel.md" 2>/dev/null || tail -20 "$OUT/user-check-parallel.log"
fi
grep -h -E "FAIL|TIMED OUT" "$OUT"/user-check-*.md 2>/dev/null | cut -c1-300 | head -20
exit $status
