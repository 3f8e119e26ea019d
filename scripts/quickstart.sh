#!/usr/bin/env bash
# README's first command: sets up a fresh machine, builds, and runs the main job — a fused convolution
# (conv2d + bias + ReLU + residual add), checked and timed; on a machine without a GPU it says so and
# runs the host reference.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build_dir=$(scripts/configure.sh)
cmake --build "$build_dir" --target quickstart_fused_conv -j "$(nproc)"
"$build_dir/examples/quickstart_fused_conv"
