// cp.async (sm_80+): asynchronous 16-byte copies from global to shared memory, with zero fill for
// bytes past the end of the source, the commit / wait pair that orders them, and the mbarrier arrival
// that signals them.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

// Copies 16 bytes into shared memory at `smem`, of which only the first `src_bytes` (0..16) are read
// from `gmem`; the rest are zero. src_bytes = 0 reads nothing (padding, out-of-bounds rows).
// NOTES: .cg bypasses L1: operand tiles are read once per threadblock, L1 would only evict others.
TILEFUSE_DEVICE inline void cp_async_16(void* smem, void const* gmem, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  auto const dst = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_bytes));
#endif
}

// Copies Bytes (4, 8 or 16) from `gmem` to `smem`, both aligned to Bytes, through L1 (.ca: for
// inputs that many threads read, such as a bias) or, for 16 bytes and !kReused, around it (.cg).
template <int Bytes, bool kReused>
TILEFUSE_DEVICE inline void cp_async(void* smem, void const* gmem) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  auto const dst = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
  if constexpr (Bytes == 16 && !kReused) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(gmem), "n"(Bytes));
  }
#endif
}

TILEFUSE_DEVICE inline void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `Pending` committed groups are still in flight.
template <int Pending>
TILEFUSE_DEVICE inline void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

// Arrives on the mbarrier at `bar` once every cp.async this thread issued before it has landed. With
// .noinc the arrival is one of those the barrier was initialised to expect (no extra pending count).
TILEFUSE_DEVICE inline void cp_async_mbarrier_arrive_noinc(cuda::std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  auto const addr = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(addr) : "memory");
#else
  (void)bar;
#endif
}

// Waits until every cp.async this thread issued has completed, committed or not (no thread may exit
// with copies into shared memory in flight).
TILEFUSE_DEVICE inline void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace tilefuse::arch
