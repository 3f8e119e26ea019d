// Launches the packing copy (kernel/pack_k_major.h) that puts an operand TMA cannot read as it is into the
// Hopper GEMM's K-major layout: rows x padded_k, K zero-padded. gemm::Gemm packs A and B into its workspace
// with it where the planner copies them (gemm_plan.hpp). Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/kernel/pack_k_major.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm {

// Element (r, c) of matrix b at src[b * batch_stride + r * row_stride + c * k_stride] -> dst, rows of padded_k.
template <class T>
Status pack_k_major(T const* src, index_t rows, index_t k, index_t row_stride, index_t k_stride, index_t batches,
                    index_t batch_stride, T* dst, index_t padded_k, cudaStream_t stream) {
  PackKMajorLaunch launch =
      pack_k_major_launch(src, rows, k, row_stride, k_stride, batches, batch_stride, dst, padded_k);
  if (launch.grid_x == 0 && rows > 0 && padded_k > 0) {
    return not_supported("gemm: copying an operand of ", rows, " x ", padded_k,
                         " for the Hopper kernel: more 64 x 64 tiles than a grid holds");
  }
  if (launch.grid_x == 0 || batches == 0) return Status::success();
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(launch.grid_x), 1, static_cast<unsigned>(launch.grid_z));
  config.block = dim3(kPackThreads);
  config.stream = stream;
  void* kernel_args[] = {&launch.params};
  return host_adapter().launch(config, reinterpret_cast<void const*>(&pack_k_major_kernel<T>), kernel_args);
}

}  // namespace tilefuse::gemm
