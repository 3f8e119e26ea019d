#!/usr/bin/env bash
# Configures the build folder (default: build/) with Ninja. Extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:${PATH}"
build_dir="${TILEFUSE_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
echo "$build_dir"
