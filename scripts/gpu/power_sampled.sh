#!/usr/bin/env bash
# One GEMM shape under several tilefuse kernels, each run alone (tilefuse-bench --peers none) with nvidia-smi
# sampling the SM clock and the board power every 20 ms; the list run twice in order. Prints, per run, the
# median time and the median clock / power over the samples taken while the GPU was busy, so that a time ratio
# can be split into cycles and clock (a kernel held at the power cap runs at a lower clock).
# Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/power_sampled.sh <build dir> <label> '<shape args>' <kernel>:<epilogue>...
# Writes $OUT/power-<label>.md and .json. DEVICE (default 0): the GPU sampled and benchmarked.
set -uo pipefail
build=$1 label=$2 problem=$3
shift 3
OUT="${OUT:-.}"
device="${DEVICE:-0}"
tmp=$(mktemp -d)
sampler=""
trap '[[ -n $sampler ]] && kill "$sampler" 2>/dev/null; rm -rf "$tmp"' EXIT
read -r -a argv <<<"$problem"
# power.draw is a one-second average on Hopper: sample the instantaneous draw where the driver has it.
power=power.draw.instant
nvidia-smi -i "$device" --query-gpu=$power --format=csv,noheader >/dev/null 2>&1 || power=power.draw
runs=()
for pass in 0 1; do
  for entry in "$@"; do
    run="$pass-$entry"
    nvidia-smi -i "$device" --query-gpu=clocks.sm,$power,power.limit,clocks_event_reasons.sw_power_cap,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_slowdown \
      --format=csv,noheader,nounits -lms 20 >"$tmp/$run.csv" &
    sampler=$!
    sleep 0.2
    "$build/bench/tilefuse-bench" gemm "${argv[@]}" --no-floor --peers none --device "$device" --kernel "${entry%%:*}" \
      --epilogue "${entry#*:}" --json "$tmp/$run.json" >/dev/null || echo "power_sampled: $run failed (rc $?)" >&2
    kill "$sampler"; wait "$sampler" 2>/dev/null; sampler=""
    runs+=("$run")
  done
done
python3 - "$tmp" "$OUT/power-$label" "$problem" "${runs[@]}" <<'PY'
import json, statistics, sys
tmp, out, problem, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows, lines = {}, [f"## {problem}", "",
                   "| run | tilefuse ms | busy samples | SM MHz (median) | W (median) | at >= 95% of the limit | "
                   "clock held by: power cap / thermal / HW slowdown (share of samples) |",
                   "|---|---:|---:|---:|---:|---:|---|"]
for r in runs:
    try:
        d = json.load(open(f"{tmp}/{r}.json"))["rows"][0]
    except (OSError, ValueError, KeyError, IndexError):
        lines.append(f"| {r} | failed (no result) | | | | | |")
        continue
    samples = []
    for line in open(f"{tmp}/{r}.csv"):
        fields = [x.strip() for x in line.split(",")]
        if len(fields) < 6:  # a line cut short when the sampler was stopped
            continue
        try:
            mhz, watts, limit = (float(x) for x in fields[:3])
        except ValueError:
            continue
        samples.append((mhz, watts, limit, *(f == "Active" for f in fields[3:6])))
    busy = [s for s in samples if s[1] > 0.5 * s[2]]
    mhz = statistics.median(s[0] for s in busy) if busy else float("nan")
    watts = statistics.median(s[1] for s in busy) if busy else float("nan")
    capped = sum(s[1] >= 0.95 * s[2] for s in busy) / len(busy) if busy else float("nan")
    held = [sum(s[i] for s in busy) / len(busy) if busy else float("nan") for i in (3, 4, 5)]
    ms = d["tilefuse"].get("median_ms", float("nan"))
    rows[r] = {"ms": ms, "describe": d.get("tilefuse_describe", ""), "busy_samples": len(busy), "sm_mhz": mhz,
               "watts": watts, "capped_fraction": capped,
               "held_by": dict(zip(("power_cap", "thermal", "hw_slowdown"), held))}
    lines.append(f"| {r} | {ms:.4f} | {len(busy)} | {mhz:.0f} | {watts:.0f} | {capped:.2f} | {held[0]:.2f} / {held[1]:.2f} / {held[2]:.2f} |")
lines.append("")
text = "\n".join(lines)
print(text)
open(out + ".md", "w").write(text + "\n")
json.dump({"problem": problem, "runs": rows}, open(out + ".json", "w"), indent=1)
PY
