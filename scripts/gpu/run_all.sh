#!/usr/bin/env bash
# The one script for the device machine (an H100/H200 with 16 cores and no network). In stages, each
# under its own timeout, going on after a failure:
#   device      nvidia-smi -L (and driver / memory)
#   configure   Release, -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_BENCH=ON (when bench/ has a
#               CMakeLists.txt) -DTILEFUSE_CUDA_ARCHS=90a
#   build       the GPU tests, then the benchmark, with all cores
#   tests       every GPU test, results in $OUT/gpu_tests.json
#   memcheck    compute-sanitizer --tool memcheck on the small-shape tests
#   racecheck   compute-sanitizer --tool racecheck on a few small-shape tests
#   sass-facts  bench/tools/sass_facts.py (cuobjdump -res-usage and --dump-sass) on the benchmark and the GPU
#               tests: per kernel symbol registers, stack / local memory, LDL / STL, HGMMA and HMMA
#               counts, in $OUT/logs/sass-facts.log and the report
#   bench       build/bench/tilefuse-bench gemm --preset issue3 --json $OUT/bench.json (if it was built),
#               then tilefuse-fp8-bench (FP8 scaled GEMM vs cuBLASLt) and tilefuse-fusion-bench
# and writes $OUT/report.md (date, device, commit, stage table, test / sanitizer summaries, benchmark
# table; logs in $OUT/logs/). Finishes inside TILEFUSE_GPU_BUDGET_S seconds (default 530, under the
# device machine's 10-minute limit); exits non-zero if any stage failed or was skipped.
#
# GoogleTest: the device machine has no package, so carry the sources prepared here by
# scripts/gpu/prepare_carry.sh (carry ["third_party/googletest"]).
#
# Environment (all optional):
#   OUT                        where results go (default: ./gpu-out)
#   TILEFUSE_CUDA_ARCHS        default 90a (H100/H200); e.g. "80;90a"
#   TILEFUSE_GPU_BUILD_DIR     default build (the benchmark is expected at <dir>/bench/tilefuse-bench)
#   TILEFUSE_GPU_BUDGET_S      total seconds for everything (default 530)
#   TILEFUSE_GPU_TEST_FILTER   gtest filter of the test stage (default '*')
#   TILEFUSE_MEMCHECK_FILTER   default 'GemmSmall.*:Conv2dSmall.*:GemmSm90Small.*:GemmSelect.Bf16Skinny*'
#   TILEFUSE_RACECHECK_FILTER  default 'GemmSmall.Bf16Store*:Conv2dSmall.Bf16Fprop*:GemmSm90Small.*:GemmSelect.Bf16SkinnyResults'
#   TILEFUSE_BENCH_ARGS        ';'-separated tilefuse-bench invocations (default 'gemm --preset issue3')
#   TILEFUSE_PY_GPU_TESTS      pytest arguments for a Python stage on the GPU (pip install of the package
#                              into <build>/python, then tests/python with these arguments, e.g.
#                              'tests/python/test_emit_pytorch_gpu.py'); unset: no Python stage
#   TILEFUSE_GPU_SKIP          ','-separated stage names not to run (e.g. 'sass-facts,fp8-bench,fusion-bench')
#   TILEFUSE_GPU_AFTER         a command run after the benchmarks, in the stage 'after' (e.g. a tuning sweep
#                              built here: 'ninja -C build bench/tilefuse_tune_sm80 && build/bench/tilefuse_tune_sm80')
#   GIT_COMMIT                 the commit to report when the tree has no .git
#   JOBS                       build parallelism (default: nproc)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)

OUT="${OUT:-$root/gpu-out}"
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
logs="$OUT/logs"
export PATH="/usr/local/cuda/bin:${PATH}"

archs="${TILEFUSE_CUDA_ARCHS:-90a}"
build_dir="${TILEFUSE_GPU_BUILD_DIR:-build}"
budget="${TILEFUSE_GPU_BUDGET_S:-530}"
test_filter="${TILEFUSE_GPU_TEST_FILTER:-*}"
memcheck_filter="${TILEFUSE_MEMCHECK_FILTER:-GemmSmall.*:Conv2dSmall.*:GemmSm90Small.*:GemmSelect.Bf16Skinny*}"
racecheck_filter="${TILEFUSE_RACECHECK_FILTER:-GemmSmall.Bf16Store*:Conv2dSmall.Bf16Fprop*:GemmSm90Small.*:GemmSelect.Bf16SkinnyResults}"
bench_args="${TILEFUSE_BENCH_ARGS:-gemm --preset issue3}"
jobs="${JOBS:-$(nproc)}"
test_bin="$build_dir/tests/gpu/tilefuse_gpu_tests"
bench_bin="$build_dir/bench/tilefuse-bench"
start=$(date +%s)
started_at="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"

# ---- stages ----

stage_names=()
stage_results=()
stage_seconds=()
any_failed=0

record() {  # record <name> <result> <seconds> [failed=1]
  stage_names+=("$1")
  stage_results+=("$2")
  stage_seconds+=("$3")
  if [[ "${4:-1}" == 1 ]]; then any_failed=1; fi
}

seconds_left() { echo $(( budget - ($(date +%s) - start) )); }

# run_stage <name> <cap seconds> <seconds to keep for the stages after it> <command...>
# Runs the command with its output in $logs/<name>.log, under min(cap, time left - reserve); records
# ok / failed (exit N) / timed out. Returns the command's exit status (124 on a timeout, 125 if skipped).
run_stage() {
  local name=$1 cap=$2 reserve=$3
  shift 3
  local left limit log t0 rc secs
  if [[ ",${TILEFUSE_GPU_SKIP:-}," == *",$name,"* ]]; then
    echo "== [$name] skipped: named in TILEFUSE_GPU_SKIP"
    record "$name" "skipped (TILEFUSE_GPU_SKIP)" 0 0
    return 125
  fi
  left=$(( $(seconds_left) - reserve ))
  limit=$(( cap < left ? cap : left ))
  log="$logs/$name.log"
  if (( limit < 5 )); then
    echo "== [$name] skipped: no time left in the ${budget}s budget"
    echo "skipped: no time left in the ${budget}s budget" >"$log"
    record "$name" "skipped (no time left)" 0
    return 125
  fi
  echo "== [$name] (limit ${limit}s) $*"
  printf '$ %s\n' "$*" >"$log"
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  # Keep logs small enough to come back from the device machine.
  if (( $(stat -c %s "$log") > 2000000 )); then
    tail -c 2000000 "$log" >"$log.tail" && mv "$log.tail" "$log"
  fi
  if (( rc == 0 )); then
    record "$name" "ok" "$secs" 0
  elif (( rc == 124 || rc == 137 )); then
    record "$name" "timed out after ${limit}s" "$secs"
  else
    record "$name" "failed (exit $rc)" "$secs"
  fi
  tail -n 8 "$log" | sed 's/^/   | /'
  return $rc
}

find_sanitizer() {
  local c
  for c in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer \
           /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [[ -n "$c" && -x "$c" ]]; then echo "$c"; return 0; fi
  done
  return 1
}

# ---- device ----

echo "== tilefuse GPU run: $started_at, budget ${budget}s, archs $archs, $jobs jobs, results in $OUT"
device="unknown"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L | tee "$logs/device.log"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >>"$logs/device.log" 2>&1
  device="$(nvidia-smi -L 2>/dev/null | head -n 1 | sed 's/ (UUID.*//')"
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  gpu_count="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')"
  if [[ -n "$device" ]]; then
    record device "ok" 0 0
  else
    device="none found"
    record device "failed (nvidia-smi lists no GPU)" 0
  fi
else
  echo "nvidia-smi not found" | tee "$logs/device.log"
  driver=""
  gpu_count=0
  record device "failed (nvidia-smi not found)" 0
fi

commit="${GIT_COMMIT:-}"
if [[ -z "$commit" ]]; then
  commit="$(git rev-parse HEAD 2>/dev/null || true)"
  if [[ -n "$commit" ]] && [[ -n "$(git status --porcelain 2>/dev/null | head -n 1)" ]]; then
    commit="$commit (working tree has changes)"
  fi
fi
commit="${commit:-unknown}"

# ---- configure ----

configure_flags=(-S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=ON
                 -DTILEFUSE_BUILD_GPU_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=ON "-DTILEFUSE_CUDA_ARCHS=$archs")
bench_enabled=0
bench_note=""
if [[ -f bench/CMakeLists.txt ]]; then
  bench_enabled=1
else
  bench_note="bench/CMakeLists.txt does not exist: benchmark not configured"
fi
if [[ ! -f third_party/googletest/CMakeLists.txt ]] && [[ ! -f /usr/src/googletest/CMakeLists.txt ]] \
   && ! ls /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  echo "!! no GoogleTest here: run scripts/gpu/prepare_carry.sh on the build machine and carry third_party/googletest"
fi

configure() {  # configure <bench ON|OFF>
  run_stage "configure" 90 300 cmake "${configure_flags[@]}" "-DTILEFUSE_BUILD_BENCH=$1"
}
# A cache from another source path (a carried or stale build folder) makes cmake refuse: start afresh.
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$build_dir/CMakeCache.txt"; then
  echo "== $build_dir holds a cache of another source tree: removing it"
  rm -rf "$build_dir"
fi
configured=0
if (( bench_enabled )); then
  if configure ON; then
    configured=1
  else
    # The benchmark's CMakeLists may be what fails: try again without it, so the tests still run.
    bench_enabled=0
    bench_note="configure with -DTILEFUSE_BUILD_BENCH=ON failed (see logs/configure-with-bench.log); configured without the benchmark"
    mv "$logs/configure.log" "$logs/configure-with-bench.log"
    stage_names[-1]="configure-with-bench"
    if configure OFF; then configured=1; fi
  fi
else
  if configure OFF; then configured=1; fi
fi

# ---- build ----

tests_built=0
bench_built=0
if (( configured )); then
  if run_stage "build-tests" 300 200 cmake --build "$build_dir" -j "$jobs" --target tilefuse_gpu_tests; then
    tests_built=1
  fi
  if (( bench_enabled )); then
    # By output path, so the target's name does not matter.
    if run_stage "build-bench" 150 170 ninja -C "$build_dir" -j "$jobs" bench/tilefuse-bench; then
      bench_built=1
    fi
    # The mainloop-fusion, FP8 and epilogue-sweep benchmarks and the examples (quickstart, Hopper
    # ladder): best effort.
    run_stage "build-extras" 120 150 ninja -C "$build_dir" -j "$jobs" bench/tilefuse-fusion-bench bench/tilefuse-fp8-bench \
      bench/tilefuse-epilogue-sweep \
      examples/quickstart_fused_conv $(ls examples/hopper/*.cu 2>/dev/null | sed 's|examples/hopper/\(.*\)\.cu|examples/hopper/\1|') || true
  fi
else
  record "build-tests" "skipped (not configured)" 0
fi

# ---- SASS facts (cuobjdump: registers, spills, HGMMA / HMMA per kernel) ----

sass_binaries=()
(( bench_built )) && [[ -x "$bench_bin" ]] && sass_binaries+=("$bench_bin")
(( tests_built )) && [[ -x "$test_bin" ]] && sass_binaries+=("$test_bin")
if (( ${#sass_binaries[@]} )) && command -v python3 >/dev/null 2>&1; then
  run_stage "sass-facts" 90 100 python3 bench/tools/sass_facts.py "${sass_binaries[@]}"
else
  record "sass-facts" "skipped (nothing built, or no python3)" 0
fi

# ---- tests ----

rm -f "$OUT/gpu_tests.json" "$OUT/memcheck_tests.json" "$OUT/racecheck_tests.json" "$OUT"/bench*.json
if (( tests_built )); then
  run_stage "tests" 240 110 "$test_bin" --gtest_color=no "--gtest_filter=$test_filter" \
    "--gtest_output=json:$OUT/gpu_tests.json"
else
  record "tests" "skipped (not built)" 0
fi

# ---- sanitizers ----

sanitizer="$(find_sanitizer || true)"
for tool in memcheck racecheck; do
  if (( ! tests_built )); then
    record "$tool" "skipped (tests not built)" 0
    continue
  fi
  if [[ -z "$sanitizer" ]]; then
    echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer)" >"$logs/$tool.log"
    record "$tool" "failed (compute-sanitizer not found)" 0
    continue
  fi
  if [[ $tool == memcheck ]]; then
    filter="$memcheck_filter"
    extra=(--leak-check full)
    reserve=60
  else
    filter="$racecheck_filter"
    extra=()
    reserve=25
  fi
  run_stage "$tool" 150 "$reserve" "$sanitizer" --tool "$tool" ${extra[@]+"${extra[@]}"} --error-exitcode 86 --print-limit 50 \
    "$test_bin" --gtest_color=no "--gtest_filter=$filter" "--gtest_output=json:$OUT/${tool}_tests.json"
done

# ---- the README's main job and the Hopper ladder (each checks its own result) ----

if [[ -x "$build_dir/examples/quickstart_fused_conv" ]]; then
  run_stage "quickstart" 60 60 "$build_dir/examples/quickstart_fused_conv"
fi
for step in "$build_dir"/examples/hopper/*; do
  [[ -x "$step" ]] && run_stage "ladder-$(basename "$step")" 30 60 "$step"
done

# ---- benchmark ----

if (( bench_built )) && [[ -x "$bench_bin" ]]; then
  # One stage per ';'-separated invocation: bench-1, bench-2, ... with bench-N.json and logs/bench-N.log.
  IFS=';' read -r -a bench_runs <<<"$bench_args"
  for i in "${!bench_runs[@]}"; do
    n=$((i + 1))
    # shellcheck disable=SC2086  # each invocation is a word list on purpose
    run_stage "bench-$n" 240 5 "$bench_bin" ${bench_runs[$i]} --json "$OUT/bench-$n.json"
  done
  if [[ -x "$build_dir/bench/tilefuse-fp8-bench" ]]; then
    run_stage "fp8-bench" 120 5 "$build_dir/bench/tilefuse-fp8-bench" --json "$OUT/fp8-bench.json"
  fi
  if [[ -x "$build_dir/bench/tilefuse-fusion-bench" ]]; then
    run_stage "fusion-bench" 120 5 "$build_dir/bench/tilefuse-fusion-bench"
  fi
elif (( bench_enabled )); then
  record "bench" "skipped (not built)" 0
else
  record "bench" "skipped (${bench_note:-not configured})" 0
fi

# ---- a command of the caller's (optional) ----

if [[ -n "${TILEFUSE_GPU_AFTER:-}" ]]; then
  run_stage "after" 300 5 bash -c "$TILEFUSE_GPU_AFTER"
fi

# ---- Python on the GPU (optional) ----

if [[ -n "${TILEFUSE_PY_GPU_TESTS:-}" ]]; then
  # shellcheck disable=SC2086  # a pytest word list on purpose
  run_stage "python-gpu" 240 5 env TILEFUSE_EMIT_ARCHS="${TILEFUSE_EMIT_ARCHS:-90a}" \
    tests/python/run.sh "$build_dir/python" ${TILEFUSE_PY_GPU_TESTS} -rs
fi

# ---- report ----

total=$(( $(date +%s) - start ))
report="$OUT/report.md"

summarise_gtest() {  # summarise_gtest <json> <log>: markdown lines
  local json=$1 log=$2
  if [[ -f "$json" ]] && command -v python3 >/dev/null 2>&1; then
    python3 - "$json" <<'PY' && return 0
import json, re, sys
with open(sys.argv[1]) as f:
    text = f.read()
try:
    d = json.loads(text)
except json.JSONDecodeError:
    # GoogleTest 1.12 writes a failure outside any test (a failed global set-up) as a suite without
    # the comma before it; mend that one defect.
    d = json.loads(re.sub(r"\}(\s*)\{(\s*\"name\": \"NonTestSuiteFailure\")", r"},\1{\2", text))
total = passed = failed = skipped = 0
failures = []
for suite in d.get("testsuites", []):
    for t in suite.get("testsuite", []):
        total += 1
        name = f"{suite['name']}.{t['name']}" if t.get("name") else suite["name"]
        if t.get("failures"):
            failed += 1
            text = "\n".join(x.get("failure", "") for x in t["failures"])
            failures.append((name, text))
        elif t.get("result") == "SKIPPED":
            skipped += 1
        else:
            passed += 1
print(f"- {total} tests: **{passed} passed, {failed} failed, {skipped} skipped** (time {d.get('time', '?')})")
if any(s.get("name") == "NonTestSuiteFailure" for s in d.get("testsuites", [])):
    print("- a failure outside any test (the global set-up: no usable GPU?) skipped the tests; see below")
for name, text in failures[:20]:
    lines = text.strip().splitlines()
    shown = "\n".join(lines[:25])
    more = f"\n... ({len(lines) - 25} more lines)" if len(lines) > 25 else ""
    print(f"\n<details><summary>FAILED {name}</summary>\n\n```\n{shown}{more}\n```\n</details>")
if len(failures) > 20:
    print(f"\n... and {len(failures) - 20} more failed tests (see the JSON)")
PY
  fi
  # No JSON (a crash, a timeout) or no python: what the log says.
  if [[ -f "$log" ]]; then
    echo "- no readable JSON result; from the log:"
    echo '```'
    grep -E '^\[==========\] .* ran|^\[  (PASSED|FAILED|SKIPPED)  \] [0-9]+ test' "$log"
    grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sort -u | head -n 30
    grep -A 8 -m 1 'gpu_environment.cpp:[0-9]*: Failure' "$log"
    echo "(last lines)"
    tail -n 5 "$log"
    echo '```'
  else
    echo "- did not run"
  fi
}

sanitizer_summary() {  # sanitizer_summary <log>
  local log=$1
  if [[ ! -f "$log" ]]; then echo "did not run"; return; fi
  local line
  line="$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')"
  echo "${line:-no sanitizer summary line (see the log)}"
}


{
  echo "# tilefuse GPU run"
  echo
  echo "- date: $started_at"
  echo "- device: ${device}${gpu_count:+ ($gpu_count GPU(s))}${driver:+, driver $driver}"
  echo "- git commit: $commit"
  echo "- build: Release, TILEFUSE_CUDA_ARCHS=$archs, $jobs jobs, $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -n 1)"
  echo "- total time: ${total}s of a ${budget}s budget"
  echo
  echo "## Stages"
  echo
  echo "| stage | result | seconds | log |"
  echo "|---|---|---|---|"
  for i in "${!stage_names[@]}"; do
    name="${stage_names[$i]}"
    log="logs/$name.log"
    [[ -f "$OUT/$log" ]] || log=""
    echo "| $name | ${stage_results[$i]} | ${stage_seconds[$i]} | ${log:+\`$log\`} |"
  done
  echo
  echo "## GPU tests"
  echo
  echo "filter \`$test_filter\`; JSON: \`gpu_tests.json\`"
  echo
  summarise_gtest "$OUT/gpu_tests.json" "$logs/tests.log"
  if [[ -f "$logs/tests.log" ]]; then
    paths="$(grep -h '^\[ cases    \]' "$logs/tests.log" | awk '
      function count(pattern,   m) { return match($0, pattern) ? substr($0, RSTART, RLENGTH) + 0 : 0 }
      {run += count("[0-9]+ run"); wide += count("[0-9]+ on the 16-byte"); narrow += count("[0-9]+ element-wise");
       hopper += count("[0-9]+ on the Hopper"); refused += count("[0-9]+ refused"); failed += count("[0-9]+ failed")}
      END {if (NR) printf "%d cases run in %d case lists (%d on the 16-byte path, %d element-wise; %d of the conv cases on the Hopper kernel), %d refused as allowed, %d failed", run, NR, wide, narrow, hopper, refused, failed}')"
    [[ -n "$paths" ]] && echo "- $paths"
  fi
  echo
  echo "## Sanitizers"
  echo
  echo "| tool | filter | result | summary |"
  echo "|---|---|---|---|"
  for tool in memcheck racecheck; do
    filter="$memcheck_filter"
    [[ $tool == racecheck ]] && filter="$racecheck_filter"
    result="not run"
    for i in "${!stage_names[@]}"; do
      [[ "${stage_names[$i]}" == "$tool" ]] && result="${stage_results[$i]}"
    done
    echo "| $tool | \`$filter\` | $result | $(sanitizer_summary "$logs/$tool.log") |"
  done
  for tool in memcheck racecheck; do
    if [[ -f "$logs/$tool.log" ]] && grep -qE '^=+ +(Invalid|Error|Race|Warning|Program hit|Leaked)' "$logs/$tool.log"; then
      echo
      echo "<details><summary>first $tool reports</summary>"
      echo
      echo '```'
      grep -E '^=+ ' "$logs/$tool.log" | head -n 60
      echo '```'
      echo "</details>"
    fi
  done
  echo
  echo "## SASS facts"
  echo
  if [[ -f "$logs/sass-facts.log" ]]; then
    echo "From \`logs/sass-facts.log\` (bench/tools/sass_facts.py: cuobjdump -res-usage and --dump-sass). The benchmark's"
    echo "kernels, then the GPU tests' flagged ones (local memory, or a Hopper GEMM without HGMMA):"
    echo
    awk -v bench="$bench_bin" '
      /^### / { section = ($2 ~ /tilefuse-bench$/) ? "bench" : "tests"; print; print ""; next }
      section == "bench" { print; next }
      section == "tests" && (/^\| kernel/ || /^\|---/ || /flagged *$/ || /(local memory|without HGMMA)/) { print }
    ' "$logs/sass-facts.log" | head -n 200
  else
    echo "not run (see the stage table)"
  fi
  echo
  echo "## Benchmark"
  echo
  for log in "$logs"/bench-*.log "$logs"/fusion-bench.log "$logs"/quickstart.log; do
    [[ -f "$log" ]] || continue
    echo "### $(basename "$log" .log)"
    echo
    echo '```'
    grep -v '^\[' "$log" | tail -n 120
    echo '```'
    echo
  done
} >"$report" 2>"$logs/report.log"

echo "== report: $report"
head -n 60 "$report"
if (( any_failed )); then
  echo "== some stages failed or were skipped (see $report)"
  exit 1
fi
echo "== all stages passed"
exit 0
