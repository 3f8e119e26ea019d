// prefetch.global.L2: asks for the line holding an address to be brought into L2, without waiting.
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

TILEFUSE_HOST_DEVICE inline void prefetch_l2(void const* ptr) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(ptr));
#else
  (void)ptr;
#endif
}

// Asks L2 for `bytes` (at least 1) from `ptr` on, never naming a byte outside [ptr, ptr + bytes): up to a
// line, prefetch.global.L2 of the line(s) it touches; more, on sm_90, one bulk prefetch
// (cp.async.bulk.prefetch.L2) of the whole 16-byte pieces from a 16-byte-aligned start and line
// prefetches for the rest (all of it in lines before sm_90).
TILEFUSE_HOST_DEVICE inline void prefetch_l2_bytes(void const* ptr, unsigned bytes) {
#if defined(__CUDA_ARCH__)
  auto const* first = static_cast<char const*>(ptr);
  auto const address = reinterpret_cast<unsigned long long>(ptr);
  if (bytes <= 128) {
    prefetch_l2(first);
    if (address / 128 != (address + bytes - 1) / 128) prefetch_l2(first + bytes - 1);
    return;
  }
  unsigned done = 0;
#if __CUDA_ARCH__ >= 900
  if (address % 16 == 0) {
    done = bytes / 16 * 16;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(ptr), "r"(done) : "memory");
  }
#endif
  for (unsigned offset = done; offset < bytes; offset += 128) prefetch_l2(first + offset);
  if (done < bytes) prefetch_l2(first + bytes - 1);
#else
  (void)ptr, (void)bytes;
#endif
}

}  // namespace tilefuse::arch
