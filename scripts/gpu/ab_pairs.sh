#!/usr/bin/env bash
# Same-run A/B of a build switch against an existing build (run_all.sh's, the "on" side): builds the
# named benchmark targets once more with extra CUDA flags (the "off" side, in build-off), then runs each
# invocation in the order off on on off and prints, per row, both sides' mean of their two tilefuse
# medians, their ratio and the peer's. Works for tilefuse-bench and tilefuse-fp8-bench JSON. All JSON
# goes into one archive, $OUT/ab-pairs.tgz (the device returns only a few files).
# Usage (device machine, after run_all.sh has built <build>):
#   scripts/gpu/ab_pairs.sh '<CUDA flags for off>' '<binary> <args>' ['<binary> <args>' ...]
#   e.g. scripts/gpu/ab_pairs.sh '-O2' 'tilefuse-fp8-bench --m 8192 --n 8192 --k 8192'
# (The library has no build switches: its choices are Config members. To A/B a code change, build the
# older commit in a git worktree and compare the two builds' binaries.)
set -euo pipefail
flags_off=$1
shift
OUT="${OUT:-.}"
on_dir="${TILEFUSE_GPU_BUILD_DIR:-build}"
archs="${TILEFUSE_CUDA_ARCHS:-90a}"
targets=()
for inv in "$@"; do targets+=("bench/${inv%% *}"); done
cmake -S . -B build-off -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=OFF -DTILEFUSE_BUILD_BENCH=ON \
  -DTILEFUSE_CUDA_ARCHS="$archs" -DCMAKE_CUDA_FLAGS="$flags_off" >/dev/null
ninja -C build-off $(printf '%s\n' "${targets[@]}" | sort -u) >/dev/null
dir="$OUT/ab-pairs"
mkdir -p "$dir"
i=0
for inv in "$@"; do
  read -r -a argv <<<"$inv"
  for run in off-0 on-0 on-1 off-1; do
    build=build-off
    [[ $run == on-* ]] && build="$on_dir"
    "$build/bench/${argv[0]}" "${argv[@]:1}" --json "$dir/$i-$run.json" >/dev/null
  done
  python3 - "$dir" "$i" "$inv" "$flags_off" <<'PY'
import json, sys
d, i, inv, flags = sys.argv[1:5]
runs = {r: json.load(open(f"{d}/{i}-{r}.json"))["rows"] for r in ("off-0", "on-0", "on-1", "off-1")}
def ms(row):
    if "tilefuse_ms" in row: return row["tilefuse_ms"], row.get("cublaslt_ms", float("nan"))
    t = row["tilefuse"].get("median_ms", float("nan"))
    peers = row.get("peers") or []
    return t, (peers[0].get("median_ms", float("nan")) if peers else float("nan"))
def label(row):
    if "scales" in row: return f"{row['m']}x{row['n']}x{row['k']} {row['scales']} {row['accumulation']}"
    p = row.get("problem", row)
    return p.get("layer") or f"{p.get('m')}x{p.get('n')}x{p.get('k')} {p.get('epilogue', '')}".strip()
print(f"## {inv}  (off: {flags})")
print("| row | off ms | on ms | on / off | peer ms (on runs) |")
print("|---|---:|---:|---:|---:|")
for k, row in enumerate(runs["off-0"]):
    off = (ms(runs["off-0"][k])[0] + ms(runs["off-1"][k])[0]) / 2
    on = (ms(runs["on-0"][k])[0] + ms(runs["on-1"][k])[0]) / 2
    peer = (ms(runs["on-0"][k])[1] + ms(runs["on-1"][k])[1]) / 2
    print(f"| {label(row)} | {off:.4f} | {on:.4f} | {on / off:.3f} | {peer:.4f} |")
print()
PY
  i=$((i + 1))
done
tar czf "$OUT/ab-pairs.tgz" -C "$OUT" ab-pairs && rm -rf "$dir"
