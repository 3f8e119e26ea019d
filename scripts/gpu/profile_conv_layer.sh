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
# TILEFUSE_PROFILE_PEER=0 skips the peer's detail.
set -euo pipefail
build=$1 name=$2
shift 2
sub=conv2d
if [[ ${1:-} == gemm || ${1:-} == conv2d ]]; then sub=$1; shift; fi
OUT="${OUT:-.}"
bench=("$build/bench/tilefuse-bench" "$sub" "$@" --reps 3 --warmup-calls 1 --warmup-ms 1)
ncu=(ncu --clock-control none)

# 1. Every kernel: name, time, DRAM traffic, grid and block.
"${ncu[@]}" --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__shared_mem_per_block_dynamic,launch__registers_per_thread \
  "${bench[@]}" >"$OUT/ncu-$name-kernels.csv" 2>"$OUT/ncu-$name-kernels.err" || true

# The slowest kernel that is not tilefuse's, among those launched more than twice (cudnnFind's losing
# candidates run once or twice; the peer's timed kernel runs in every timing round). The whole table:
# scripts/gpu/ncu_kernel_table.py $OUT/ncu-<name>-kernels.csv.
# NOTES: under ncu every launch is serialized and replayed, so cudnnFind's and the benchmark's own
# timings of cuDNN's candidates mean nothing: in v56 the peers picked a CUDA-core algorithm. Read the
# tensor-core candidates (nvjet_*, *_xmma_*) from the kernel table instead.
peer=$(python3 "$(dirname "$0")/ncu_kernel_table.py" --slowest-other "$OUT/ncu-$name-kernels.csv") || peer=""
echo "peer kernel: ${peer:-none found}"

# 2. tilefuse's kernel and the peer's, in detail (a later launch of each: warm caches as in the timing),
# and for each the 40 SASS lines with the most warp-stall samples.
tmp=$(mktemp -d)
detail() {  # <label> <kernel regex>
  "${ncu[@]}" --set full --import-source no -k "regex:$2" --launch-skip 3 -c 1 -o "$tmp/$1" "${bench[@]}" >/dev/null 2>&1 || true
  [[ -f $tmp/$1.ncu-rep ]] || { echo "== $1: no report"; return; }
  echo "==================== $1 ($2) ===================="
  ncu -i "$tmp/$1.ncu-rep" --page details --print-details all 2>&1 || true
  echo "---- $1: SASS lines with the most stall samples ----"
  ncu -i "$tmp/$1.ncu-rep" --page source --csv --print-source sass 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
start = next((i for i, r in enumerate(rows) if any(h.startswith("Warp Stall Sampling (All") for h in r)), None)
if start is None: print("no stall-sampling column in the source page"); sys.exit()
head, rows = rows[start], rows[start:]
col = next((i for i, h in enumerate(head) if h.startswith("Warp Stall Sampling (All")), None)
if col is None: print("columns:", head); sys.exit()
src = head.index("Source") if "Source" in head else 1
key = lambda r: float((r[col] or "0").replace(",", "")) if len(r) > col else 0.0
total = sum(key(r) for r in rows[1:]) or 1.0
for r in sorted(rows[1:], key=key, reverse=True)[:40]:
    print(f"{100 * key(r) / total:5.1f}%  {r[0]:>6}  {r[src]}")
' || true
}
{
  detail tilefuse sm90_gemm_kernel
  [[ -n $peer && ${TILEFUSE_PROFILE_PEER:-1} != 0 ]] && detail peer "$peer"
} >"$OUT/ncu-$name-detail.txt"
rm -rf "$tmp"
echo "wrote $OUT/ncu-$name-kernels.csv and $OUT/ncu-$name-detail.txt"
