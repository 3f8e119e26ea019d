#!/usr/bin/env bash
# One cold call (one H200 or H100): the strided dgrad's phases stored in place (issue 33 item 6). Installs the
# package, runs the conv GPU tests that cover it (the phases bit-exact from Python and from the torch ops' C++ warm
# path), bench/python/strided_dgrad.py (in place beside the copied form and cuDNN, same run), then the ResNet-50
# training step. Everything lands in $OUT/phased-dgrad.tgz; the tables print.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
R=$(mktemp -d /tmp/phased.XXXXXX); RESULTS=${OUT:-gpu-out}; mkdir -p "$RESULTS" build/python/site
trap 'tar czf "$RESULTS/phased-dgrad.tgz" -C "$R" .' EXIT
python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > "$R/pip.log" 2>&1
echo "[$SECONDS s] pip rc $?"
export PYTHONPATH=$PWD/build/python/site
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/python/test_conv2d_sm90_gpu.py tests/python/test_fast_path_gpu.py \
  tests/python/test_ops_conv_gpu.py > "$R/pytest.log" 2>&1
echo "[$SECONDS s] pytest rc $?"; tail -2 "$R/pytest.log"; grep -E "^FAILED|^ERROR" "$R/pytest.log" | head
(cd bench/python && timeout 150 python3 strided_dgrad.py --markdown "$R/strided-dgrad.md" > "$R/strided-dgrad.log" 2>&1)
echo "[$SECONDS s] strided_dgrad rc $?"; cat "$R/strided-dgrad.md" 2>/dev/null || tail -20 "$R/strided-dgrad.log"
timeout $((585 - SECONDS)) python3 bench/python/resnet50_train.py --json "$R/resnet50-train.json" \
  --markdown "$R/resnet50-train.md" > "$R/train.log" 2>&1
echo "[$SECONDS s] training step rc $?"; tail -4 "$R/train.log"
