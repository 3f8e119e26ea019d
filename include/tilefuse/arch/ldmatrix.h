// ldmatrix (sm_75+): four 8x8 tiles of 16-bit elements from shared memory into the register layout
// mma.sync expects. Lane i gives the address of row (i % 8) of tile (i / 8); register j of every lane
// receives its two elements of tile j (row lane / 4, 16-bit columns 2 (lane % 4) and 2 (lane % 4) + 1).
// The .trans form delivers the transposed tiles. Seen as 32-bit elements, a tile is 8 rows of 4 and
// register j holds element (lane / 4, lane % 4) of tile j (there is no 32-bit transpose).
// Also a 32-bit shared-memory load, for fragments that ldmatrix cannot deliver.
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

// One 32-bit load from shared memory (a generic pointer into it).
// NOTES: volatile like the ldmatrix above, so it stays between the barriers that guard its stage.
TILEFUSE_DEVICE inline cuda::std::uint32_t ld_shared_b32(void const* smem) {
  cuda::std::uint32_t r = 0;
#if defined(__CUDA_ARCH__)
  auto const addr = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(addr));
#endif
  return r;
}

}  // namespace tilefuse::arch
