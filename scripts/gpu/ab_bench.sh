#!/usr/bin/env bash
# Same-run A/B of compiler flags: builds the benchmark twice (A: as is; B: with extra CUDA flags, e.g.
# -Xptxas -O2; the library itself has no build switches, its choices are Config members), then runs each tilefuse-bench invocation A B A B and prints, per
# row, tilefuse's median ms under each run beside the first peer's. Each invocation's four JSON files
# are merged into $OUT/ab-<i>.json; the table goes to stdout. Usage (device machine):
#   scripts/gpu/ab_bench.sh '<CUDA flags for B>' '<bench args>' ['<bench args>' ...]
set -euo pipefail
flags_b=$1
shift
OUT="${OUT:-.}"
archs="${TILEFUSE_CUDA_ARCHS:-90a}"
configure() {  # <dir> <extra CUDA flags>
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=OFF -DTILEFUSE_BUILD_BENCH=ON \
    -DTILEFUSE_CUDA_ARCHS="$archs" -DCMAKE_CUDA_FLAGS="$2" >/dev/null
  ninja -C "$1" bench/tilefuse-bench >/dev/null
}
configure build-ab-a ""
configure build-ab-b "$flags_b"
tmp=$(mktemp -d)
i=0
for args in "$@"; do
  read -r -a argv <<<"$args"
  for run in A0 B0 A1 B1; do
    dir=build-ab-a
    [[ $run == B* ]] && dir=build-ab-b
    "$dir/bench/tilefuse-bench" "${argv[@]}" --json "$tmp/$i-$run.json" >/dev/null
  done
  python3 - "$tmp" "$i" "$OUT/ab-$i.json" "$args" "$flags_b" <<'PY'
import json, sys
tmp, i, out, args, flags = sys.argv[1:6]
runs = {r: json.load(open(f"{tmp}/{i}-{r}.json")) for r in ("A0", "B0", "A1", "B1")}
json.dump({"args": args, "flags_b": flags, "runs": runs}, open(out, "w"))
print(f"## {args}  (B: {flags})")
print("| row | A0 | B0 | A1 | B1 | B/A (mean) | peer (A0) |")
print("|---|---:|---:|---:|---:|---:|---|")
def label(p):
    return p.get("layer") or f"{p.get('m')}x{p.get('n')}x{p.get('k')} {p.get('epilogue', '')}".strip()
for k, row in enumerate(runs["A0"]["rows"]):
    t = {r: runs[r]["rows"][k]["tilefuse"] for r in runs}
    ms = {r: t[r].get("median_ms", float("nan")) for r in runs}
    bad = [r for r in runs if t[r].get("state", "ok") != "ok"]
    ratio = (ms["B0"] + ms["B1"]) / (ms["A0"] + ms["A1"])
    peer = row["peers"][0] if row["peers"] else {"implementation": "-", "median_ms": float("nan")}
    note = f" ({','.join(bad)} not ok)" if bad else ""
    print(f"| {label(row['problem'])}{note} | " + " | ".join(f"{ms[r]:.4f}" for r in runs) +
          f" | {ratio:.3f} | {peer['implementation'][:24]} {peer['median_ms']:.4f} |")
for r, d in runs.items():
    print(r, "geomean speedups:", [(g["peer"], round(g["geomean_speedup"], 3)) for g in d.get("speedup_geomeans", [])])
print()
PY
  i=$((i + 1))
done
rm -rf "$tmp"
