// HostAdapter: the one place where tilefuse reaches the CUDA driver (tensor map encoding) and launches
// kernels. The library never links libcuda; a host framework can install its own adapter instead.
#pragma once

#include <cuda.h>  // types only (CUtensorMap, CUtensorMap* enums): no cu* function is called from here
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <tilefuse/core/status.hpp>

namespace tilefuse {

// The arguments of cuTensorMapEncodeTiled, as named fields. Only the first `rank` entries of each
// array are used (the first rank - 1 of global_strides).
struct TensorMapTiledArgs {
  CUtensorMapDataType data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  int rank = 0;
  void* global_address = nullptr;
  cuuint64_t global_dim[5] = {};      // elements per dimension, innermost (contiguous) first
  cuuint64_t global_strides[4] = {};  // bytes between consecutive indices of dims 1 .. rank-1
  cuuint32_t box_dim[5] = {};         // elements per dimension of the box copied to shared memory
  cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMapFloatOOBfill oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

  bool operator==(TensorMapTiledArgs const&) const = default;
};

// The arguments of cuTensorMapEncodeIm2col. Dimensions are {C, W, H, D, N} innermost first (rank 3:
// C, W, N; rank 4: C, W, H, N). The pixel box corners hold one offset per spatial dimension, in the
// order of global_dim[1 ..]: entry j applies to global_dim[j + 1].
struct TensorMapIm2colArgs {
  CUtensorMapDataType data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  int rank = 0;
  void* global_address = nullptr;
  cuuint64_t global_dim[5] = {};
  cuuint64_t global_strides[4] = {};
  int pixel_box_lower_corner[3] = {};
  int pixel_box_upper_corner[3] = {};
  cuuint32_t channels_per_pixel = 0;
  cuuint32_t pixels_per_column = 0;
  cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMapFloatOOBfill oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

  bool operator==(TensorMapIm2colArgs const&) const = default;
};

struct LaunchConfig {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  std::size_t dynamic_smem_bytes = 0;
  cudaStream_t stream = nullptr;
  dim3 cluster{1, 1, 1};  // thread block cluster shape; {1, 1, 1} launches without a cluster
  // Programmatic dependent launch (sm_90): the kernel may start before the previous kernel in the stream has
  // finished. Only for kernels that call arch::grid_dependency_wait() before touching global memory
  // (arch/grid_dependency.h); ignored by GPUs before sm_90.
  bool after_previous_early = false;
};

class HostAdapter {
 public:
  virtual ~HostAdapter() = default;

  // A short name for messages and tests, e.g. "default" or "pytorch".
  virtual char const* name() const = 0;

  // Fill *out as cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col would. Callers go through
  // make_tensor_map_tiled / make_tensor_map_im2col (tensor_map.hpp), which validate first.
  virtual Status encode_tensor_map_tiled(TensorMapTiledArgs const& args, CUtensorMap* out) = 0;
  virtual Status encode_tensor_map_im2col(TensorMapIm2colArgs const& args, CUtensorMap* out) = 0;

  // Launch `kernel` (a __global__ function's address) with `kernel_args` as for cudaLaunchKernel.
  // The default uses the CUDA runtime's cudaLaunchKernelExC, adding a cluster dimension attribute
  // when config.cluster is not 1x1x1.
  virtual Status launch(LaunchConfig const& config, void const* kernel, void** kernel_args);

  // Enqueue on `stream` a write of `value` to the 4-byte aligned device word `address`, ordered after the
  // stream's earlier work and fenced before it (cuStreamWriteValue32): how the copies of an all-gather tell
  // a running row-gated GEMM (gemm::Sm90RowGate) their rows are in place, with no kernel (one could not get
  // an SM while that GEMM holds them all). The default is refused; DefaultHostAdapter implements it.
  virtual Status write_value32(cudaStream_t stream, unsigned* address, unsigned value);

  // Enqueue on `stream` a wait until the device word `address` reaches `value` in the wrap-around sense
  // ((int)(*address - value) >= 0; cuStreamWaitValue32 with CU_STREAM_WAIT_VALUE_GEQ): a stream waits for a
  // peer's signal (an epoch a peer wrote with write_value32) with no kernel. Refused by default, as above.
  virtual Status wait_value32(cudaStream_t stream, unsigned const* address, unsigned value);
};

namespace detail {
// The runtime launch configuration HostAdapter::launch passes to cudaLaunchKernelExC; its attributes (a
// cluster dimension when config.cluster is not 1x1x1, programmatic stream serialization when
// config.after_previous_early) point into `attributes`, filled in here. Exposed for tests.
using LaunchAttributes = std::array<cudaLaunchAttribute, 2>;
cudaLaunchConfig_t to_cuda_launch_config(LaunchConfig const& config, LaunchAttributes& attributes);
}  // namespace detail

// The adapter tilefuse uses now: the installed one, or the default one (DefaultHostAdapter) when
// none is installed. Thread-safe. The reference never dangles: an installed adapter is kept alive
// until the process exits, even after another one replaces it, because another thread may still
// be using it.
HostAdapter& host_adapter();

// Installs `adapter` for every later tilefuse call in the process; nullptr restores the default.
// Thread-safe; typically called once by a host framework at start-up.
void set_host_adapter(std::shared_ptr<HostAdapter> adapter);

}  // namespace tilefuse
