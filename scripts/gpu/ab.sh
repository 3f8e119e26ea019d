#!/usr/bin/env bash
# Same-run comparisons on the device machine, one script with modes (each prints a table and writes its JSON
# under $OUT). The library has no build switches (its choices are Config members): to A/B a code change,
# build the older commit in a git worktree and compare the two trees with scripts/gpu/refactor_check.sh (build,
# then run: every preset old new new old); `variants` and `pairs` compare nvcc flags on one tree.
#
#   scripts/gpu/ab.sh variants 'A=' 'B=<CUDA flags>' ... -- '<bench args>' ...   build variants, order A B .. B A
#   scripts/gpu/ab.sh pairs '<CUDA flags for off>' '<binary> <args>' ...          against run_all.sh's build: off on on off
#   scripts/gpu/ab.sh tiles <build dir> <preset> <epilogue> <tile>...               a conv preset under each forced Hopper tile
#   scripts/gpu/ab.sh kernels <build dir> <label> '<shape args>' <kernel>:<epilogue>[:<split>]...   one GEMM shape per kernel
#   scripts/gpu/ab.sh timing ['<preset>:<modes>' ...]                              mirrored vs interleaved timing, clocks sampled
#
# Each mode's details are in the comment above its function.

# Same-run comparison of several build variants (two variants: the old A/B of flags): builds the benchmark once per
# variant, the builds in parallel, then runs each tilefuse-bench invocation over the variants in the
# order A B C ... C B A and prints, per row, each variant's mean of its two medians and its ratio to
# the first variant's. Each invocation's runs are merged into $OUT/variants-<i>.json.
# Usage (device machine):
#   scripts/gpu/ab.sh variants 'A=' 'B=-Xptxas -O1' ... -- '<bench args>' ['<bench args>' ...]
# The first variant is the baseline (usually no flags). Build directories: build-var-<name>. A variant
# written 'B=@VAR=value ...' is no build of its own: the first variant's binary run with those
# environment assignments (a runtime switch).
# BENCH_BINARY=<path>: the first variant's tilefuse-bench, already built (with its flags empty).
mode_variants() {
OUT="${OUT:-.}"
archs="${TILEFUSE_CUDA_ARCHS:-90a}"
names=() flags=()
while [[ $# -gt 0 && $1 != -- ]]; do
  names+=("${1%%=*}")
  flags+=("${1#*=}")
  shift
done
[[ $# -gt 0 ]] && shift  # the --
(( ${#names[@]} >= 2 )) || { echo "usage: $0 variants 'A=' 'B=<flags>' ... -- '<bench args>' ..." >&2; exit 2; }
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
}

# Same-run A/B of a build switch against an existing build (run_all.sh's, the "on" side): builds the
# named benchmark targets once more with extra CUDA flags (the "off" side, in build-off), then runs each
# invocation in the order off on on off and prints, per row, both sides' mean of their two tilefuse
# medians, their ratio and the peer's. Works for tilefuse-bench and tilefuse-fp8-bench JSON. All JSON
# goes into one archive, $OUT/ab-pairs.tgz (the device returns only a few files).
# Usage (device machine, after run_all.sh has built <build>):
#   scripts/gpu/ab.sh pairs '<CUDA flags for off>' '<binary> <args>' ['<binary> <args>' ...]
#   e.g. scripts/gpu/ab.sh pairs '-O2' 'tilefuse-fp8-bench --m 8192 --n 8192 --k 8192'
# (The library has no build switches: its choices are Config members. To A/B a code change, build the
# older commit in a git worktree and compare the two builds' binaries.)
mode_pairs() {
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
}

# Times one conv preset under each forced Hopper tile (tilefuse-bench --sm90-tile) and prints, per
# layer, tilefuse's median ms per tile beside the first peer's, so that the tile model and the
# schedules can be compared in one run. Each tile's JSON goes to $OUT/tiles-<preset>-<epilogue>.json
# (merged). Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/ab.sh tiles <build dir> <preset> <epilogue> <tile>...   (tile: auto, large, medium,
#   narrow, pingpong-narrow, pingpong-medium, wide). MODE=dgrad|wgrad (default fprop) times that mode instead.
mode_tiles() {
build=$1 preset=$2 epilogue=$3
shift 3
OUT="${OUT:-.}"
tmp=$(mktemp -d)
n=0
for tile in "$@"; do
  tile_flag=(); [[ $tile == auto ]] || tile_flag=(--sm90-tile "$tile")
  # Numbered, so that a tile named twice (A B A, for drift) keeps both runs.
  "$build/bench/tilefuse-bench" conv2d "${tile_flag[@]}" --preset "$preset" --mode "${MODE:-fprop}" --dtype bf16 --epilogue "$epilogue" --json "$tmp/$n.json" >/dev/null
  n=$((n + 1))
done
python3 - "$tmp" "$OUT/tiles-$preset-$epilogue.json" "$@" <<'PY'
import json, sys
tmp, out, tiles = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = {f"{i}:{t}": json.load(open(f"{tmp}/{i}.json")) for i, t in enumerate(tiles)}
json.dump(runs, open(out, "w"))
tiles = list(runs)
first = runs[tiles[0]]
print("| layer | " + " | ".join(tiles) + " | peer (first run) |")
print("|---|" + "---:|" * (len(tiles) + 1))
for i, row in enumerate(first["rows"]):
    cells = []
    for t in tiles:
        r = runs[t]["rows"][i]
        state = "" if r["tilefuse"].get("state") == "ok" else " " + str(r["tilefuse"].get("state"))
        cells.append(f"{r['tilefuse']['median_ms']:.4f}{state}")
    peer = row["peers"][0]
    print(f"| {row['problem']['layer']} | " + " | ".join(cells) + f" | {peer['implementation']} {peer['median_ms']:.4f} |")
for t in tiles:
    print(t, "geomean speedups:", [(g["peer"], round(g["geomean_speedup"], 3)) for g in runs[t]["speedup_geomeans"]])
PY
rm -rf "$tmp"
}

# Times one GEMM shape under each named kernel and epilogue (tilefuse-bench --kernel: auto, sm90,
# sm90-large, sm90-pingpong-wide, ...; --epilogue: none, bias_gelu_residual, ...), the list run twice in
# order (A B C A B C, for drift), and prints per run tilefuse's median ms beside the first peer's and
# beside the first entry's (same pass). The runs' JSON is merged into $OUT/kernels-<label>.json.
# Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/ab.sh kernels <build dir> <label> '<shape args>' <kernel>:<epilogue>[:<split-k>]...
#   e.g. ... build-t 8192 '--m 8192 --n 8192 --k 8192' auto:none auto:bias_gelu_residual sm90-pingpong-wide:bias_gelu_residual
mode_kernels() {
build=$1 label=$2 problem=$3
shift 3
OUT="${OUT:-.}"
tmp=$(mktemp -d)
read -r -a argv <<<"$problem"
runs=()
for pass in 0 1; do
  for entry in "$@"; do
    IFS=: read -r kernel epilogue split <<<"$entry"  # kernel:epilogue[:split-k]
    "$build/bench/tilefuse-bench" gemm "${argv[@]}" --kernel "$kernel" --epilogue "$epilogue" \
      ${split:+--split-k "$split"} --json "$tmp/$pass-$entry.json" >/dev/null
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
}

# One device call: the conv benchmark's two timing methods side by side, with the SM clock and power
# sampled by nvidia-smi throughout (docs/notes/conv_sm90.md v129: the default mirrored halves ran cuDNN's
# passes at the boost clock and ours at the 700 W cap; --interleave times call by call in turn, each
# implementation of a round on its own operand set). For each preset and mode list: mirrored, then
# interleaved, then mirrored again (the drift between the two mirrored runs bounds the noise). Writes
# $OUT/timing-methods.tgz (JSONs, the nvidia-smi trace with the runs' start and end times, a summary).
# Usage (device machine, repository root): scripts/gpu/ab.sh timing ['<preset>:<modes>' ...]
#   default: 'resnet50:fprop,dgrad,wgrad' 'unet:fprop'; the mode 'fused' is fprop with --epilogue
#   bias_relu_residual (beside cuDNN's fused call and cuDNN + elementwise).
mode_timing() {
OUT="${OUT:-gpu-out}"
R="$OUT/timing-methods"; mkdir -p "$R"
cmake -S . -B bd -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_CUDA_ARCHS=90a -DTILEFUSE_BUILD_TESTS=OFF \
  -DTILEFUSE_BUILD_BENCH=ON > "$R/configure.log" 2>&1
ninja -C bd -j"$(nproc)" bench/tilefuse-bench > "$R/build.log" 2>&1 || { tail -30 "$R/build.log"; exit 1; }
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 100 > "$R/nvidia-smi.csv" &
smi=$!
sets=("$@")
(( ${#sets[@]} > 0 )) || sets=("resnet50:fprop,dgrad,wgrad" "unet:fprop")
for s in "${sets[@]}"; do
  preset=${s%%:*} modes=${s#*:}
  extra=(); tag=$preset
  [[ $modes == fused ]] && { modes=fprop; extra=(--epilogue bias_relu_residual); tag=$preset-fused; }
  for method in mirrored interleaved mirrored2; do
    flag=("${extra[@]}"); [[ $method == interleaved ]] && flag+=(--interleave)
    echo "$(date +%H:%M:%S.%N) start $tag $modes $method" >> "$R/runs.txt"
    timeout "${TILEFUSE_BENCH_TIMEOUT_S:-150}" bd/bench/tilefuse-bench conv2d --preset "$preset" --mode "$modes" \
      --dtype bf16 "${flag[@]}" --json "$R/$tag-$method.json" > "$R/$tag-$method.txt" 2>&1
    rc=$?
    echo "$(date +%H:%M:%S.%N) end $tag $modes $method rc $rc" >> "$R/runs.txt"
  done
done
kill "$smi"
for f in "$R"/*.json; do
  python3 - "$f" <<'PY' >> "$R/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[1].rsplit('/', 1)[-1], d["method"].get("order", "mirrored halves"))
for g in d["speedup_geomeans"]:
    print(f"  {g['mode']:6} vs {g['peer']:22} {g['geomean_speedup']:.3f}")
PY
done
# Mean SM clock and power over each run's window (both implementations together).
python3 - "$R/runs.txt" "$R/nvidia-smi.csv" <<'PY' >> "$R/summary.txt"
import sys
def secs(t):
    h, m, s = t.split(":"); return int(h) * 3600 + int(m) * 60 + float(s)
samples = []
for line in open(sys.argv[2]):
    f = [x.strip() for x in line.split(",")]
    try: samples.append((secs(f[0].split()[-1]), float(f[1].split()[0]), float(f[2].split()[0])))
    except (ValueError, IndexError): pass
starts = {}
for line in open(sys.argv[1]):
    f = line.split()
    key = " ".join(f[2:5])
    if f[1] == "start": starts[key] = secs(f[0])
    elif key in starts:
        w = [s for s in samples if starts[key] <= s[0] <= secs(f[0])]
        if w: print(f"{key:40} {len(w):4} samples  SM {sum(s[1] for s in w)/len(w):6.0f} MHz  {sum(s[2] for s in w)/len(w):5.0f} W")
PY
cat "$R/runs.txt" "$R/summary.txt"
tar czf "$OUT/timing-methods.tgz" -C "$OUT" timing-methods && rm -rf "$R"
}

set -euo pipefail
mode="${1:-}"
case "$mode" in
  variants|pairs|tiles|kernels) shift; "mode_$mode" "$@" ;;
  timing) shift; set +e; mode_timing "$@" ;;  # its stages report their own failures and go on
  *) sed -n "2,12p" "$0" >&2; exit 2 ;;
esac
