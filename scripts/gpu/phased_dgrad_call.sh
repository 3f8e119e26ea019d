#!/usr/bin/env bash
# One cold call (one H200 or H100): the strided dgrad's phases stored in place (issue 33 item 6). Installs the
# package, then the parts named in PARTS (default "tests strided train"): the conv GPU tests that cover it (the
# phases bit-exact from Python and from the torch ops' C++ warm path), bench/python/strided_dgrad.py (in place
# beside the copied form and cuDNN, same run), the ResNet-50 training step; "train-ab" runs the step four
# times instead, in place and with the phases copied (--phases-copied) in turn, 60 kernels listed each; "cpp"
# builds the C++ GPU tests and tilefuse-bench, runs the dgrad tests (conv::Conv2d's strided dgrad by phases among
# them) through gpu_suite.sh (memcheck and racecheck included; SANITIZE=0: the test binary alone) and
# tilefuse-bench's resnet50-strided dgrads beside cuDNN, the phases side by side and in turn (carry
# ["third_party/googletest"]).
# Everything lands in $OUT/phased-dgrad.tgz; the tables print.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
R=$(mktemp -d /tmp/phased.XXXXXX); RESULTS=${OUT:-gpu-out}; mkdir -p "$RESULTS" build/python/site
trap 'tar czf "$RESULTS/phased-dgrad.tgz" -C "$R" .' EXIT
PARTS=${PARTS:-tests strided train}
python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > "$R/pip.log" 2>&1
echo "[$SECONDS s] pip rc $?"
export PYTHONPATH=$PWD/build/python/site
for part in $PARTS; do
  case $part in
    cpp)
      OUT=$R scripts/gpu/build_gpu_targets.sh tilefuse_gpu_tests tilefuse-bench; echo "[$SECONDS s] build rc $?"
      filter='Conv2dSm90Dgrad*:Conv2dSm90Select*:Conv2dDgrad*:Conv2dSmall*'
      if [[ ${SANITIZE:-1} == 1 ]]; then
        OUT=$R/suite TEST_TIMEOUT_S=200 scripts/gpu/gpu_suite.sh "$filter" > "$R/suite.log" 2>&1
        echo "[$SECONDS s] suite rc $?"; cat "$R/suite/suite.md" 2>/dev/null | head -30
      else
        timeout 200 build/tests/gpu/tilefuse_gpu_tests --gtest_color=no "--gtest_filter=$filter" > "$R/tests.log" 2>&1
        echo "[$SECONDS s] tests rc $?"; grep -E "^\[  (PASSED|FAILED) " "$R/tests.log" | head
      fi
      for phases in beside in-turn; do
        timeout 150 build/bench/tilefuse-bench conv2d --preset resnet50-strided --mode dgrad --dtype bf16 \
          --dgrad-phases $phases --json "$R/bench-strided-dgrad-$phases.json" > "$R/bench-strided-dgrad-$phases.log" 2>&1
        echo "[$SECONDS s] tilefuse-bench ($phases) rc $?"; grep "^| resnet50-strided\|^| cuDNN" "$R/bench-strided-dgrad-$phases.log"
      done ;;
    tests)
      timeout 220 python3 -m pytest -q -p no:cacheprovider tests/python/test_conv2d_sm90_gpu.py \
        tests/python/test_fast_path_gpu.py tests/python/test_ops_conv_gpu.py > "$R/pytest.log" 2>&1
      echo "[$SECONDS s] pytest rc $?"; tail -2 "$R/pytest.log"; grep -E "^FAILED|^ERROR" "$R/pytest.log" | head ;;
    strided)
      (cd bench/python && timeout 150 python3 strided_dgrad.py --markdown "$R/strided-dgrad.md" > "$R/strided-dgrad.log" 2>&1)
      echo "[$SECONDS s] strided_dgrad rc $?"; cat "$R/strided-dgrad.md" 2>/dev/null || tail -20 "$R/strided-dgrad.log" ;;
    train)
      timeout $((585 - SECONDS)) python3 bench/python/resnet50_train.py --json "$R/resnet50-train.json" \
        --markdown "$R/resnet50-train.md" > "$R/train.log" 2>&1
      echo "[$SECONDS s] training step rc $?"; tail -4 "$R/train.log" ;;
    train-ab)
      for run in in-place-1 copied-1 in-place-2 copied-2; do
        flag=""; [[ $run == copied* ]] && flag=--phases-copied
        timeout 120 python3 bench/python/resnet50_train.py --kernel-rows 60 $flag --json "$R/train-$run.json" \
          --markdown "$R/train-$run.md" > "$R/train-$run.log" 2>&1
        echo "[$SECONDS s] $run rc $?: $(grep -h 'per step\|speedup' "$R/train-$run.log" | tr '\n' ' ')"
        grep -h "of kernel time" "$R/train-$run.md"
      done ;;
  esac
done
