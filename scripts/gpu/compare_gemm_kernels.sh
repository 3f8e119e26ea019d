#!/usr/bin/env bash
# Times one GEMM shape under each named kernel and epilogue (tilefuse-bench --kernel: auto, sm90,
# sm90-large, sm90-pingpong-wide, ...; --epilogue: none, bias_gelu_residual, ...), the list run twice in
# order (A B C A B C, for drift), and prints per run tilefuse's median ms beside the first peer's and
# beside the first entry's (same pass). The runs' JSON is merged into $OUT/kernels-<label>.json.
# Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/compare_gemm_kernels.sh <build dir> <label> '<shape args>' <kernel>:<epilogue>...
#   e.g. ... build-t 8192 '--m 8192 --n 8192 --k 8192' auto:none auto:bias_gelu_residual sm90-pingpong-wide:bias_gelu_residual
set -euo pipefail
build=$1 label=$2 problem=$3
shift 3
OUT="${OUT:-.}"
tmp=$(mktemp -d)
read -r -a argv <<<"$problem"
runs=()
for pass in 0 1; do
  for entry in "$@"; do
    "$build/bench/tilefuse-bench" gemm "${argv[@]}" --kernel "${entry%%:*}" --epilogue "${entry#*:}" \
      --json "$tmp/$pass-$entry.json" >/dev/null
    runs+=("$pass-$entry")
  done
done
python3 - "$tmp" "$OUT/kernels-$label.json" "$problem" "${runs[@]}" <<'PY'
import json, sys
tmp, out, problem, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
data = {r: json.load(open(f"{tmp}/{r}.json")) for r in runs}
json.dump({"problem": problem, "runs": data}, open(out, "w"))
print(f"## {problem}")
print("| run | kernel | tilefuse ms | / first entry | first peer | peer ms | peer / ours |")
print("|---|---|---:|---:|---|---:|---:|")
for r, d in data.items():
    base = data[r.split("-", 1)[0] + "-" + runs[0].split("-", 1)[1]]["rows"][0]["tilefuse"]["median_ms"]
    row = d["rows"][0]
    t = row["tilefuse"]
    peer = row["peers"][0] if row["peers"] else {"implementation": "-", "median_ms": float("nan")}
    state = "" if t.get("state") == "ok" else f" ({t.get('state')})"
    ms = t.get("median_ms", float("nan"))
    print(f"| {r} | {row.get('tilefuse_describe', '')[:60]}{state} | {ms:.4f} | {ms / base:.3f} | {peer['implementation'][:28]} | "
          f"{peer['median_ms']:.4f} | {peer['median_ms'] / ms:.3f} |")
print()
PY
rm -rf "$tmp"
