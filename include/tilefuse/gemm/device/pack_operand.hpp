// Launches the packing copy (kernel/pack_k_major.h) that puts an operand TMA cannot read as it is into the
// Hopper GEMM's K-major layout: rows x padded_k, K zero-padded. gemm::Gemm packs A and B into its workspace
// with it where the planner copies them (gemm_plan.hpp). Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/kernel/pack_k_major.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm {

// Element (r, c) of matrix b at src[b * batch_stride + r * row_stride + c * k_stride] -> dst, rows of padded_k.
template <class T>
Status pack_k_major(T const* src, index_t rows, index_t k, index_t row_stride, index_t k_stride, index_t batches,
                    index_t batch_stride, T* dst, index_t padded_k, cudaStream_t stream) {
  index_t const row_tiles = (rows + kPackTile - 1) / kPackTile;
  index_t const k_tiles = (padded_k + kPackTile - 1) / kPackTile;
  if (row_tiles > 0x7fffffff) {
    return not_supported("gemm: copying an operand of ", rows, " rows for the Hopper kernel: more row tiles than a grid");
  }
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(row_tiles), static_cast<unsigned>(std::min<index_t>(k_tiles, 65535)),
                     static_cast<unsigned>(std::min<index_t>(batches, 65535)));
  config.block = dim3(kPackTile, kPackRowsPerPass);
  config.stream = stream;
  void* kernel_args[] = {&src, &rows, &k, &row_stride, &k_stride, &batch_stride, &dst, &padded_k, &batches};
  return host_adapter().launch(config, reinterpret_cast<void const*>(&pack_k_major_kernel<T>), kernel_args);
}

}  // namespace tilefuse::gemm
