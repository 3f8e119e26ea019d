// Launch steps shared by the sm_80-path device operations (Gemm, Conv2d): start the epilogue's
// reductions at their identity, launch a TiledKernel over its tile grid, and, with split-K, the
// second pass that sums the partials and applies the epilogue tree.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/reductions.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/runtime/device_query.hpp>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/gemm/kernel/split_k_epilogue.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm::detail {

// A workspace read and written as 16-byte vectors (or by TMA): one that is not 16-byte aligned (cudaMalloc's and
// PyTorch's are 256-byte aligned; an offset into one may not be) is refused, not faulted on. `user`: what needs it.
template <class... Pieces>
Status check_workspace_alignment(char const* op, void const* workspace, Pieces const&... user) {
  if (reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) {
    return misaligned(op, ": ", user..., " needs a 16-byte-aligned workspace, but workspace = ", workspace,
                      " is not (pass cudaMalloc's pointer, or an offset into it that is a multiple of 16)");
  }
  return {};
}

// The split-K partials are written and read as 16-byte vectors.
inline Status check_split_k_workspace_alignment(char const* op, int split_k, void const* workspace) {
  return split_k > 1 ? check_workspace_alignment(op, workspace, "split_k = ", split_k) : Status{};
}

// An sm_80-path config's shared memory (pipeline stages, or the staged accumulator tile) must fit one block of
// the current device (the opt-in limit: 163 KiB on sm_80, 227 KiB on sm_90). Without a usable device the
// launch reports the error instead.
inline Status check_sm80_shared_memory(int bytes, int tile_m, int tile_n, int tile_k, int stages,
                                       std::size_t element_bytes, bool tf32) {
  int device = 0;
  int limit = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  if (bytes > limit) {
    return not_supported("gemm: the config's tile ", tile_m, "x", tile_n, "x", tile_k, " with ", stages, " stages of ",
                         element_bytes, "-byte elements needs ", bytes, " bytes of shared memory per block, but device ",
                         device, " allows at most ", limit, "; use fewer stages or a smaller tile",
                         tf32 ? " (Sm80Tf32LargeConfig or Sm80Tf32SmallConfig for float / tfloat32_t inputs)" : "");
  }
  return {};
}

// Parallel split-K's second pass: sums the split_k fp32 partials ([split][batch][m][n]) of problem p and
// applies the epilogue (split_k_epilogue_kernel). Shared by the sm80 kernel and the Hopper conv wgrad.
template <class Epilogue>
Status launch_split_k_epilogue(GemmCoord const& p, int split_k, float const* partials,
                               typename Epilogue::Params const& epilogue, cudaStream_t stream) {
  SplitKEpilogueParams<Epilogue> reduce;
  reduce.problem = p;
  reduce.split_k = split_k;
  reduce.partials = partials;
  reduce.epilogue = epilogue;
  index_t const vectors = p.batch * p.m * ((p.n + 7) / 8);
  index_t const threads = vectors * split_k_lanes(vectors, split_k);
  LaunchConfig reduce_config;
  reduce_config.grid = dim3(static_cast<unsigned>(
      std::min<index_t>((threads + kSplitKEpilogueThreads - 1) / kSplitKEpilogueThreads, 65535)));
  reduce_config.block = dim3(kSplitKEpilogueThreads);
  reduce_config.stream = stream;
  void* reduce_args[] = {&reduce};
  return host_adapter().launch(reduce_config, reinterpret_cast<void const*>(&split_k_epilogue_kernel<Epilogue>),
                               reduce_args);
}

// Launches `Kernel` (an sm80::TiledKernel) with `params`, whose problem, operands and epilogue are set;
// fills in the tile grid and the split-K fields. workspace: split_k * batch * m * n floats when
// split_k > 1.
template <class Kernel, class Epilogue>
Status launch_tiled(typename Kernel::Params params, int split_k, void* workspace, cudaStream_t stream) {
  GemmCoord const& p = params.problem;
  params.split_k = split_k;
  index_t const k_tiles = (p.k + Kernel::kTileK - 1) / Kernel::kTileK;
  params.k_per_split = ((k_tiles + split_k - 1) / split_k) * Kernel::kTileK;
  params.partials = static_cast<float*>(workspace);
  params.tiles_m = static_cast<int>((p.m + Kernel::kTileM - 1) / Kernel::kTileM);
  params.tiles_n = static_cast<int>((p.n + Kernel::kTileN - 1) / Kernel::kTileN);

  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(params.tiles_m * params.tiles_n), 1, static_cast<unsigned>(p.batch * split_k));
  config.block = dim3(Kernel::kThreads);
  config.dynamic_smem_bytes = Kernel::kSmemBytes;
  config.stream = stream;
  void* kernel_args[] = {&params};
  TILEFUSE_RETURN_IF_ERROR(
      host_adapter().launch(config, reinterpret_cast<void const*>(&sm80::sm80_gemm_kernel<Kernel>), kernel_args));
  if (split_k == 1) return {};
  return launch_split_k_epilogue<Epilogue>(p, split_k, params.partials, params.epilogue, stream);
}

// SMs of the current device (132 if it cannot be asked: the planning still works, only less well).
inline int current_sm_count() {
  int const sms = current_device_sm_count();
  return sms > 0 ? sms : 132;
}

// Bytes of the split-K workspace (fp32 partials), 0 without split-K.
inline std::size_t split_k_workspace_bytes(GemmCoord const& p, int split_k) {
  if (split_k <= 1) return 0;
  return static_cast<std::size_t>(split_k) * p.batch * p.m * p.n * sizeof(float);
}

// Whether `device` is an sm_90 and this binary holds sm_90 code of the sm80 kernel's TMA variant K, whose
// shared memory fits there.
template <class K>
bool sm80_tma_kernel_runs_on(int device) {
  int major = 0, smem_optin = 0;
  cudaFuncAttributes attributes{};
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
      cudaFuncGetAttributes(&attributes, reinterpret_cast<void const*>(&sm80::sm80_gemm_kernel<K>)) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major == 9 && attributes.binaryVersion == 90 && K::kSmemBytes <= smem_optin;
}

}  // namespace tilefuse::gemm::detail
