#!/usr/bin/env bash
# One device call for the Python path and the torch.compile backend: the package installed
# (scripts/gpu/python_stage.sh), its GPU tests of the warm-call launch, the ops, the backend and tensor
# parallelism on one GPU; then the host cost per call, what the attention pass is worth on ViT-B/16
# (vit_attention.py) and the whole-model benchmark. Results in $OUT.
# Usage: OUT=... scripts/gpu/backend_stage.sh [models.py --models, default "resnet50 unet"] [batches, default "1 8 32 128"]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
start=$(date +%s)
nvidia-smi -L
git rev-parse HEAD 2>/dev/null || true
scripts/gpu/python_stage.sh 150 tests/python/test_gemm_gpu.py tests/python/test_ops_gpu.py \
  tests/python/test_ops_conv_gpu.py tests/python/test_backend_gpu.py tests/python/test_parallel_gpu.py
echo "[$(( $(date +%s) - start )) s] tests done"
export PYTHONPATH="$PWD/build/python/site"
timeout 60 python3 bench/python/host_cost.py --markdown "$OUT/host-cost.md" > "$OUT/host-cost.log" 2>&1
rc=$?; echo "[$(( $(date +%s) - start )) s] host cost rc $rc"; tail -20 "$OUT/host-cost.md" 2>/dev/null
timeout 150 python3 bench/python/vit_attention.py --batch 8 128 --markdown "$OUT/vit-attention.md" > "$OUT/vit-attention.log" 2>&1
rc=$?; echo "[$(( $(date +%s) - start )) s] vit attention rc $rc"; cat "$OUT/vit-attention.md" 2>/dev/null
left=$(( 570 - ($(date +%s) - start) ))
# shellcheck disable=SC2086
timeout "$left" python3 bench/python/models.py --models ${1:-resnet50 unet} --batch ${2:-1 8 32 128} --iters 40 --log \
  --json "$OUT/models.json" --markdown "$OUT/models.md" > "$OUT/models.log" 2>&1
rc=$?; echo "[$(( $(date +%s) - start )) s] models rc $rc"
cat "$OUT/models.md" 2>/dev/null
gzip -f "$OUT/models.log"
