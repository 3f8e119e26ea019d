#!/usr/bin/env bash
# One device call: the conv benchmark's two timing methods side by side, with the SM clock and power
# sampled by nvidia-smi throughout (docs/notes/conv_sm90.md v129: the default mirrored halves ran cuDNN's
# passes at the boost clock and ours at the 700 W cap; --interleave times call by call in turn, each
# implementation of a round on its own operand set). For each preset and mode list: mirrored, then
# interleaved, then mirrored again (the drift between the two mirrored runs bounds the noise). Writes
# $OUT/timing-methods.tgz (JSONs, the nvidia-smi trace with the runs' start and end times, a summary).
# Usage (device machine, repository root): scripts/gpu/compare_timing_methods.sh ['<preset>:<modes>' ...]
#   default: 'resnet50:fprop,dgrad,wgrad' 'unet:fprop'; the mode 'fused' is fprop with --epilogue
#   bias_relu_residual (beside cuDNN's fused call and cuDNN + elementwise).
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
  extra=(); tag=$preset
  [[ $modes == fused ]] && { modes=fprop; extra=(--epilogue bias_relu_residual); tag=$preset-fused; }
  for method in mirrored interleaved mirrored2; do
    flag=("${extra[@]}"); [[ $method == interleaved ]] && flag+=(--interleave)
    echo "$(date +%H:%M:%S.%N) start $tag $modes $method" >> "$R/runs.txt"
    timeout "${TILEFUSE_BENCH_TIMEOUT_S:-150}" bd/bench/tilefuse-bench conv2d --preset "$preset" --mode "$modes" \
      --dtype bf16 "${flag[@]}" --json "$R/$tag-$method.json" > "$R/$tag-$method.txt" 2>&1
    echo "$(date +%H:%M:%S.%N) end $tag $modes $method rc $?" >> "$R/runs.txt"
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
