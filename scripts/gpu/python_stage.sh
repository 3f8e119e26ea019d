#!/usr/bin/env bash
# The Python package on the device machine: pip install into <build>/python/site (prebuilt kernels with
# every core), then pytest on the given files. Usage: scripts/gpu/python_stage.sh <timeout s> <pytest args...>
# Logs in $OUT/pip.log and $OUT/pytest.log.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT="${OUT:-gpu-out}"
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:${PATH}"
export CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)"
limit="$1"
shift
start=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > "$OUT/pip.log" 2>&1 ||
  { echo "pip install failed"; tail -30 "$OUT/pip.log"; exit 1; }
echo "pip install: $(( $(date +%s) - start )) s"
PYTHONPATH="$PWD/build/python/site" timeout "$limit" python3 -m pytest -q -rs -p no:cacheprovider "$@" > "$OUT/pytest.log" 2>&1
rc=$?
tail -40 "$OUT/pytest.log"
exit $rc
