#!/usr/bin/env bash
# Prints the Python interpreter the scripts use: $PYTHON if set, else the active virtual environment's,
# else .venv/bin/python of this checkout (made by scripts/setup.sh) if it exists, else python3.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${PYTHON:-}" ]]; then
  echo "$PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then
  echo "$VIRTUAL_ENV/bin/python"
elif [[ -x .venv/bin/python ]]; then
  echo "$PWD/.venv/bin/python"
else
  echo python3
fi
