// ld.global.nc: a load through the read-only (non-coherent) path. It tells the compiler the bytes do not
// change while the kernel runs, so it may issue the load ahead of stores to other addresses: the
// epilogue's residual and bias loads of one visit no longer wait behind the previous visit's stores.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

// Copies `Bytes` (a multiple of 16) from 16-byte-aligned global memory `src` to `dst`.
template <int Bytes>
TILEFUSE_HOST_DEVICE inline void load_global_nc(void* dst, void const* src) {
  static_assert(Bytes % 16 == 0, "whole 16-byte vectors");
  auto* out = static_cast<uint4*>(dst);
  auto const* in = static_cast<uint4 const*>(src);
#pragma unroll
  for (int i = 0; i < Bytes / 16; ++i) {
#if defined(__CUDA_ARCH__)
    out[i] = __ldg(in + i);
#else
    out[i] = in[i];
#endif
  }
}

}  // namespace tilefuse::arch
