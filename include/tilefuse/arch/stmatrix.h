// stmatrix (sm_90): the inverse of ldmatrix. Four 8x8 tiles of 16-bit elements go from the register
// layout of mma/wgmma accumulators (register j of a lane: tile j's row lane / 4, columns 2 (lane % 4)
// and 2 (lane % 4) + 1, the lower column in the low half) to shared memory; lane i gives the address
// of row (i % 8) of tile (i / 8), 16 bytes each.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

TILEFUSE_DEVICE inline void stmatrix_x4(cuda::std::uint32_t const (&r)[4], void* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  auto const addr = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem_row));
  // "memory": the warp reads the tiles back with plain loads after a __syncwarp.
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
               "r"(r[2]), "r"(r[3])
               : "memory");
#else
  (void)r, (void)smem_row;
#endif
}

}  // namespace tilefuse::arch
