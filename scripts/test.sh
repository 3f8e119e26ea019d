#!/usr/bin/env bash
# README's second command, and what CI runs: configures, builds everything (host tests, the NVRTC
# header check, compile-only device builds for every target arch, examples) and runs all tests; then
# builds the host unit tests again with AddressSanitizer + UndefinedBehaviorSanitizer and runs them,
# so an out-of-bounds read in a node or a reference fails even when the values happen to match.
# In between, the Python package is pip-installed into the build folder and tests/python run against it (the
# sanitizer build runs beside them at the lowest priority).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# Each phase's wall time, so that CI's time (kept under 20 minutes on 2 cores) shows where it goes.
phase() { echo "== [$(( SECONDS / 60 ))m$(( SECONDS % 60 ))s] $* =="; }

build_dir=$(scripts/configure.sh -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=ON)
phase "build: host tests, NVRTC header check, compile-only device builds, examples"
cmake --build "$build_dir" -j "$jobs"
# The sanitizer build needs nothing the phases below make: it starts now at the lowest priority and takes the
# cores that ctest and pytest leave idle (pytest runs mostly on one), its output in a log shown if it fails.
sanitize_dir=$(TILEFUSE_BUILD_DIR="${TILEFUSE_SANITIZE_BUILD_DIR:-build-sanitize}" scripts/configure.sh \
  -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_SANITIZE=ON)
nice -n 19 cmake --build "$sanitize_dir" -j "$jobs" --target unit_tests > "$sanitize_dir/unit_tests_build.log" 2>&1 &
sanitize_build=$!
trap 'kill "$sanitize_build" 2>/dev/null || true' EXIT  # a failed phase does not leave it running
phase "ctest"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
phase "Python package: pip install . and tests/python"
# The planner parity test compares with what ctest's parity.plan_parity_dump wrote.
TILEFUSE_PLAN_PARITY_FILE="$(cd "$build_dir" && pwd)/plan_parity.json" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
  tests/python/run.sh "$build_dir/python"

phase "sanitizer build of the host unit tests (what is left of it)"
wait "$sanitize_build" || { tail -60 "$sanitize_dir/unit_tests_build.log"; echo "the sanitizer build failed"; exit 1; }
phase "host unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
ctest --test-dir "$sanitize_dir" -L unit --output-on-failure -j "$jobs"
phase "done"
