#!/usr/bin/env bash
# The library's rule "a choice is a Config member or a typed override": under include/, no build switch
# (#ifndef / #ifdef / #if defined of a TILEFUSE_ macro, other than the TILEFUSE_ARCH_* and
# TILEFUSE_IS_DEVICE_CODE facts the compiler sets) and no getenv. Also (issue 36): at most 10 version
# tags (v16, v130c) in comments under include/; numbers and version trails go to docs/notes/.
# And: a function defined at a header's top level is inline, constexpr or a template (else each translation
# unit that includes it defines it again and the link fails).
# Run by ctest (repo.include_rules).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
switches=$(grep -rnE '^\s*#\s*(ifndef|ifdef|if\s+!?\s*defined\s*\(?)\s*TILEFUSE_' include/ | grep -vE 'TILEFUSE_(ARCH_|IS_DEVICE_CODE)' || true)
if [[ -n "$switches" ]]; then
  echo "include/ has build switches; make each a Config member (or delete it):"
  echo "$switches"
  bad=1
fi
env_reads=$(grep -rnE '\b(std::)?(secure_)?getenv\s*\(' include/ || true)
if [[ -n "$env_reads" ]]; then
  echo "include/ reads the environment; make it an Arguments / Overrides field:"
  echo "$env_reads"
  bad=1
fi
# Comment text: after //, inside /* */, or a block comment's leading-* line; then the tags in it.
tags=$({ grep -rhoE '//.*|/\*([^*]|\*[^/])*(\*/|$)|^\s*\*( .*|$)' include/ || true; } | { grep -oE '\bv[0-9]+[a-z]?\b' || true; } | wc -l)
if ((tags > 10)); then
  echo "include/ comments carry $tags version tags (at most 10): keep the why, move the numbers and runs to docs/notes/:"
  grep -rnE '(//|/\*|^\s*\*( |$)).*\bv[0-9]+[a-z]?\b' include/ || true
  bad=1
fi
not_inline=$(for f in $(find include -name '*.h' -o -name '*.hpp' -o -name '*.cuh'); do
  awk -v f="$f" '/^(TILEFUSE_DEVICE|TILEFUSE_HOST_DEVICE|__device__|__host__)[ (]/ && prev !~ /^template/ &&
    $0 !~ /(inline|constexpr|TILEFUSE_FORCEINLINE)/ { print f ":" NR ": " $0 }
    $0 !~ /^ *\/\// { prev = $0 }' "$f"
done)
if [[ -n "$not_inline" ]]; then
  echo "include/ defines functions that are neither inline, constexpr nor templates (multiple definitions at link):"
  echo "$not_inline"
  bad=1
fi
if [[ $bad == 0 ]]; then echo "include/: no build switches, no getenv, $tags version tags in comments"; fi
exit $bad
