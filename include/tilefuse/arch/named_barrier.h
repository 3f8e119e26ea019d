// Named barriers (bar.sync / bar.arrive with an id and a thread count): a subset of the block's warps
// synchronizes without the rest. Id 0 is __syncthreads'; kernels number their own from 1.
//
// arrive does not wait, so one group can signal another and go on (the ping-pong consumers of the
// sm90 GEMM hand the tensor cores to each other this way). Every barrier completes when `threads`
// threads have arrived or synced on it; counts are multiples of the warp size.
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

TILEFUSE_DEVICE inline void named_barrier_sync(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#else
  (void)id, (void)threads;
#endif
}

TILEFUSE_DEVICE inline void named_barrier_arrive(int id, int threads) {
#if defined(__CUDA_ARCH__)
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
#else
  (void)id, (void)threads;
#endif
}

}  // namespace tilefuse::arch
