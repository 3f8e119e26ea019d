#!/usr/bin/env bash
# Run HERE (the build machine) before a device call: copies GoogleTest's sources into
# third_party/googletest (git-ignored), which the device machine has no package for and no network to
# fetch; cmake/tilefuse_helpers.cmake falls back to them. Then carry that path with the device call:
#   carry: ["third_party/googletest"]      command: scripts/gpu/run_all.sh
# Usage: scripts/gpu/prepare_carry.sh [googletest source dir, default /usr/src/googletest]
set -euo pipefail
cd "$(dirname "$0")/../.."

src="${1:-/usr/src/googletest}"
dest="third_party/googletest"

if [[ ! -f "$src/CMakeLists.txt" || ! -d "$src/googletest" ]]; then
  echo "prepare_carry: $src does not hold GoogleTest's sources (CMakeLists.txt and googletest/);" >&2
  echo "  install them with: apt-get install googletest   (Debian/Ubuntu), or pass another directory" >&2
  exit 1
fi
if ! git check-ignore -q "$dest" 2>/dev/null; then
  echo "prepare_carry: warning: $dest is not git-ignored here; the device call carries it only if it is" >&2
fi

mkdir -p third_party
rm -rf "$dest"
# Only what a CMake build of gtest needs: no docs, no CI files, no build trees.
cp -a "$src" "$dest"
rm -rf "$dest"/docs "$dest"/ci "$dest"/.github "$dest"/build 2>/dev/null || true

size_kib=$(du -sk "$dest" | cut -f1)
echo "prepare_carry: copied $src -> $dest (${size_kib} KiB)"
if (( size_kib > 32768 )); then
  echo "prepare_carry: warning: ${size_kib} KiB is a large share of the 64 MiB a device call may carry" >&2
fi
echo "prepare_carry: now run the device call with carry [\"$dest\"] and command scripts/gpu/run_all.sh"
