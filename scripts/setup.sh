#!/usr/bin/env bash
# Installs what a fresh machine of the project's kind lacks (Debian packages), and checks the CUDA
# toolkit. Safe to run again: it installs nothing that is already there.
set -euo pipefail

export PATH="/usr/local/cuda/bin:${PATH}"
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v g++ >/dev/null || missing+=(g++)
command -v readelf >/dev/null || missing+=(binutils)
[ -e /usr/include/gtest/gtest.h ] || missing+=(libgtest-dev)

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

if ! command -v nvcc >/dev/null; then
  echo "setup: nvcc not found. Install the CUDA toolkit (12.8 or newer, 13.0 tested) or add it to PATH." >&2
  exit 1
fi
cmake_version=$(cmake --version | head -n1 | awk '{print $3}')
if [ "$(printf '%s\n3.25\n' "$cmake_version" | sort -V | head -n1)" != "3.25" ]; then
  echo "setup: CMake ${cmake_version} is too old; tilefuse needs 3.25 or newer (pip install cmake)." >&2
  exit 1
fi
echo "setup: cmake ${cmake_version}, $(nvcc --version | tail -n1), $(g++ --version | head -n1)"
