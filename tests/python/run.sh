#!/usr/bin/env bash
# `pip install .` of the Python package into a folder of its own (never the user's environment), then
# the Python tests against that install. No build isolation: scripts/setup.sh installed the build
# backend (scikit-build-core, nanobind), and the GPU machine, which has them, has no network.
# Usage: tests/python/run.sh [output folder, default build/python] [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-${TILEFUSE_BUILD_DIR:-build}/python}"
shift $(( $# > 0 ? 1 : 0 ))
python=$(scripts/python_env.sh)
export PATH="/usr/local/cuda/bin:${PATH}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

# The extension's CMake folder is kept in $out/cmake, so a second run only relinks what changed.
"$python" -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir="$out/cmake" --target "$out/site" .
# -p no:cacheprovider: no .pytest_cache in the checkout.
# -rs: every skipped test says why (no torch, no GPU, ...).
PYTHONPATH="$out/site${PYTHONPATH:+:$PYTHONPATH}" "$python" -m pytest tests/python -q -rs -p no:cacheprovider "$@"
