#!/usr/bin/env bash
# One device call: the conv benchmark's two timing methods side by side, with the SM clock and power
# sampled by nvidia-smi throughout (docs/notes/conv_sm90.md v129: the default mirrored halves ran cuDNN's
# passes at the boost clock and ours at the 700 W cap; --interleave times call by call in turn, each
# implementation of a round on its own operand set). For each preset and mode list: mirrored, then
# interleaved, then mirrored again (the drift between the two mirrored runs bounds the noise). Writes
# $OUT/timing-methods.tgz (JSONs, the nvidia-smi trace with the runs' start and end times, a summary).
# Usage (device machine, repository root): scripts/gpu/compare_timing_methods.sh ['<preset>:<modes>' ...]
#   default: 'resnet50:fprop,dgrad,wgrad' 'unet:fprop'
set -uo pipefail
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
  for method in mirrored interleaved mirrored2; do
    flag=(); [[ $method == interleaved ]] && flag=(--interleave)
    echo "$(date +%H:%M:%S.%N) start $preset $modes $method" >> "$R/runs.txt"
    timeout "${TILEFUSE_BENCH_TIMEOUT_S:-150}" bd/bench/tilefuse-bench conv2d --preset "$preset" --mode "$modes" \
      --dtype bf16 "${flag[@]}" --json "$R/$preset-$method.json" > "$R/$preset-$method.txt" 2>&1
    echo "$(date +%H:%M:%S.%N) end $preset $modes $method rc $?" >> "$R/runs.txt"
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
cat "$R/runs.txt" "$R/summary.txt"
tar czf "$OUT/timing-methods.tgz" -C "$OUT" timing-methods && rm -rf "$R"
