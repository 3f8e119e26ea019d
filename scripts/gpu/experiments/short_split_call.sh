#!/usr/bin/env bash
# One call (RUNBOOK S1): the 64x64 split in the planner (GPU tests, C++ preset rows, the shapes the rule changes
# beside their old 128x128 split, the wide preset from Python, the Python GEMM GPU tests). Results: $OUT/r.tgz.
set -uo pipefail
D=$OUT; R=/tmp/r; mkdir -p $R build/python/site; t0=$SECONDS
(python3 -m pip install --no-build-isolation --no-deps --upgrade --quiet --disable-pip-version-check \
  --root-user-action=ignore -C build-dir=build/python/cmake --target build/python/site . > $R/pip.log 2>&1; echo "pip rc $?" >> $R/pip.log) &
pip_pid=$!
OUT=$R timeout 300 scripts/gpu/build_gpu_targets.sh bench/tilefuse-bench tests/gpu/tilefuse_gpu_tests; echo "[$SECONDS s] build rc $?"
timeout 70 build/tests/gpu/tilefuse_gpu_tests --gtest_filter='GemmSm90SplitK.*:GemmSelect.*' > $R/tests.log 2>&1; echo "[$SECONDS s] tests rc $?"; tail -3 $R/tests.log; grep FAILED $R/tests.log | head
J=build/bench-json; mkdir -p $J
build/bench/tilefuse-bench gemm --preset issue38-wide --kernel auto --split-k 0 --json $J/cpp-gemm.json > $R/cpp-gemm.log 2>&1; echo "[$SECONDS s] wide rc $?"
build/bench/tilefuse-bench gemm --preset issue3 --kernel auto --split-k 0 --json $R/cpp-gemm-issue3.json > $R/cpp-gemm-issue3.log 2>&1; echo "[$SECONDS s] issue3 rc $?"
cp $J/cpp-gemm.json $R/
export OUT=$R
A="scripts/gpu/ab.sh kernels build"
{ $A a '--m 256 --n 256 --k 16384' auto:none:0 sm90-split-medium:none:16
  $A b '--m 64 --n 64 --k 65536' auto:none:0 sm90-split-medium:none:128
  $A c '--m 128 --n 256 --k 8192' auto:none:0 sm90-split-medium:none:16
  $A d '--m 394 --n 64 --k 4096' auto:none:0 sm90-split-medium:none:16
  $A e '--m 1000 --n 64 --k 16384' auto:none:0 sm90-split-medium:none:16
  $A f '--m 64 --n 1024 --k 16384' auto:none:0 sm90-split-medium:none:16
  $A g '--m 197 --n 256 --k 8192' auto:none:0 sm90-split-medium:none:16
  $A h '--m 512 --n 64 --k 65536' auto:none:0 sm90-split-medium:none:32; } > $R/sweeps.md 2>&1; echo "[$SECONDS s] sweeps"
wait $pip_pid; tail -1 $R/pip.log
export PYTHONPATH=$PWD/build/python/site
timeout $((560 - SECONDS)) python3 bench/python/gemm_shapes.py --cpp-json $J/cpp-gemm.json --json $R/py-gemm.json --markdown $R/py-gemm.md > $R/py-gemm.log 2>&1; echo "[$SECONDS s] python gemm rc $?"
timeout $((590 - SECONDS)) python3 -m pytest -q -p no:cacheprovider tests/python/test_gemm_gpu.py > $R/pytest.log 2>&1; echo "[$SECONDS s] pytest rc $?"; tail -2 $R/pytest.log
grep -E "^\| [01]-" $R/sweeps.md | cut -c1-40,100-200
tail -3 $R/py-gemm.md
tar czf $D/r.tgz -C $R .
