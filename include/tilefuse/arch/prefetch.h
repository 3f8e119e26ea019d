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

}  // namespace tilefuse::arch
