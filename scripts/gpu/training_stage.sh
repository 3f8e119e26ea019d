#!/usr/bin/env bash
# One device call for the training path: the package installed (scripts/gpu/python_stage.sh) with the given
# GPU tests, then where a ResNet-50 training step's conv time goes (bench/python/resnet50_convs.py), the step
# itself beside torch eager with its host time and a cProfile (resnet50_train.py), and with VIT=1 the
# attention pass on ViT-B/16 (vit_attention.py); CONVS=0 skips the per-conv table; TRAIN_ARGS=--compile (with TRAIN_TIMEOUT=400) adds the step under torch.compile.
# Results in $OUT. Usage: OUT=... scripts/gpu/training_stage.sh [pytest files...]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
nvidia-smi -L
scripts/gpu/python_stage.sh 200 "${@:-tests/python/test_gemm_gpu.py}"
stamp "tests rc $?"
export PYTHONPATH="$PWD/build/python/site"
if [[ "${CONVS:-1}" == 1 ]]; then
  timeout 200 python3 bench/python/resnet50_convs.py --batch 64 --json "$OUT/resnet50-convs.json" \
    --markdown "$OUT/resnet50-convs.md" > "$OUT/resnet50-convs.log" 2>&1
  stamp "convs rc $?"; tail -8 "$OUT/resnet50-convs.log"
fi
# shellcheck disable=SC2086
timeout "${TRAIN_TIMEOUT:-120}" python3 bench/python/resnet50_train.py --json "$OUT/resnet50-train.json" \
  --markdown "$OUT/resnet50-train.md" --host-profile "$OUT/train-host-profile.txt" ${TRAIN_ARGS:-} > "$OUT/train.log" 2>&1
stamp "train rc $?"; tail -3 "$OUT/train.log"
timeout 60 python3 bench/python/host_cost.py --markdown "$OUT/host-cost.md" > "$OUT/host-cost.log" 2>&1
stamp "host cost rc $?"; cat "$OUT/host-cost.md"
if [[ -n "${VIT:-}" ]]; then
  left=$(( 575 - ($(date +%s) - start) ))
  timeout "$left" python3 bench/python/vit_attention.py --batch 8 128 --markdown "$OUT/vit-attention.md" \
    > "$OUT/vit-attention.log" 2>&1
  stamp "vit attention rc $?"; cat "$OUT/vit-attention.md" 2>/dev/null
fi
