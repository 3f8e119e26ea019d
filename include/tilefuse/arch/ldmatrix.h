// ldmatrix (sm_75+): four 8x8 tiles of 16-bit elements from shared memory into the register layout
// mma.sync expects. Lane i gives the address of row (i % 8) of tile (i / 8); register j of every lane
// receives its two elements of tile j. The .trans form delivers the transposed tiles.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

TILEFUSE_DEVICE inline void ldmatrix_x4(cuda::std::uint32_t (&r)[4], void const* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  auto const addr = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

TILEFUSE_DEVICE inline void ldmatrix_x4_trans(cuda::std::uint32_t (&r)[4], void const* smem_row) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  auto const addr = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

}  // namespace tilefuse::arch
