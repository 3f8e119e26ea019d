#!/usr/bin/env bash
# Builds tests/consumer by each route a user takes: cmake --install of tilefuse into a clean prefix then
# find_package, add_subdirectory of the checkout, and FetchContent of it; runs what it built (no GPU:
# the host epilogue is checked, the device code only compiled and loaded). Usage: run.sh <scratch dir>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:?usage: run.sh <scratch dir>}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
export PATH="/usr/local/cuda/bin:${PATH}"
jobs=$(nproc)

echo "== consumer: tilefuse installed into a clean prefix, then find_package =="
cmake -S "$root" -B "$work/tilefuse-build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEFUSE_BUILD_TESTS=OFF \
  -DTILEFUSE_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
cmake --build "$work/tilefuse-build" -j "$jobs" >/dev/null
cmake --install "$work/tilefuse-build" >/dev/null
for route in package subdirectory fetch; do
  echo "== consumer: $route =="
  cmake -S "$here" -B "$work/$route" -G Ninja -DCMAKE_BUILD_TYPE=Release -DROUTE=$route \
    $([[ $route == package ]] && echo "-DCMAKE_PREFIX_PATH=$work/prefix" || echo "-DTILEFUSE_SOURCE=$root") >/dev/null
  cmake --build "$work/$route" -j "$jobs"
  "$work/$route/host_epilogue"
  "$work/$route/device_epilogue"
  if [[ $route == package ]]; then "$work/$route/device_gemm"; fi
done
# The installed tree holds the headers, the library and the package files, and tests are not installed.
test -f "$work/prefix/include/tilefuse/epilogue/evt.h"
test -f "$work/prefix/lib/cmake/tilefuse/tilefuseConfig.cmake"
echo "consumer: every route built and ran"
