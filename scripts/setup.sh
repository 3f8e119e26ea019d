#!/usr/bin/env bash
# Installs what a fresh machine of the project's kind lacks (Debian packages; Python tools into a virtual
# environment, below), and checks the CUDA toolkit. Safe to run again: it installs nothing that is already
# there. Usage: scripts/setup.sh [--with-torch]
set -euo pipefail
cd "$(dirname "$0")/.."

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

# The Python package's build backend and test tools (tests/python/run.sh builds without isolation), and
# with --with-torch PyTorch and torchvision (pinned to the GPU machine's 2.11 / 0.26), go into the active
# virtual environment, or into .venv in this checkout (made here) when none is active: never into the
# system's python3.
command -v python3 >/dev/null || { echo "setup: python3 (3.10 or newer) not found; install it" >&2; exit 1; }
with_torch=0
for arg in "$@"; do
  case "$arg" in
    --with-torch) with_torch=1 ;;
    *) echo "setup: unknown argument $arg (known: --with-torch)" >&2; exit 2 ;;
  esac
done
if [[ -z "${PYTHON:-}" && -z "${VIRTUAL_ENV:-}" && ! -x .venv/bin/python ]]; then
  python3 -m venv .venv || { echo "setup: python3 -m venv .venv failed; install python3-venv or activate an environment" >&2; exit 1; }
fi
python=$(scripts/python_env.sh)
python_missing=()
"$python" -c "import scikit_build_core" 2>/dev/null || python_missing+=("scikit-build-core>=0.10")
"$python" -c "import nanobind" 2>/dev/null || python_missing+=("nanobind>=2.0")
"$python" -c "import pytest" 2>/dev/null || python_missing+=(pytest)
"$python" -c "import numpy" 2>/dev/null || python_missing+=(numpy)
"$python" -c "import pyflakes" 2>/dev/null || python_missing+=(pyflakes)
if [[ $with_torch == 1 ]] && ! "$python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.11.0')" 2>/dev/null; then
  python_missing+=("torch==2.11.0")
fi
if [[ $with_torch == 1 ]] && ! "$python" -c "import torchvision" 2>/dev/null; then
  python_missing+=("torchvision==0.26.0")  # torch 2.11's: the backend's CPU tests on whole models
fi
if [ ${#python_missing[@]} -gt 0 ]; then
  echo "setup: pip installing ${python_missing[*]} into $("$python" -c 'import sys; print(sys.prefix)')"
  "$python" -m pip install --quiet --disable-pip-version-check --no-cache-dir --root-user-action=ignore "${python_missing[@]}" || {
    echo "setup: pip could not install ${python_missing[*]} into $python" >&2
    exit 1
  }
fi
echo "setup: Python tools in $("$python" -c 'import sys; print(sys.prefix)')"
echo "setup: cmake ${cmake_version}, $(nvcc --version | tail -n1), $(g++ --version | head -n1)"
