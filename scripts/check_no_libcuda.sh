#!/usr/bin/env bash
# Fails if any ELF executable or shared library under a build directory depends on libcuda.so (the
# driver library, which tilefuse must reach only through the CUDA runtime). libcudart is fine.
# Usage: scripts/check_no_libcuda.sh <build-dir>
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <build-dir>" >&2
  exit 1
fi
build_dir=$1
if [[ ! -d "$build_dir" ]]; then
  echo "check_no_libcuda: $build_dir is not a directory" >&2
  exit 1
fi
for tool in readelf ldd; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "check_no_libcuda: $tool not found (install binutils / libc-bin)" >&2
    exit 1
  fi
done

# libcuda.so, libcuda.so.1, ...; never libcudart.so or libcudadevrt.
libcuda_pattern='(^|[^[:alnum:]_])libcuda\.so([.0-9]*)?([^[:alnum:]_.]|$)'

checked=0
offenders=0
# CMakeFiles/ holds compiler-id probes and try_compile outputs, not tilefuse binaries.
while IFS= read -r -d '' file; do
  # Only ELF files whose type is an executable or a shared object (PIE executables are DYN too).
  [[ "$(head -c 4 "$file" 2>/dev/null | od -An -c | tr -d ' ')" == '177ELF' ]] || continue
  type=$(readelf -h "$file" 2>/dev/null | awk -F: '/^ *Type:/ { sub(/^ +/, "", $2); print $2 }')
  case "$type" in
    EXEC*|DYN*) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))

  needed=$(readelf -d "$file" 2>/dev/null | grep 'NEEDED' | grep -E "$libcuda_pattern" | sed 's/^[[:space:]]*//')
  # ldd also shows what the dependencies pull in; its exit status is ignored because it fails on
  # static executables, which have no dependencies to report.
  resolved=$(ldd "$file" 2>/dev/null | grep -E "$libcuda_pattern" | sed 's/^[[:space:]]*//')
  if [[ -n "$needed" || -n "$resolved" ]]; then
    offenders=$((offenders + 1))
    echo "FAIL: $file depends on libcuda.so (tilefuse must reach the driver through cudaGetDriverEntryPointByVersion):"
    [[ -n "$needed" ]] && echo "  readelf -d: ${needed//$'\n'/$'\n'  readelf -d: }"
    [[ -n "$resolved" ]] && echo "  ldd: ${resolved//$'\n'/$'\n'  ldd: }"
  fi
done < <(find "$build_dir" -type d -name CMakeFiles -prune -o -type f -print0)

if [[ $checked -eq 0 ]]; then
  echo "check_no_libcuda: found no ELF executables or shared libraries under $build_dir; a check of nothing does not pass (build first, or pass the right directory)" >&2
  exit 1
fi
if [[ $offenders -ne 0 ]]; then
  echo "check_no_libcuda: $offenders of $checked ELF files under $build_dir depend on libcuda.so" >&2
  exit 1
fi
echo "check_no_libcuda: checked $checked ELF files under $build_dir; none depends on libcuda.so"
exit 0
