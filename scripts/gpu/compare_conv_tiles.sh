#!/usr/bin/env bash
# Times one conv preset under each forced Hopper tile (tilefuse-bench --sm90-tile) and prints, per
# layer, tilefuse's median ms per tile beside the first peer's, so that the tile model and the
# schedules can be compared in one run. Each tile's JSON goes to $OUT/tiles-<preset>-<epilogue>.json
# (merged). Usage (device machine, after building <build>/bench/tilefuse-bench):
#   scripts/gpu/compare_conv_tiles.sh <build dir> <preset> <epilogue> <tile>...   (tile: auto, large, medium,
#   narrow, pingpong-narrow, pingpong-medium, wide). MODE=dgrad|wgrad (default fprop) times that mode instead.
set -euo pipefail
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
