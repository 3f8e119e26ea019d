// WGMMA (sm_90a): warpgroup matrix multiply-accumulate with both operands in shared memory, plus the
// fences that order it, the shared-memory matrix descriptor, and register reallocation (setmaxnreg).
// Inline PTX: CCCL's cuda::ptx does not cover wgmma.
//
// One wgmma.mma_async.m64nNk16 is issued by a whole warpgroup (4 warps, 128 threads). The fp32
// accumulator D (64 x N) is spread over the warpgroup like mma.sync's m16n8 tiles: thread t of the
// warpgroup holds, for j < N / 8,
//   d[4j + 0], d[4j + 1] -> row 16 * (t / 32) + (t % 32) / 4,     cols 8j + 2 * (t % 4) + {0, 1}
//   d[4j + 2], d[4j + 3] -> the same columns, 8 rows further down.
//
// Every function compiles on any arch (NVRTC checks the headers for sm_80); the instructions exist
// only for sm_90a, the arch the Hopper kernels are built for.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TILEFUSE_ARCH_SM90A 1
#else
#define TILEFUSE_ARCH_SM90A 0
#endif

namespace tilefuse::arch {

// ---- shared-memory matrix descriptors ----

// The descriptor of a K-major operand tile stored as TMA's 128-byte swizzle writes it: rows of
// exactly 128 bytes (64 bf16/fp16 elements of K), 16-byte chunks XOR-permuted by (row % 8), groups of
// 8 rows 1024 bytes apart. `smem` is the first element of the 64 x 16 (A) or N x 16 (B) slice the
// instruction reads: the tile base (1024-byte aligned, so the base-offset field stays 0) plus
// 32 bytes per k-step of 16 elements; the hardware applies the swizzle to the address it computes,
// which is why stepping along K inside the 128-byte row is a plain address increment.
//   bits  0-13: start address >> 4
//   bits 16-29: leading-dimension byte offset >> 4 (unused by swizzled K-major layouts; set to 1)
//   bits 32-45: stride byte offset >> 4 (1024: from one group of 8 rows to the next)
//   bits 62-63: swizzle mode (1: 128-byte swizzle)
// RowBytes 64: TMA's 64-byte swizzle (16-byte chunks XOR (row / 2) % 4 within 512-byte groups of 8
// rows, swizzle mode 2), for FP8 k-tiles of 64 channels (the conv with C a multiple of 64 but not 128).
template <int RowBytes = 128>
TILEFUSE_DEVICE inline cuda::std::uint64_t smem_descriptor_k_major(void const* smem) {
  static_assert(RowBytes == 128 || RowBytes == 64, "128- or 64-byte swizzled rows");
#if defined(__CUDA_ARCH__)
  auto const address = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
#else
  cuda::std::uint32_t const address = 0;
  (void)smem;
#endif
  cuda::std::uint64_t desc = 0;
  desc |= static_cast<cuda::std::uint64_t>((address & 0x3FFFFu) >> 4);
  desc |= cuda::std::uint64_t{1} << 16;
  desc |= static_cast<cuda::std::uint64_t>((8 * RowBytes) >> 4) << 32;
  desc |= cuda::std::uint64_t{RowBytes == 128 ? 1u : 2u} << 62;
  return desc;
}
TILEFUSE_DEVICE inline cuda::std::uint64_t smem_descriptor_k_major_sw128(void const* smem) {
  return smem_descriptor_k_major<128>(smem);
}

// The descriptor of an MN-major operand tile (bf16/fp16 only) in 128-byte swizzle: blocks of 64
// contiguous MN elements, each block K rows of 128 bytes (16-byte chunks XOR-permuted by row % 8, as
// TMA writes a 64-element-wide box), consecutive blocks `block_bytes` apart. In the canonical layout
// ((8 elements, 8, m), (8 rows, k)) : ((1, 8, LBO), (64, SBO)) the leading-dimension byte offset is the
// step between 64-element blocks along MN (block_bytes) and the stride byte offset the step between
// groups of 8 K rows (1024). `smem` is the instruction's first K row (1024-byte aligned: a k-step of 16
// rows is 2048 bytes).
TILEFUSE_DEVICE inline cuda::std::uint64_t smem_descriptor_mn_major_sw128(void const* smem, int block_bytes) {
#if defined(__CUDA_ARCH__)
  auto const address = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
#else
  cuda::std::uint32_t const address = 0;
  (void)smem;
#endif
  cuda::std::uint64_t desc = 0;
  desc |= static_cast<cuda::std::uint64_t>((address & 0x3FFFFu) >> 4);
  desc |= static_cast<cuda::std::uint64_t>((static_cast<cuda::std::uint32_t>(block_bytes) >> 4) & 0x3FFFu) << 16;
  desc |= static_cast<cuda::std::uint64_t>(1024 >> 4) << 32;
  desc |= cuda::std::uint64_t{1} << 62;
  return desc;
}

// `desc` (a k-major 128-byte-swizzle descriptor) moved `units` x 16 bytes along K inside its swizzle
// row. The start address field (the low 14 bits, address >> 4) of a swizzle row's start is a multiple of
// 8 and a row holds 8 units, so the add never carries out of the low word: only it changes. (An
// MN-major descriptor moves whole rows along K; shared addresses stay below 2^18, so its start address
// field does not carry either.)
// NOTES: written as a 64-bit add, the carry into the high word cost two instructions per wgmma,
// on the critical path of the promoted FP8 mainloop (docs/notes/gemm_fp8.md, the block-scaled
// mainloop's critical path).
TILEFUSE_DEVICE inline cuda::std::uint64_t descriptor_advanced(cuda::std::uint64_t desc, cuda::std::uint32_t units) {
  auto const low = static_cast<cuda::std::uint32_t>(desc) + units;
  return (desc & 0xFFFFFFFF00000000ull) | low;
}

// ---- ordering ----

// Before the first wgmma of a batch, and whenever the accumulator registers were touched by other
// instructions since the last wgmma: makes prior register and shared-memory writes visible to wgmma.
TILEFUSE_DEVICE inline void wgmma_fence() {
#if TILEFUSE_ARCH_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

// Closes the batch of wgmmas issued since the last commit into one group.
TILEFUSE_DEVICE inline void wgmma_commit() {
#if TILEFUSE_ARCH_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// Waits until at most `Pending` committed groups of this warpgroup are still running.
template <int Pending>
TILEFUSE_DEVICE inline void wgmma_wait() {
#if TILEFUSE_ARCH_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

// Pins accumulator registers in place: the compiler may not move reads or writes of `r` across this
// point (wgmma writes them asynchronously, invisible to the compiler's data flow).
TILEFUSE_DEVICE inline void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

template <int N>
TILEFUSE_DEVICE inline void fence_operands(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}

// ---- register reallocation between warpgroups ----

// The executing warpgroup gives registers back down to `Registers` per thread (the producer) or asks
// for up to `Registers` (the consumers). Multiples of 8 in [24, 256]; all threads of the warpgroup
// execute it.
template <int Registers>
TILEFUSE_DEVICE inline void setmaxnreg_dec() {
  static_assert(Registers % 8 == 0 && Registers >= 24 && Registers <= 256, "setmaxnreg takes 24..256, step 8");
#if TILEFUSE_ARCH_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}

template <int Registers>
TILEFUSE_DEVICE inline void setmaxnreg_inc() {
  static_assert(Registers % 8 == 0 && Registers >= 24 && Registers <= 256, "setmaxnreg takes 24..256, step 8");
#if TILEFUSE_ARCH_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}

// ---- wgmma.mma_async, A and B from shared memory ----
//
// scale_d = 0: D = A * B (the first k-step of a tile); otherwise D += A * B. TransB = 0: B is K-major
// (the descriptor's rows are N); 1: B is MN-major. TransA likewise for A (1: M contiguous). Transposes
// are for bf16/fp16 only.

// The accumulator operands of the wgmmas below, 16 registers per macro: the "%i" list of the
// instruction's D vector and the matching "+f"(d[i]) constraints (a 64 x N tile holds N / 2 per thread).
#define TILEFUSE_WGMMA_D0_REGS "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define TILEFUSE_WGMMA_D1_REGS "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TILEFUSE_WGMMA_D2_REGS "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define TILEFUSE_WGMMA_D3_REGS "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TILEFUSE_WGMMA_D4_REGS "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define TILEFUSE_WGMMA_D5_REGS "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define TILEFUSE_WGMMA_D6_REGS "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define TILEFUSE_WGMMA_D7_REGS "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TILEFUSE_WGMMA_D0_OPERANDS \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define TILEFUSE_WGMMA_D1_OPERANDS \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define TILEFUSE_WGMMA_D2_OPERANDS \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define TILEFUSE_WGMMA_D3_OPERANDS \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define TILEFUSE_WGMMA_D4_OPERANDS \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define TILEFUSE_WGMMA_D5_OPERANDS \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define TILEFUSE_WGMMA_D6_OPERANDS \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define TILEFUSE_WGMMA_D7_OPERANDS \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// wgmma_m64n<N>k16_<type>: D (64 x N, fp32, N / 2 registers per thread) (+)= A (64 x 16, smem) * B (16 x N,
// smem), for bf16 or f16 operands. REGS and the trailing operands: the D chunks above; A, B, S, TA, TB:
// the operand indices of the descriptors, scale_d and the transposes (N / 2 and on), written out.
#define TILEFUSE_WGMMA_SS(N, TYPE, SUFFIX, REGS, A, B, S, TA, TB, ...)                                   \
  template <int TransA, int TransB>                                                                          \
  TILEFUSE_DEVICE inline void wgmma_m64n##N##k16_##SUFFIX(float(&d)[N / 2], cuda::std::uint64_t desc_a,      \
                                                          cuda::std::uint64_t desc_b, int scale_d) {         \
    TILEFUSE_WGMMA_SS_ASM(N, TYPE, REGS, A, B, S, TA, TB, __VA_ARGS__)                                       \
  }
#if TILEFUSE_ARCH_SM90A
#define TILEFUSE_WGMMA_SS_ASM(N, TYPE, REGS, A, B, S, TA, TB, ...)                          \
  asm volatile("{\n"                                                                          \
               ".reg .pred p;\n"                                                              \
               "setp.ne.b32 p, %" #S ", 0;\n"                                                 \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " "            \
               "{" REGS "}, "                                                                 \
               "%" #A ", %" #B ", p, 1, 1, %" #TA ", %" #TB ";\n"                              \
               "}\n"                                                                          \
               : __VA_ARGS__                                                                  \
               : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB));
#else
#define TILEFUSE_WGMMA_SS_ASM(N, TYPE, REGS, A, B, S, TA, TB, ...) (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
#endif

// The D vectors of N = 64, 96, 128, 160, 192, 256 (32, 48, 64, 80, 96, 128 registers).
#define TILEFUSE_WGMMA_REGS_32 TILEFUSE_WGMMA_D0_REGS ", " TILEFUSE_WGMMA_D1_REGS
#define TILEFUSE_WGMMA_REGS_48 TILEFUSE_WGMMA_REGS_32 ", " TILEFUSE_WGMMA_D2_REGS
#define TILEFUSE_WGMMA_REGS_64 TILEFUSE_WGMMA_REGS_32 ", " TILEFUSE_WGMMA_D2_REGS ", " TILEFUSE_WGMMA_D3_REGS
#define TILEFUSE_WGMMA_REGS_80 TILEFUSE_WGMMA_REGS_64 ", " TILEFUSE_WGMMA_D4_REGS
#define TILEFUSE_WGMMA_REGS_96 TILEFUSE_WGMMA_REGS_80 ", " TILEFUSE_WGMMA_D5_REGS
#define TILEFUSE_WGMMA_REGS_128 TILEFUSE_WGMMA_REGS_96 ", " TILEFUSE_WGMMA_D6_REGS ", " TILEFUSE_WGMMA_D7_REGS
#define TILEFUSE_WGMMA_OPERANDS_32 TILEFUSE_WGMMA_D0_OPERANDS, TILEFUSE_WGMMA_D1_OPERANDS
#define TILEFUSE_WGMMA_OPERANDS_48 TILEFUSE_WGMMA_OPERANDS_32, TILEFUSE_WGMMA_D2_OPERANDS
#define TILEFUSE_WGMMA_OPERANDS_64 TILEFUSE_WGMMA_OPERANDS_32, TILEFUSE_WGMMA_D2_OPERANDS, TILEFUSE_WGMMA_D3_OPERANDS
#define TILEFUSE_WGMMA_OPERANDS_80 TILEFUSE_WGMMA_OPERANDS_64, TILEFUSE_WGMMA_D4_OPERANDS
#define TILEFUSE_WGMMA_OPERANDS_96 TILEFUSE_WGMMA_OPERANDS_80, TILEFUSE_WGMMA_D5_OPERANDS
#define TILEFUSE_WGMMA_OPERANDS_128 TILEFUSE_WGMMA_OPERANDS_96, TILEFUSE_WGMMA_D6_OPERANDS, TILEFUSE_WGMMA_D7_OPERANDS

TILEFUSE_WGMMA_SS(64, "bf16", bf16, TILEFUSE_WGMMA_REGS_32, 32, 33, 34, 35, 36, TILEFUSE_WGMMA_OPERANDS_32)
TILEFUSE_WGMMA_SS(64, "f16", f16, TILEFUSE_WGMMA_REGS_32, 32, 33, 34, 35, 36, TILEFUSE_WGMMA_OPERANDS_32)
TILEFUSE_WGMMA_SS(96, "bf16", bf16, TILEFUSE_WGMMA_REGS_48, 48, 49, 50, 51, 52, TILEFUSE_WGMMA_OPERANDS_48)
TILEFUSE_WGMMA_SS(96, "f16", f16, TILEFUSE_WGMMA_REGS_48, 48, 49, 50, 51, 52, TILEFUSE_WGMMA_OPERANDS_48)
TILEFUSE_WGMMA_SS(128, "bf16", bf16, TILEFUSE_WGMMA_REGS_64, 64, 65, 66, 67, 68, TILEFUSE_WGMMA_OPERANDS_64)
TILEFUSE_WGMMA_SS(128, "f16", f16, TILEFUSE_WGMMA_REGS_64, 64, 65, 66, 67, 68, TILEFUSE_WGMMA_OPERANDS_64)
TILEFUSE_WGMMA_SS(160, "bf16", bf16, TILEFUSE_WGMMA_REGS_80, 80, 81, 82, 83, 84, TILEFUSE_WGMMA_OPERANDS_80)
TILEFUSE_WGMMA_SS(160, "f16", f16, TILEFUSE_WGMMA_REGS_80, 80, 81, 82, 83, 84, TILEFUSE_WGMMA_OPERANDS_80)
TILEFUSE_WGMMA_SS(192, "bf16", bf16, TILEFUSE_WGMMA_REGS_96, 96, 97, 98, 99, 100, TILEFUSE_WGMMA_OPERANDS_96)
TILEFUSE_WGMMA_SS(192, "f16", f16, TILEFUSE_WGMMA_REGS_96, 96, 97, 98, 99, 100, TILEFUSE_WGMMA_OPERANDS_96)
TILEFUSE_WGMMA_SS(256, "bf16", bf16, TILEFUSE_WGMMA_REGS_128, 128, 129, 130, 131, 132, TILEFUSE_WGMMA_OPERANDS_128)
TILEFUSE_WGMMA_SS(256, "f16", f16, TILEFUSE_WGMMA_REGS_128, 128, 129, 130, 131, 132, TILEFUSE_WGMMA_OPERANDS_128)
#undef TILEFUSE_WGMMA_SS
#undef TILEFUSE_WGMMA_SS_ASM
#undef TILEFUSE_WGMMA_REGS_32
#undef TILEFUSE_WGMMA_OPERANDS_32
#undef TILEFUSE_WGMMA_REGS_48
#undef TILEFUSE_WGMMA_OPERANDS_48
#undef TILEFUSE_WGMMA_REGS_64
#undef TILEFUSE_WGMMA_OPERANDS_64
#undef TILEFUSE_WGMMA_REGS_80
#undef TILEFUSE_WGMMA_OPERANDS_80
#undef TILEFUSE_WGMMA_REGS_96
#undef TILEFUSE_WGMMA_OPERANDS_96
#undef TILEFUSE_WGMMA_REGS_128
#undef TILEFUSE_WGMMA_OPERANDS_128
#undef TILEFUSE_WGMMA_D0_REGS
#undef TILEFUSE_WGMMA_D0_OPERANDS
#undef TILEFUSE_WGMMA_D1_REGS
#undef TILEFUSE_WGMMA_D1_OPERANDS
#undef TILEFUSE_WGMMA_D2_REGS
#undef TILEFUSE_WGMMA_D2_OPERANDS
#undef TILEFUSE_WGMMA_D3_REGS
#undef TILEFUSE_WGMMA_D3_OPERANDS
#undef TILEFUSE_WGMMA_D4_REGS
#undef TILEFUSE_WGMMA_D4_OPERANDS
#undef TILEFUSE_WGMMA_D5_REGS
#undef TILEFUSE_WGMMA_D5_OPERANDS
#undef TILEFUSE_WGMMA_D6_REGS
#undef TILEFUSE_WGMMA_D6_OPERANDS
#undef TILEFUSE_WGMMA_D7_REGS
#undef TILEFUSE_WGMMA_D7_OPERANDS

template <class Element, int N, int TransB = 0, int TransA = 0>
TILEFUSE_DEVICE inline void wgmma_m64k16(float (&d)[N / 2], cuda::std::uint64_t desc_a, cuda::std::uint64_t desc_b,
                                         int scale_d) {
  constexpr bool kBf16 = cuda::std::is_same_v<Element, bfloat16_t>;
  static_assert(kBf16 || cuda::std::is_same_v<Element, half_t>, "wgmma_m64k16 takes bfloat16_t or half_t operands");
  static_assert(N == 64 || N == 96 || N == 128 || N == 160 || N == 192 || N == 256,
                "wgmma_m64k16 is instantiated for N = 64, 96, 128, 160, 192 and 256");
  if constexpr (N == 256) {
    if constexpr (kBf16) wgmma_m64n256k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n256k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  } else if constexpr (N == 192) {
    if constexpr (kBf16) wgmma_m64n192k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n192k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  } else if constexpr (N == 160) {
    if constexpr (kBf16) wgmma_m64n160k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n160k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  } else if constexpr (N == 128) {
    if constexpr (kBf16) wgmma_m64n128k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n128k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  } else if constexpr (N == 96) {
    if constexpr (kBf16) wgmma_m64n96k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n96k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  } else {
    if constexpr (kBf16) wgmma_m64n64k16_bf16<TransA, TransB>(d, desc_a, desc_b, scale_d);
    else wgmma_m64n64k16_f16<TransA, TransB>(d, desc_a, desc_b, scale_d);
  }
}

}  // namespace tilefuse::arch
