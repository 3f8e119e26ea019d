#!/usr/bin/env bash
# Same-run comparison of several build variants (ab_bench.sh generalised): builds the benchmark once per
# variant, the builds in parallel, then runs each tilefuse-bench invocation over the variants in the
# order A B C ... C B A and prints, per row, each variant's mean of its two medians and its ratio to
# the first variant's. Each invocation's runs are merged into $OUT/variants-<i>.json.
# Usage (device machine):
#   scripts/gpu/variants_bench.sh 'A=' 'B=-DTILEFUSE_X=1' ... -- '<bench args>' ['<bench args>' ...]
# The first variant is the baseline (usually no flags). Build directories: build-var-<name>. A variant
# written 'B=@VAR=value ...' is no build of its own: the first variant's binary run with those
# environment assignments (a runtime switch).
# BENCH_BINARY=<path>: the first variant's tilefuse-bench, already built (with its flags empty).
set -euo pipefail
OUT="${OUT:-.}"
archs="${TILEFUSE_CUDA_ARCHS:-90a}"
names=() flags=()
while [[ $# -gt 0 && $1 != -- ]]; do
  names+=("${1%%=*}")
  flags+=("${1#*=}")
  shift
done
[[ $# -gt 0 ]] && shift  # the --
(( ${#names[@]} >= 2 )) || { echo "usage: $0 'A=' 'B=<flags>' ... -- '<bench args>' ..." >&2; exit 2; }
builds=0
# Whether variant $1 needs a build of its own.
builds_own() { [[ ${flags[$1]} != @* ]] && ! [[ $1 == 0 && -n ${BENCH_BINARY:-} ]]; }
for v in "${!names[@]}"; do builds_own "$v" && builds=$((builds + 1)); done
(( builds >= 1 )) || builds=1
jobs=$(( $(nproc) / builds ))
(( jobs >= 1 )) || jobs=1
pids=()
# The binary and the environment of variant $1.
binary() {
  local v=$1
  [[ ${flags[$v]} == @* ]] && v=0
  if [[ $v == 0 && -n ${BENCH_BINARY:-} ]]; then echo "$BENCH_BINARY"; else echo "build-var-${names[$v]}/bench/tilefuse-bench"; fi
}
environment() { if [[ ${flags[$1]} == @* ]]; then echo "${flags[$1]#@}"; fi; }
for v in "${!names[@]}"; do
  builds_own "$v" || continue
  dir="build-var-${names[$v]}"
  (cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=OFF -DTILEFUSE_BUILD_BENCH=ON \
     -DTILEFUSE_CUDA_ARCHS="$archs" -DCMAKE_CUDA_FLAGS="${flags[$v]}" >/dev/null &&
   ninja -C "$dir" -j "$jobs" bench/tilefuse-bench >/dev/null) &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
order=()
for v in "${!names[@]}"; do order+=("$v:0"); done
for (( v = ${#names[@]} - 1; v >= 0; v-- )); do order+=("$v:1"); done
tmp=$(mktemp -d)
i=0
for args in "$@"; do
  read -r -a argv <<<"$args"
  for run in "${order[@]}"; do
    v=${run%%:*}
    # shellcheck disable=SC2046
    env $(environment "$v") "$(binary "$v")" "${argv[@]}" --json "$tmp/$i-${names[$v]}-${run#*:}.json" >/dev/null
  done
  python3 - "$tmp" "$i" "$OUT/variants-$i.json" "$args" "${names[*]}" "${flags[@]}" <<'PY'
import json, sys
tmp, i, out, args, names = sys.argv[1:6]
names, flags = names.split(), sys.argv[6:]
runs = {f"{n}-{p}": json.load(open(f"{tmp}/{i}-{n}-{p}.json")) for n in names for p in (0, 1)}
json.dump({"args": args, "variants": dict(zip(names, flags)), "runs": runs}, open(out, "w"))
print(f"## {args}")
print("variants: " + "; ".join(f"{n} = '{f}'" for n, f in zip(names, flags)))
print()
print("| row | " + " | ".join(f"{n} ms (run 1, run 2)" for n in names) + " | " +
      " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " | peer |")
print("|---|" + "---:|" * (2 * len(names) - 1) + "---|")
def label(p):
    return p.get("layer") or f"{p.get('m')}x{p.get('n')}x{p.get('k')} {p.get('epilogue', '')}".strip()
base = runs[f"{names[0]}-0"]["rows"]
for k, row in enumerate(base):
    mean, cells = {}, []
    for n in names:
        ms = [runs[f"{n}-{p}"]["rows"][k]["tilefuse"].get("median_ms", float("nan")) for p in (0, 1)]
        mean[n] = sum(ms) / 2
        cells.append(f"{mean[n]:.4f} ({ms[0]:.4f}, {ms[1]:.4f})")
    peer = row["peers"][0] if row["peers"] else {"implementation": "-", "median_ms": float("nan")}
    print(f"| {label(row['problem'])} | " + " | ".join(cells) + " | " +
          " | ".join(f"{mean[n] / mean[names[0]]:.3f}" for n in names[1:]) +
          f" | {peer['implementation'][:24]} {peer['median_ms']:.4f} |")
print()
PY
  i=$((i + 1))
done
rm -rf "$tmp"
