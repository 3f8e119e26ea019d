#!/usr/bin/env bash
# The whole C++ GPU suite in one device call, timed: build the GPU tests with every core, run every test in
# SHARDS processes at once on the one GPU (gtest sharding: the host references, which dominate the run, use
# the cores), then memcheck and racecheck on small-shape subsets. Writes $OUT/suite.md (times, counts, the
# failures) and the logs. Carry ["third_party/googletest"] (scripts/gpu/prepare_carry.sh).
# Usage (device machine): OUT=... scripts/gpu/gpu_suite.sh [gtest filter]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
filter="${1:-*}"
shards="${SHARDS:-$(( $(nproc) / 2 ))}"
memcheck_filter='GemmSmall.*:Conv2dSmall.*:GemmSm90Small.*:GemmSelect.Bf16Skinny*'
racecheck_filter='GemmSmall.Bf16Store*:Conv2dSmall.Bf16Fprop*:GemmSm90Small.*:GemmSelect.Bf16SkinnyResults'
now() { date +%s; }
t0=$(now)
nvidia-smi -L
scripts/gpu/build_gpu_targets.sh tilefuse_gpu_tests; build_rc=$?
t1=$(now); echo "build rc $build_rc, $(( t1 - t0 )) s"
(( build_rc == 0 )) || exit 1
bin=build/tests/gpu/tilefuse_gpu_tests
(( shards >= 1 )) || shards=1
pids=()
for (( i = 0; i < shards; ++i )); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "${TEST_TIMEOUT_S:-300}" "$bin" --gtest_color=no \
    "--gtest_filter=$filter" > "$OUT/shard-$i.log" 2>&1 &
  pids+=($!)
done
test_rc=0 shard_rc=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; shard_rc[$i]=$?
  (( shard_rc[i] == 0 )) || test_rc=1
done
t2=$(now); echo "tests rc $test_rc, $(( t2 - t1 )) s in $shards shards"
passed=$(grep -h "^\[  PASSED  \]" "$OUT"/shard-*.log | awk '{s += $4} END {print s + 0}')
failed=$(grep -h "^\[  FAILED  \] [A-Za-z0-9_/]*\.[A-Za-z0-9_/]*" "$OUT"/shard-*.log | sed -E 's/ \([0-9]+ ms\)$//' | sort -u)
ran_to_end=$(grep -l "^\[==========\] .* ran\." "$OUT"/shard-*.log | wc -l)
# A shard that crashed or timed out has no summary: name the test it was running.
for (( i = 0; i < shards; ++i )); do
  grep -q "^\[==========\] .* ran\." "$OUT/shard-$i.log" && continue
  how="crashed (exit ${shard_rc[$i]})"; (( shard_rc[i] == 124 )) && how="timed out"
  running=$(grep "^\[ RUN      \]" "$OUT/shard-$i.log" | tail -1 | sed 's/^\[ RUN      \] //')
  failed+="${failed:+$'\n'}shard $i $how in ${running:-its set-up}"
done
for (( i = 0; i < shards; ++i )); do echo "=== shard $i"; cat "$OUT/shard-$i.log"; done > "$OUT/tests.log"
rm -f "$OUT"/shard-*.log  # one log comes back, not one per shard
sanitize() {  # <tool> <filter> <timeout>
  timeout "$3" compute-sanitizer --tool "$1" --error-exitcode 86 --print-limit 20 "$bin" --gtest_color=no \
    "--gtest_filter=$2" > "$OUT/$1.log" 2>&1
  echo $?
}
memcheck_rc=$(sanitize memcheck "$memcheck_filter" "${MEMCHECK_TIMEOUT_S:-90}")
t3=$(now)
racecheck_rc=$(sanitize racecheck "$racecheck_filter" "${RACECHECK_TIMEOUT_S:-90}")
t4=$(now)
{
  echo "# The C++ GPU suite ($(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---:|"
  echo "| build (\`tilefuse_gpu_tests\`, $(nproc) cores) | rc $build_rc | $(( t1 - t0 )) |"
  echo "| every test (filter \`$filter\`), $shards shards at once | rc $test_rc; $passed passed; $ran_to_end of $shards shards ran to the end | $(( t2 - t1 )) |"
  echo "| memcheck (\`$memcheck_filter\`) | rc $memcheck_rc; $(grep -m1 'ERROR SUMMARY' "$OUT/memcheck.log") | $(( t3 - t2 )) |"
  echo "| racecheck (\`$racecheck_filter\`) | rc $racecheck_rc; $(grep -m1 'RACECHECK SUMMARY\|ERROR SUMMARY' "$OUT/racecheck.log") | $(( t4 - t3 )) |"
  echo "| **total** | | **$(( t4 - t0 ))** |"
  echo
  echo "Failed tests:"; echo; echo "${failed:-none}"
} > "$OUT/suite.md"
cat "$OUT/suite.md"
