// TMA (sm_90): bulk tensor copies from global to shared memory described by a tensor map (a 128-byte
// CUtensorMap encoded on the host through the host adapter, passed as a __grid_constant__ kernel
// parameter). Thin wrappers over CCCL's cuda::ptx.
//
// Device headers cannot include cuda.h (NVRTC), so the descriptor travels as TmaDescriptor: the same
// 128 bytes, 64-byte aligned; the device API copies a CUtensorMap into it (static_assert on the size).
#pragma once

#include <cuda/std/cstdint>
#include <cuda/ptx>

#include <tilefuse/core/platform.h>

namespace tilefuse::arch {

struct alignas(64) TmaDescriptor {
  cuda::std::uint64_t opaque[16];
};

// Starts fetching the descriptor into the constant cache (it lives in kernel parameter space).
TILEFUSE_DEVICE inline void tma_prefetch_descriptor(TmaDescriptor const* desc) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<cuda::std::uint64_t>(desc)) : "memory");
#else
  (void)desc;
#endif
}

// Copies the box at coordinates (c0, c1, c2) (innermost first, in elements; may lie partly or wholly
// outside the tensor: those elements arrive as zeros) into shared memory at `smem`, and signals
// `bar` with complete_tx of the box's bytes (always the full box, zeros included).
TILEFUSE_DEVICE inline void tma_load_3d(void* smem, TmaDescriptor const* desc, cuda::std::uint64_t* bar, int c0,
                                        int c1, int c2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::std::int32_t const coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, desc, coords, bar);
#else
  (void)smem, (void)desc, (void)bar, (void)c0, (void)c1, (void)c2;
#endif
}

// Orders this thread's generic-proxy shared-memory accesses before later async-proxy (TMA) accesses.
TILEFUSE_DEVICE inline void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

}  // namespace tilefuse::arch
