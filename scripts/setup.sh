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

# The Python package's build backend and test tools (tests/python/run.sh builds without isolation).
command -v python3 >/dev/null || { echo "setup: python3 (3.10 or newer) not found; install it" >&2; exit 1; }
python_missing=()
python3 -c "import scikit_build_core" 2>/dev/null || python_missing+=("scikit-build-core>=0.10")
python3 -c "import nanobind" 2>/dev/null || python_missing+=("nanobind>=2.0")
python3 -c "import pytest" 2>/dev/null || python_missing+=(pytest)
python3 -c "import numpy" 2>/dev/null || python_missing+=(numpy)
if [ ${#python_missing[@]} -gt 0 ]; then
  echo "setup: pip installing ${python_missing[*]}"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "${python_missing[@]}" || {
    echo "setup: pip could not install ${python_missing[*]}; install them into this python3 (or a venv on PATH)" >&2
    exit 1
  }
fi
echo "setup: cmake ${cmake_version}, $(nvcc --version | tail -n1), $(g++ --version | head -n1)"
