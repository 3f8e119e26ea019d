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

// Copies `bytes` (a multiple of 16) from 16-byte-aligned global memory to 16-byte-aligned shared memory
// in one bulk copy, signalling `bar` with complete_tx of `bytes`.
TILEFUSE_DEVICE inline void bulk_load(void* smem, void const* global, cuda::std::uint32_t bytes, cuda::std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, global, bytes, bar);
#else
  (void)smem, (void)global, (void)bytes, (void)bar;
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

// tma_load_3d, delivered to the same shared-memory offset of every CTA of the cluster in `cta_mask`
// (bit r: rank r), each of which gets complete_tx of the box's bytes on its barrier at `bar`'s offset.
TILEFUSE_DEVICE inline void tma_load_3d_multicast(void* smem, TmaDescriptor const* desc, cuda::std::uint64_t* bar,
                                                  int c0, int c1, int c2, cuda::std::uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::std::int32_t const coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, desc, coords, bar, cta_mask);
#else
  (void)smem, (void)desc, (void)bar, (void)c0, (void)c1, (void)c2, (void)cta_mask;
#endif
}

// The im2col form for a 4D NHWC tensor map (encoded with cuTensorMapEncodeIm2col, dims {C, W, H, N}):
// copies pixels_per_column pixels x channels_per_pixel channels into shared memory at `smem`, one
// pixel per box row. (c, w, h, n) is the first pixel's base position, (w, h) being where the filter's
// top-left tap of the first output pixel lies (q * stride - pad, p * stride - pad; may be negative);
// the copy walks the pixel bounding box of the map from there (W fastest, then H, then N, stepping by
// the map's element strides = the convolution's strides), and loads each pixel at its base plus the
// filter tap's offsets (offset_w, offset_h) = (s * dilation_w, r * dilation_h). Pixels outside x
// (padding, past the last image) arrive as zeros. Signals `bar` with complete_tx of the whole box.
// Inline PTX: CCCL's cuda::ptx (CUDA 13.0) has the tile form only.
TILEFUSE_DEVICE inline void tma_load_im2col_4d(void* smem, TmaDescriptor const* desc, cuda::std::uint64_t* bar, int c,
                                               int w, int h, int n, cuda::std::uint16_t offset_w,
                                               cuda::std::uint16_t offset_h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  auto const dst = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(smem));
  auto const barrier = static_cast<cuda::std::uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
      "l"(reinterpret_cast<cuda::std::uint64_t>(desc)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(barrier), "h"(offset_w),
      "h"(offset_h)
      : "memory");
#else
  (void)smem, (void)desc, (void)bar, (void)c, (void)w, (void)h, (void)n, (void)offset_w, (void)offset_h;
#endif
}

// Copies the box at coordinates (c0, c1, c2) (innermost first, in elements) from shared memory at
// `smem` to the tensor, as part of this thread's current bulk async-group (elements of the box outside
// the tensor are not written). The writes to `smem` must be fenced (fence_proxy_async_shared) first.
TILEFUSE_DEVICE inline void tma_store_3d(TmaDescriptor const* desc, void const* smem, int c0, int c1, int c2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::std::int32_t const coords[3] = {c0, c1, c2};
  cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, desc, coords, smem);
#else
  (void)desc, (void)smem, (void)c0, (void)c1, (void)c2;
#endif
}

// Closes this thread's current bulk async-group (the TMA stores issued since the last commit).
TILEFUSE_DEVICE inline void bulk_commit_group() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_commit_group();
#endif
}

// Waits until at most N of this thread's newest bulk async-groups still read their shared memory
// (the older ones' sources may be overwritten).
template <int N>
TILEFUSE_DEVICE inline void bulk_wait_group_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<N>{});
#endif
}

// Waits until at most N of this thread's newest bulk async-groups are incomplete (their writes done).
template <int N>
TILEFUSE_DEVICE inline void bulk_wait_group() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<N>{});
#endif
}

// Orders this thread's generic-proxy shared-memory accesses before later async-proxy (TMA) accesses.
TILEFUSE_DEVICE inline void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

// Orders what this thread observed through the generic proxy in global memory (a flag acquired after another
// agent's writes) before its later async-proxy (TMA) reads of global memory.
TILEFUSE_DEVICE inline void fence_proxy_async_global() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
#endif
}

}  // namespace tilefuse::arch
