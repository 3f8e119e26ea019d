#!/usr/bin/env bash
# "No speed lost" for a refactor (issue 36): tilefuse-bench and tilefuse-fp8-bench built from an older tree and
# from this one, then every preset run in the order old new new old on the same GPU; per preset the geomean of
# new / old tilefuse times and the worst row. Two stages so that each fits one device call (the builds stay on
# the warm machine between them):
#   scripts/gpu/refactor_check.sh build <old tree>          both trees' benches, in parallel
#   scripts/gpu/refactor_check.sh run <old tree> [group...]  groups: gemm conv-fprop conv-fused conv-backward unet fp8
# The old tree: `git worktree add before-tree <commit>` here, then carry ["before-tree"]. Results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:${PATH}"
stage=$1 old=$2
shift 2
configure() {  # <source dir> <build dir>
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=OFF -DTILEFUSE_BUILD_BENCH=ON \
    -DTILEFUSE_CUDA_ARCHS=90a > "$OUT/configure-$(basename "$2").log" 2>&1
}
if [[ $stage == build ]]; then
  half=$(( $(nproc) / 2 ))
  (configure "$old" build-old && ninja -C build-old -j"$half" bench/tilefuse-bench bench/tilefuse-fp8-bench \
     > "$OUT/build-old.log" 2>&1; echo "old build rc $?") &
  (configure . build-new && ninja -C build-new -j"$half" bench/tilefuse-bench bench/tilefuse-fp8-bench \
     > "$OUT/build-new.log" 2>&1; echo "new build rc $?") &
  wait
  exit 0
fi
declare -A groups=(
  [gemm]="tilefuse-bench gemm --preset issue3 --kernel auto"
  [conv-fprop]="tilefuse-bench conv2d --preset resnet50 --mode fprop"
  [conv-fused]="tilefuse-bench conv2d --preset resnet50 --epilogue bias_relu_residual"
  [conv-backward]="tilefuse-bench conv2d --preset resnet50 --mode dgrad,wgrad"
  [unet]="tilefuse-bench conv2d --preset unet --mode fprop,dgrad,wgrad"
  [fp8]="tilefuse-fp8-bench"
)
for group in "${@:-gemm conv-fprop conv-fused conv-backward unet fp8}"; do
  for g in $group; do
    read -r -a argv <<<"${groups[$g]}"
    for run in old-0 new-0 new-1 old-1; do
      "build-${run%-*}/bench/${argv[0]}" "${argv[@]:1}" --json "$OUT/$g-$run.json" > "$OUT/$g-$run.log" 2>&1 ||
        echo "$g $run failed (rc $?): $(tail -2 "$OUT/$g-$run.log")"
    done
    python3 - "$OUT" "$g" <<'PY'
import json, math, sys
out, group = sys.argv[1:3]
def times(run):
    try:
        rows = json.load(open(f"{out}/{group}-{run}.json"))["rows"]
    except (OSError, ValueError, KeyError):
        return {}
    found = {}
    for r in rows:
        # tilefuse-bench rows carry a problem; tilefuse-fp8-bench rows are flat (shape, scales, timings)
        p = r.get("problem") or {k: v for k, v in r.items() if not k.endswith(("_ms", "_us", "_note"))}
        ms = r["tilefuse"].get("median_ms") if isinstance(r.get("tilefuse"), dict) else r.get("tilefuse_ms")
        if ms:
            found[json.dumps(p, sort_keys=True)] = ms
    return found
runs = {r: times(r) for r in ("old-0", "new-0", "new-1", "old-1")}
rows = [k for k in runs["old-0"] if all(k in runs[r] for r in runs)]
if not rows:
    print(f"{group}: no comparable rows"); sys.exit()
ratios = {k: (runs["new-0"][k] + runs["new-1"][k]) / (runs["old-0"][k] + runs["old-1"][k]) for k in rows}
geo = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
worst = max(ratios, key=ratios.get)
print(f"{group}: {len(rows)} rows, new / old time geomean {geo:.4f} (target within 1%), worst {ratios[worst]:.4f} ({worst[:60]})")
PY
  done
done
