#!/usr/bin/env bash
# README's second command, and what CI runs: configures, builds everything (host tests, the NVRTC
# header check, compile-only device builds for every target arch, examples) and runs all tests; then
# builds the host unit tests again with AddressSanitizer + UndefinedBehaviorSanitizer and runs them,
# so an out-of-bounds read in a node or a reference fails even when the values happen to match.
# In between, the Python package is pip-installed into the build folder and tests/python run against it.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# Each phase's wall time, so that CI's time (kept under 20 minutes on 2 cores) shows where it goes.
phase() { echo "== [$(( SECONDS / 60 ))m$(( SECONDS % 60 ))s] $* =="; }

build_dir=$(scripts/configure.sh -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=ON)
phase "build: host tests, NVRTC header check, compile-only device builds, examples"
cmake --build "$build_dir" -j "$jobs"
phase "ctest"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs"
phase "Python package: pip install . and tests/python"
# The planner parity test compares with what ctest's parity.plan_parity_dump wrote.
TILEFUSE_PLAN_PARITY_FILE="$(cd "$build_dir" && pwd)/plan_parity.json" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
  tests/python/run.sh "$build_dir/python"

sanitize_dir=$(TILEFUSE_BUILD_DIR="${TILEFUSE_SANITIZE_BUILD_DIR:-build-sanitize}" scripts/configure.sh \
  -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=OFF -DTILEFUSE_SANITIZE=ON)
phase "sanitizer build of the host unit tests"
cmake --build "$sanitize_dir" -j "$jobs" --target unit_tests
phase "host unit tests under AddressSanitizer + UndefinedBehaviorSanitizer"
ctest --test-dir "$sanitize_dir" -L unit --output-on-failure -j "$jobs"
phase "done"
