#!/usr/bin/env bash
# Profiles one conv2d (or gemm) problem with Nsight Compute (hardware counters; needs a Firecracker machine, see
# the device notes): first every kernel the benchmark launches, with its duration, DRAM bytes and
# launch shape (which kernel cuDNN runs, how far from the copy bandwidth each one is), then tilefuse's
# kernel and the slowest other kernel of the run in detail (speed of light, memory, warp stalls, the
# SASS lines where warps stall). Writes $OUT/ncu-<name>-kernels.csv and $OUT/ncu-<name>-detail.txt.
# Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/profile_conv_layer.sh <build dir> <name> [gemm|conv2d] <tilefuse-bench arguments...>
#   e.g. scripts/gpu/profile_conv_layer.sh build-t l0 --n 64 --h 56 --w 56 --c 64 --k 64 --r 1 --s 1 --epilogue bias_relu_residual
#        scripts/gpu/profile_conv_layer.sh build-t fused8192 gemm --m 8192 --n 8192 --k 8192 --kernel sm90 --epilogue bias_gelu_residual
# TILEFUSE_PROFILE_PEER=0 skips the peer's detail; TILEFUSE_NCU_REPS (default 3) sets the timed calls per row.
set -euo pipefail
build=$1 name=$2
shift 2
sub=conv2d
if [[ ${1:-} == gemm || ${1:-} == conv2d ]]; then sub=$1; shift; fi
OUT="${OUT:-.}"
# --no-floor: the floor's start-up matmuls (cuBLAS 8192^3) would otherwise be the "slowest other kernel".
bench=("$build/bench/tilefuse-bench" "$sub" "$@" --reps "${TILEFUSE_NCU_REPS:-3}" --warmup-calls 1 --warmup-ms 1 --no-floor)
# TILEFUSE_NCU_CACHE=none keeps the L2 as the previous launch left it (as in the timed loop) instead of
# flushing it before every launch; TILEFUSE_NCU_TABLE_ONLY=1 stops after the kernel table.
ncu=(ncu --clock-control none ${TILEFUSE_NCU_CACHE:+--cache-control "$TILEFUSE_NCU_CACHE"})

# 1. Every kernel: name, time, DRAM traffic, grid and block.
"${ncu[@]}" --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__shared_mem_per_block_dynamic,launch__registers_per_thread \
  "${bench[@]}" >"$OUT/ncu-$name-kernels.csv" 2>"$OUT/ncu-$name-kernels.err" || true

# The slowest kernel that is not tilefuse's, among those launched more than twice (cudnnFind's losing
# candidates run once or twice; the peer's timed kernel runs in every timing round). The whole table:
# scripts/gpu/ncu_kernel_table.py $OUT/ncu-<name>-kernels.csv.
# NOTES: under ncu every launch is serialized and replayed, so cudnnFind's and the benchmark's own
# timings of cuDNN's candidates mean nothing: in v56 the peers picked a CUDA-core algorithm. Read the
# tensor-core candidates (nvjet_*, *_xmma_*) from the kernel table instead.
[[ ${TILEFUSE_NCU_TABLE_ONLY:-0} == 1 ]] && { echo "wrote $OUT/ncu-$name-kernels.csv"; exit 0; }
peer=$(python3 "$(dirname "$0")/ncu_kernel_table.py" --slowest-other "$OUT/ncu-$name-kernels.csv") || peer=""
echo "peer kernel: ${peer:-none found}"

# 2. tilefuse's kernel and the peer's, in detail (a later launch of each: warm caches as in the timing),
# and for each the 40 SASS lines with the most warp-stall samples.
tmp=$(mktemp -d)
source "$(dirname "$0")/ncu_detail.sh"
{
  detail tilefuse sm90_gemm_kernel
  [[ -n $peer && ${TILEFUSE_PROFILE_PEER:-1} != 0 ]] && detail peer "$peer"
} >"$OUT/ncu-$name-detail.txt"
rm -rf "$tmp"
echo "wrote $OUT/ncu-$name-kernels.csv and $OUT/ncu-$name-detail.txt"
