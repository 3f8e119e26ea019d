// mbarrier (sm_90): the shared-memory barriers that guard a TMA pipeline. A barrier completes a phase
// when its expected arrivals have arrived and the bytes it was told to expect (expect_tx) have landed;
// waiters spin on the parity of the phase they need. Thin wrappers over CCCL's cuda::ptx.
//
// Every function compiles on any arch (NVRTC checks the headers for sm_80); the bodies exist only on
// sm_90 and later, where the kernels that call them run.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/ptx>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TILEFUSE_ARCH_SM90_PTX 1
#else
#define TILEFUSE_ARCH_SM90_PTX 0
#endif

// Initialises the barrier at `bar` (8 bytes of shared memory) for `arrivals` arrivals per phase. One
// thread initialises; fence_barrier_init() and a __syncthreads() publish it to the other threads and to
// the async proxy (TMA) before anyone uses it.
TILEFUSE_DEVICE inline void mbarrier_init(cuda::std::uint64_t* bar, cuda::std::uint32_t arrivals) {
#if TILEFUSE_ARCH_SM90_PTX
  cuda::ptx::mbarrier_init(bar, arrivals);
#else
  (void)bar, (void)arrivals;
#endif
}

TILEFUSE_DEVICE inline void fence_barrier_init() {
#if TILEFUSE_ARCH_SM90_PTX
  cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
#endif
}

// Arrives once and tells the barrier that `bytes` more bytes will land (TMA's complete_tx) before the
// phase may complete. The producer calls this once per stage, before issuing the stage's copies.
TILEFUSE_DEVICE inline void mbarrier_arrive_expect_tx(cuda::std::uint64_t* bar, cuda::std::uint32_t bytes) {
#if TILEFUSE_ARCH_SM90_PTX
  (void)cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             bar, bytes);
#else
  (void)bar, (void)bytes;
#endif
}

// A plain arrival (release semantics at CTA scope): "I am done with this stage".
TILEFUSE_DEVICE inline void mbarrier_arrive(cuda::std::uint64_t* bar) {
#if TILEFUSE_ARCH_SM90_PTX
  (void)cuda::ptx::mbarrier_arrive(bar);
#else
  (void)bar;
#endif
}

// True once the phase of parity `parity` has completed (a fresh barrier is in phase 0, so waiting on
// parity 1 returns at once: the "previous" phase counts as complete).
TILEFUSE_DEVICE inline bool mbarrier_try_wait(cuda::std::uint64_t* bar, cuda::std::uint32_t parity) {
#if TILEFUSE_ARCH_SM90_PTX
  return cuda::ptx::mbarrier_try_wait_parity(bar, parity);
#else
  (void)bar, (void)parity;
  return true;
#endif
}

// Spins until the phase of parity `parity` has completed (try_wait itself suspends for a while in
// hardware before returning false, so the loop is not a hot spin).
TILEFUSE_DEVICE inline void mbarrier_wait(cuda::std::uint64_t* bar, cuda::std::uint32_t parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

}  // namespace tilefuse::arch
