#!/usr/bin/env bash
# README's second command, and what CI runs: configures, builds everything (host tests, the NVRTC
# header check, compile-only device builds for every target arch, examples) and runs all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(scripts/configure.sh -DTILEFUSE_BUILD_TESTS=ON -DTILEFUSE_BUILD_EXAMPLES=ON)
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
