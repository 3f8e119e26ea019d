// mma.sync.m16n8k16 (sm_80+) with fp32 accumulation, for bf16 and fp16 inputs.
// Fragments, with g = lane / 4 and t = lane % 4 (each a register of two 16-bit values along k, or
// two floats along n):
//   A (16x16, row):  a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..)  a2 = (g, 2t+8..)  a3 = (g+8, 2t+8..)
//   B (16x8, col):   b0 = (k 2t..2t+1, n g)   b1 = (k 2t+8.., n g)
//   C/D (16x8):      d0,d1 = (g, 2t..2t+1)    d2,d3 = (g+8, 2t..2t+1)
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

template <class Element>
TILEFUSE_DEVICE inline void mma_m16n8k16(float (&d)[4], cuda::std::uint32_t const (&a)[4],
                                         cuda::std::uint32_t const (&b)[2]) {
  static_assert(cuda::std::is_same_v<Element, bfloat16_t> || cuda::std::is_same_v<Element, half_t>,
                "mma_m16n8k16 takes bf16 or fp16 inputs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (cuda::std::is_same_v<Element, bfloat16_t>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

}  // namespace tilefuse::arch
