// WGMMA with FP8 operands (sm_90a): wgmma.mma_async.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}, both operands
// from shared memory through descriptors, fp32 accumulators. Inline PTX like arch/wgmma.h, whose fences,
// descriptor and register layout these use unchanged.
//
// What differs from the 16-bit wgmma (PTX ISA, "wgmma.mma_async", FP8 variant):
//   - K is 32 per instruction: 32 one-byte elements, the same 32 bytes of a 128-byte swizzled row as a
//     bf16 k16 step. So smem_descriptor_k_major_sw128 (arch/wgmma.h) describes FP8 tiles as they are:
//     a k-tile of 128 elements is one 128-byte row, 4 wgmmas, the start address advancing 32 bytes each.
//   - Both operands must be K-major: the FP8 variant has no imm-trans-a / imm-trans-b operands
//     (transpose exists only for f16/bf16), so A is row-major and B column-major in global memory.
//   - A and B may have different FP8 types (e4m3 x e5m2 and the reverse are valid PTX).
//   - The operand list ends after imm-scale-a, imm-scale-b: d, a-desc, b-desc, scale-d, 1, 1.
// The accumulator layout per thread is the one documented in arch/wgmma.h (d[N / 2], m16n8 fragments).
// The tensor core adds FP8 products into D with less than fp32 precision; kernels that need fp32
// accuracy over long K add D into a second, fp32 accumulator set every 4 wgmmas (128 of K) and restart D
// with scale_d = 0 (docs/notes/gemm_fp8.md).
//
// Every function compiles on any arch (NVRTC checks the headers for sm_80); the instructions exist
// only for sm_90a.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/wgmma.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

namespace detail {

template <class T>
inline constexpr bool kIsFp8 = cuda::std::is_same_v<T, float_e4m3_t> || cuda::std::is_same_v<T, float_e5m2_t>;

}  // namespace detail

// ---- wgmma.mma_async, FP8 A and B from shared memory (both K-major) ----
//
// scale_d = 0: D = A * B (the first k-step of a tile or of a promotion interval); otherwise D += A * B.
// The PTX type suffix ("e4m3.e5m2": A's type, then B's) is pasted into the instruction by the macros
// below, so the four type pairs share one operand list per N. The macros expect d, desc_a, desc_b and
// scale_d in scope and are undefined at the end of this file.

#define TILEFUSE_WGMMA_M64N64K32_FP8(TYPES)                                                                     \
  asm volatile(                                                                                                 \
      "{\n"                                                                                                     \
      ".reg .pred p;\n"                                                                                         \
      "setp.ne.b32 p, %34, 0;\n"                                                                                \
      "wgmma.mma_async.sync.aligned.m64n64k32.f32." TYPES " "                                                   \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                                  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                       \
      "%32, %33, p, 1, 1;\n"                                                                                    \
      "}\n"                                                                                                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),         \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),   \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])  \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define TILEFUSE_WGMMA_M64N128K32_FP8(TYPES)                                                                    \
  asm volatile(                                                                                                 \
      "{\n"                                                                                                     \
      ".reg .pred p;\n"                                                                                         \
      "setp.ne.b32 p, %66, 0;\n"                                                                                \
      "wgmma.mma_async.sync.aligned.m64n128k32.f32." TYPES " "                                                  \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                                  \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"                         \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"                         \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                       \
      "%64, %65, p, 1, 1;\n"                                                                                    \
      "}\n"                                                                                                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),         \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),   \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])  \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

#define TILEFUSE_WGMMA_M64N256K32_FP8(TYPES)                                                                            \
  asm volatile(                                                                                                         \
      "{\n"                                                                                                             \
      ".reg .pred p;\n"                                                                                                 \
      "setp.ne.b32 p, %130, 0;\n"                                                                                       \
      "wgmma.mma_async.sync.aligned.m64n256k32.f32." TYPES " "                                                          \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                                          \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"                                 \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"                                 \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"                                 \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"                                 \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"                                 \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"                     \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "               \
      "%128, %129, p, 1, 1;\n"                                                                                          \
      "}\n"                                                                                                             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                 \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),           \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),         \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),         \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),         \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),         \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),         \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),         \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),         \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),         \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),         \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),         \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),     \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])  \
      : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// D (64 x N, fp32, N / 2 registers per thread) (+)= A (64 x 32, fp8, smem) * B (32 x N, fp8, smem),
// for N = 64, 128, 256. ElementA and ElementB: float_e4m3_t or float_e5m2_t, in any combination.
template <class ElementA, class ElementB>
TILEFUSE_DEVICE inline void wgmma_m64n64k32_fp8(float (&d)[32], cuda::std::uint64_t desc_a,
                                                cuda::std::uint64_t desc_b, int scale_d) {
  static_assert(detail::kIsFp8<ElementA> && detail::kIsFp8<ElementB>,
                "wgmma_m64n64k32_fp8 takes float_e4m3_t or float_e5m2_t operands");
#if TILEFUSE_ARCH_SM90A
  constexpr bool kA4 = cuda::std::is_same_v<ElementA, float_e4m3_t>;
  constexpr bool kB4 = cuda::std::is_same_v<ElementB, float_e4m3_t>;
  if constexpr (kA4 && kB4) TILEFUSE_WGMMA_M64N64K32_FP8("e4m3.e4m3");
  else if constexpr (kA4) TILEFUSE_WGMMA_M64N64K32_FP8("e4m3.e5m2");
  else if constexpr (kB4) TILEFUSE_WGMMA_M64N64K32_FP8("e5m2.e4m3");
  else TILEFUSE_WGMMA_M64N64K32_FP8("e5m2.e5m2");
#else
  (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
#endif
}

template <class ElementA, class ElementB>
TILEFUSE_DEVICE inline void wgmma_m64n128k32_fp8(float (&d)[64], cuda::std::uint64_t desc_a,
                                                 cuda::std::uint64_t desc_b, int scale_d) {
  static_assert(detail::kIsFp8<ElementA> && detail::kIsFp8<ElementB>,
                "wgmma_m64n128k32_fp8 takes float_e4m3_t or float_e5m2_t operands");
#if TILEFUSE_ARCH_SM90A
  constexpr bool kA4 = cuda::std::is_same_v<ElementA, float_e4m3_t>;
  constexpr bool kB4 = cuda::std::is_same_v<ElementB, float_e4m3_t>;
  if constexpr (kA4 && kB4) TILEFUSE_WGMMA_M64N128K32_FP8("e4m3.e4m3");
  else if constexpr (kA4) TILEFUSE_WGMMA_M64N128K32_FP8("e4m3.e5m2");
  else if constexpr (kB4) TILEFUSE_WGMMA_M64N128K32_FP8("e5m2.e4m3");
  else TILEFUSE_WGMMA_M64N128K32_FP8("e5m2.e5m2");
#else
  (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
#endif
}

template <class ElementA, class ElementB>
TILEFUSE_DEVICE inline void wgmma_m64n256k32_fp8(float (&d)[128], cuda::std::uint64_t desc_a,
                                                 cuda::std::uint64_t desc_b, int scale_d) {
  static_assert(detail::kIsFp8<ElementA> && detail::kIsFp8<ElementB>,
                "wgmma_m64n256k32_fp8 takes float_e4m3_t or float_e5m2_t operands");
#if TILEFUSE_ARCH_SM90A
  constexpr bool kA4 = cuda::std::is_same_v<ElementA, float_e4m3_t>;
  constexpr bool kB4 = cuda::std::is_same_v<ElementB, float_e4m3_t>;
  if constexpr (kA4 && kB4) TILEFUSE_WGMMA_M64N256K32_FP8("e4m3.e4m3");
  else if constexpr (kA4) TILEFUSE_WGMMA_M64N256K32_FP8("e4m3.e5m2");
  else if constexpr (kB4) TILEFUSE_WGMMA_M64N256K32_FP8("e5m2.e4m3");
  else TILEFUSE_WGMMA_M64N256K32_FP8("e5m2.e5m2");
#else
  (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
#endif
}

#undef TILEFUSE_WGMMA_M64N64K32_FP8
#undef TILEFUSE_WGMMA_M64N128K32_FP8
#undef TILEFUSE_WGMMA_M64N256K32_FP8

// The FP8 counterpart of wgmma_m64k16: one 64 x N x 32 step, N = 64, 128 or 256 (given explicitly:
// it cannot be deduced from d's extent N / 2).
template <class ElementA, class ElementB, int N>
TILEFUSE_DEVICE inline void wgmma_m64k32(float (&d)[N / 2], cuda::std::uint64_t desc_a, cuda::std::uint64_t desc_b,
                                         int scale_d) {
  static_assert(detail::kIsFp8<ElementA> && detail::kIsFp8<ElementB>,
                "wgmma_m64k32 takes float_e4m3_t or float_e5m2_t operands");
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_m64k32 is instantiated for N = 64, 128 and 256");
  if constexpr (N == 256) {
    wgmma_m64n256k32_fp8<ElementA, ElementB>(d, desc_a, desc_b, scale_d);
  } else if constexpr (N == 128) {
    wgmma_m64n128k32_fp8<ElementA, ElementB>(d, desc_a, desc_b, scale_d);
  } else {
    wgmma_m64n64k32_fp8<ElementA, ElementB>(d, desc_a, desc_b, scale_d);
  }
}

}  // namespace tilefuse::arch
