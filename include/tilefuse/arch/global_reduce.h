// Reductions into global memory performed at L2 (sm_90): the Hopper kernel's in-kernel split-K adds
// each split's fp32 accumulators into one sum with them, and counts the splits that are done.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

// *address += (a, b, c, d): one relaxed, GPU-scope vector reduction (no return value: the L2 performs
// it, the thread does not wait). address is 16-byte aligned.
TILEFUSE_DEVICE inline void red_add_v4(float* address, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(address), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
#else
  (void)address, (void)a, (void)b, (void)c, (void)d;
#endif
}

// Returns *counter and adds one to it, at GPU scope with acquire-release order: this thread's earlier
// writes (and, through a fence, its warp's) are visible to whoever sees the new count, and the writes
// of those who counted before are visible to this thread afterwards.
TILEFUSE_DEVICE inline int fetch_add_acq_rel(int* counter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  int old = 0;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(counter) : "memory");
  return old;
#else
  (void)counter;
  return 0;
#endif
}

}  // namespace tilefuse::arch
