#!/usr/bin/env bash
# Where a wgrad layer's time goes: for each layer and each (forced tile, split) variant, the benchmark's
# median beside cuDNN, then Nsight Compute's duration, L2 and DRAM bytes and L2 / SM
# utilisation of each tilefuse kernel it launches (the GEMM and the split-K pass). Prints one table;
# with DETAIL=1 also the full Nsight Compute detail of the first variant's GEMM kernel per layer.
# Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/wgrad_kernel_times.sh <build dir> "<variant> ..." "<layer args>" ["<layer args>" ...]
#   variant: <tile>:<split>, tile auto|large|medium|narrow|pingpong-narrow|pingpong-medium, split 0 = the model's
# NCU_CACHE=none profiles with warm caches (as the benchmark runs: the split-K pass reads its partials from
# L2); the default (all) flushes them before each kernel, which overstates the pass.
set -uo pipefail
build=$1 variants=$2
shift 2
OUT="${OUT:-.}"
tmp=$(mktemp -d)
metrics=gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
cat > "$tmp/row.py" <<'PY'
import csv, json, re, sys, io
tmp, only = sys.argv[1], sys.argv[2]
if only == "header":
    print("| layer | variant | tilefuse ms | cuDNN ms | chosen | kernel | us | L2 MB | DRAM rd MB | DRAM wr MB | L2 % | SM % |")
    print("|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    sys.exit()
for line in open(f"{tmp}/index"):
    i, layer, v = line.rstrip("\n").split("|")
    if i != only: continue
    try:
        b = json.load(open(f"{tmp}/b{i}.json"))["rows"][0]
        ours, peer = b["tilefuse"].get("median_ms", float("nan")), b["peers"][0].get("median_ms", float("nan"))
        d = b["tilefuse_describe"]
        m = re.search(r"tile (\d+x\d+)x\d+", d); s = re.search(r"(split-K \d+|no split-K)", d)
        chosen = f"{m.group(1) if m else '?'} {s.group(1) if s else ''}" + (" pp" if "ping-pong" in d.split("tile")[0] else "")
    except Exception as e:
        ours = peer = float("nan"); chosen = f"bench failed: {open(f'{tmp}/b{i}.txt').read()[-200:]!r}"
    text = open(f"{tmp}/n{i}.csv").read()
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    per = {}
    for r in rows:
        name = "gemm" if "sm90_gemm" in r["Kernel Name"] else "splitk"
        key = (r["ID"], name)
        per.setdefault(key, {})[r["Metric Name"]] = (r["Metric Value"].replace(",", ""), r["Metric Unit"])
    first = True
    for (rid, name), m in per.items():
        def val(metric, scale=1.0):
            value, unit = m.get(metric, ("nan", ""))
            try:
                x = float(value)
            except ValueError:
                return float("nan")
            mult = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1e-3, "usecond": 1, "msecond": 1e3}.get(unit, 1)
            return x * mult * scale
        print(f"| {layer if first else ''} | {v if first else ''} | {ours if first else '':{'.4f' if first else ''}} | {peer if first else '':{'.4f' if first else ''}} | {chosen if first else ''} | {name} | "
              f"{val('gpu__time_duration.sum'):.1f} | {val('lts__t_bytes.sum', 1e-6):.1f} | {val('dram__bytes_read.sum', 1e-6):.1f} | {val('dram__bytes_write.sum', 1e-6):.1f} | "
              f"{val('lts__throughput.avg.pct_of_peak_sustained_elapsed'):.0f} | {val('sm__throughput.avg.pct_of_peak_sustained_elapsed'):.0f} |")
        first = False
    if first:
        print(f"| {layer} | {v} | {ours:.4f} | {peer:.4f} | {chosen} | no ncu rows: {open(f'{tmp}/n{i}.err').read()[-150:]!r} |")
PY
python3 "$tmp/row.py" "$tmp" header
i=0
for layer in "$@"; do
  for v in $variants; do
    tile=${v%%:*} split=${v##*:}
    tile_flag=(); [[ $tile == auto ]] || tile_flag=(--sm90-tile "$tile")
    # shellcheck disable=SC2086
    timeout 60 "$build/bench/tilefuse-bench" conv2d "${tile_flag[@]}" $layer --dtype bf16 --split-k "$split" --json "$tmp/b$i.json" > "$tmp/b$i.txt" 2>&1
    # shellcheck disable=SC2086
    timeout 60 ncu --clock-control none --cache-control "${NCU_CACHE:-all}" --csv -k "regex:sm90_gemm_kernel|split_k_epilogue" --launch-skip 2 --launch-count 2 --metrics $metrics \
      "$build/bench/tilefuse-bench" conv2d "${tile_flag[@]}" $layer --dtype bf16 --split-k "$split" --reps 3 --warmup-calls 1 --warmup-ms 1 > "$tmp/n$i.csv" 2> "$tmp/n$i.err"
    echo "$i|$layer|$v" >> "$tmp/index"
    python3 "$tmp/row.py" "$tmp" "$i"
    i=$((i + 1))
  done
  if [[ ${DETAIL:-0} == 1 ]]; then
    v=${variants%% *}; tile=${v%%:*} split=${v##*:}
    tile_flag=(); [[ $tile == auto ]] || tile_flag=(--sm90-tile "$tile")
    # shellcheck disable=SC2206
    bench=("$build/bench/tilefuse-bench" conv2d "${tile_flag[@]}" $layer --dtype bf16 --split-k "$split" --reps 3 --warmup-calls 1 --warmup-ms 1)
    ncu=(ncu --clock-control none)
    source "$(dirname "$0")/ncu_detail.sh"
    detail "layer$i" sm90_gemm_kernel > "$OUT/ncu-detail-$i.txt" 2>&1
  fi
done
rm -rf "$tmp"
