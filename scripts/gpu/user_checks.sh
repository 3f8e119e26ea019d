#!/usr/bin/env bash
# The independent user checks on the device machine, one call: the Python package installed (python_stage.sh's
# way), then scripts/gpu/user_check_api.py and user_check_backend.py on GPU 0, and user_check_parallel.py under
# torchrun on every GPU where there are 2 or more (NVLink multicast off). About 8 minutes on 2 H200s.
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
for check in api backend; do
  CUDA_VISIBLE_DEVICES=0 timeout 300 python3 "scripts/gpu/user_check_$check.py" --markdown "$OUT/user-check-$check.md" \
    > "$OUT/user-check-$check.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  echo "[$(( $(date +%s) - start )) s] user_check_$check rc $rc"
  tail -2 "$OUT/user-check-$check.md" 2>/dev/null || tail -20 "$OUT/user-check-$check.log"
done
gpus=$(nvidia-smi -L | wc -l)
if [ "$gpus" -ge 2 ]; then
  timeout 580 torchrun --nproc-per-node "$gpus" scripts/gpu/user_check_parallel.py \
    --markdown "$OUT/user-check-parallel.md" > "$OUT/user-check-parallel.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  echo "[$(( $(date +%s) - start )) s] user_check_parallel on $gpus GPUs rc $rc"
  tail -2 "$OUT/user-check-parallel.md" 2>/dev/null || tail -20 "$OUT/user-check-parallel.log"
fi
grep -h -E "FAIL|TIMED OUT" "$OUT"/user-check-*.md 2>/dev/null | cut -c1-300 | head -20
exit $status
