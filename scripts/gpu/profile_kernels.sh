#!/usr/bin/env bash
# Profiles chosen kernels of any benchmark command side by side with Nsight Compute (full set, one
# later launch each; see ncu_detail.sh), e.g. two variants of one kernel that should cost the same.
# Kernels are picked by regular expressions over their mangled names. Writes $OUT/ncu-<name>-detail.txt.
# Usage (device machine):
#   scripts/gpu/profile_kernels.sh <name> '<label>=<mangled-name regex>' ... -- <command...>
#   e.g. scripts/gpu/profile_kernels.sh fp8 'pertensor=6ScalarIXtl.*Li128ELi256E' \
#          'rowwise=12ColBroadcastIXtl.*Li128ELi256E' -- build/bench/tilefuse-fp8-bench --m 8192 --n 8192 --k 8192
set -euo pipefail
name=$1
shift
picks=()
while [[ $# -gt 0 && $1 != -- ]]; do picks+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
OUT="${OUT:-.}"
bench=("$@")
ncu=(ncu --clock-control none --kernel-name-base mangled)
tmp=$(mktemp -d)
source "$(dirname "$0")/ncu_detail.sh"
{
  for pick in "${picks[@]}"; do detail "${pick%%=*}" "${pick#*=}"; done
} >"$OUT/ncu-$name-detail.txt"
rm -rf "$tmp"
echo "wrote $OUT/ncu-$name-detail.txt"
