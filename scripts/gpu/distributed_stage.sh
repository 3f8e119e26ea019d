#!/usr/bin/env bash
# Multi-GPU checks on the device machine (nvidia-h100-x2 / -x4), one call: the Python package installed
# (scripts/gpu/python_stage.sh's way), the tensor-parallel and DDP / FSDP tests on every GPU, then the overlap
# benchmark under torchrun. NVLink multicast stays off. Results in $OUT (pytest.log, tp-overlap.md/.json).
# Usage: OUT=... scripts/gpu/distributed_stage.sh [pytest timeout s, default 400]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
scripts/gpu/python_stage.sh "${1:-400}" tests/python/test_parallel_gpu.py tests/python/test_distributed_gpu.py
gpus=$(nvidia-smi -L | wc -l)
PYTHONPATH="$PWD/build/python/site" timeout 300 torchrun --nproc-per-node "$gpus" bench/python/tp_overlap.py \
  --markdown "$OUT/tp-overlap.md" --json "$OUT/tp-overlap.json" > "$OUT/tp-overlap.log" 2>&1
echo "tp_overlap rc $?"
tail -30 "$OUT/tp-overlap.md" 2>/dev/null || tail -30 "$OUT/tp-overlap.log"
