#!/usr/bin/env bash
# Multi-GPU checks on the device machine (nvidia-h200-x2 / -x4), one call: the Python package installed
# (scripts/gpu/python_stage.sh's way), the tensor-parallel and DDP / FSDP2 tests on every GPU, then the overlap
# benchmark under torchrun on every GPU and, on a machine of more than 2, on 2 of them too (both in one run).
# NVLink multicast stays off. Results in $OUT: pytest.log.gz, tp-overlap-<world>.md / .json / .log (the
# multi-GPU user check: scripts/gpu/user_checks.sh).
# Usage: OUT=... scripts/gpu/distributed_stage.sh [pytest timeout s, default 300] [more pytest files...]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
start=$(date +%s)
nvidia-smi -L
scripts/gpu/python_stage.sh "${1:-300}" -rfE tests/python/test_parallel_gpu.py tests/python/test_distributed_gpu.py "${@:2}"
rc=$?; echo "[$(( $(date +%s) - start )) s] tests rc $rc"
gzip -f "$OUT/pytest.log"
gpus=$(nvidia-smi -L | wc -l)
worlds="$gpus"
[ "$gpus" -gt 2 ] && worlds="$gpus 2"
for world in $worlds; do
  devices=$(seq -s, 0 $(( world - 1 )))
  CUDA_VISIBLE_DEVICES="$devices" PYTHONPATH="$PWD/build/python/site" timeout 200 \
    torchrun --nproc-per-node "$world" bench/python/tp_overlap.py --markdown "$OUT/tp-overlap-$world.md" \
    --json "$OUT/tp-overlap-$world.json" > "$OUT/tp-overlap-$world.log" 2>&1
  rc=$?; echo "[$(( $(date +%s) - start )) s] tp_overlap on $world GPUs rc $rc"
  cat "$OUT/tp-overlap-$world.md" 2>/dev/null || tail -30 "$OUT/tp-overlap-$world.log"
done
