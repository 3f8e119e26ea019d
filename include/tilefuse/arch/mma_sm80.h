// mma.sync (sm_80+) with fp32 accumulation: m16n8k16 for bf16 and fp16 inputs, m16n8k8 for tf32 inputs,
// and the float -> tf32 rounding of fragments.
// Fragments, with g = lane / 4 and t = lane % 4.
// m16n8k16, 16-bit inputs (each A/B register holds two 16-bit values along k):
//   A (16x16, row):  a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..)  a2 = (g, 2t+8..)  a3 = (g+8, 2t+8..)
//   B (16x8, col):   b0 = (k 2t..2t+1, n g)   b1 = (k 2t+8.., n g)
// m16n8k8, tf32 inputs (each A/B register holds one tf32 value, a float whose low 13 bits are ignored):
//   A (16x8, row):   a0 = (g, t)   a1 = (g+8, t)   a2 = (g, t+4)   a3 = (g+8, t+4)
//   B (8x8, col):    b0 = (k t, n g)   b1 = (k t+4, n g)
// Both, as registers of 32 bits, are the same four 8x8 tiles of 16-byte rows (A: (m, k-half) = (0,0)
// (8,0) (0,1) (8,1); B: k-halves 0, 1), so one ldmatrix loads either (sm80_smem_tile.h).
//   C/D (16x8, both): d0,d1 = (g, 2t..2t+1)    d2,d3 = (g+8, 2t..2t+1)
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
#elif defined(__CUDA_ARCH__)
  __trap();  // no mma.sync below sm_80: fail loudly, never a silent zero
#endif
}

// D += A * B with tf32 inputs (the registers hold floats; the tensor core reads their upper 19 bits).
TILEFUSE_DEVICE inline void mma_m16n8k8_tf32(float (&d)[4], cuda::std::uint32_t const (&a)[4],
                                             cuda::std::uint32_t const (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
  __trap();  // no mma.sync below sm_80: fail loudly, never a silent zero
#endif
}

// The k extent of one mma for an input element type: 16 for 16-bit inputs, 8 for tf32 (float and
// tfloat32_t, 32-bit elements).
template <class Element>
inline constexpr int kMmaK = sizeof(Element) == 2 ? 16 : 8;

// One m16n8 mma of the input element type: bf16 / fp16 -> m16n8k16; float / tfloat32_t -> m16n8k8.tf32
// (float fragments must have been rounded with round_fragment_to_tf32 first).
template <class Element>
TILEFUSE_DEVICE inline void mma_m16n8(float (&d)[4], cuda::std::uint32_t const (&a)[4],
                                      cuda::std::uint32_t const (&b)[2]) {
  if constexpr (sizeof(Element) == 2) {
    mma_m16n8k16<Element>(d, a, b);
  } else {
    static_assert(cuda::std::is_same_v<Element, float> || cuda::std::is_same_v<Element, tfloat32_t>,
                  "32-bit mma inputs are float (rounded to tf32) or tfloat32_t");
    mma_m16n8k8_tf32(d, a, b);
  }
}

// The bits of a float rounded to tf32, to nearest with ties away from zero (cvt.rna.tf32.f32, the
// rounding of round_to_tf32 in core/numeric_types.h); the low 13 bits of the result are zero.
TILEFUSE_DEVICE inline cuda::std::uint32_t cvt_rna_tf32(cuda::std::uint32_t float_bits) {
  cuda::std::uint32_t r = float_bits;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "r"(float_bits));
#endif
  return r;
}

// Rounds every register of a fragment of floats to tf32 (float inputs); tfloat32_t and 16-bit
// fragments are left as loaded.
template <class Element, int N>
TILEFUSE_DEVICE inline void round_fragment_to_tf32(cuda::std::uint32_t (&r)[N]) {
  if constexpr (cuda::std::is_same_v<Element, float>) {
#pragma unroll
    for (int i = 0; i < N; ++i) r[i] = cvt_rna_tf32(r[i]);
  }
}

}  // namespace tilefuse::arch
