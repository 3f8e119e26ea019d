// Starting an epilogue's reductions (RowReduce / ColReduce outputs) at their identity before a kernel
// combines into them: shared by every device operation.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/reduction_init.h>
#include <tilefuse/epilogue/tree_walk.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm::detail {

// Reductions combine into their outputs: start them at the identity.
template <class Epilogue>
Status initialize_reductions(typename Epilogue::Params& params, GemmCoord const& p, cudaStream_t stream) {
  Status status;
  epilogue::for_each_node<Epilogue>(params, [&]<class Node>(typename Node::Params& node) {
    constexpr auto kind = Node::kKind;
    if constexpr (kind == epilogue::NodeKind::kRowReduce || kind == epilogue::NodeKind::kColReduce) {
      if (!status.ok()) return;
      index_t length = kind == epilogue::NodeKind::kRowReduce ? p.m : p.n;
      index_t batches = p.batch;
      index_t stride = node.batch_stride;
      float value = Node::Reduction::identity();
      float* data = node.data;
      void* kernel_args[] = {&data, &length, &batches, &stride, &value};
      LaunchConfig config;
      config.grid = dim3(static_cast<unsigned>(std::min<index_t>((length * batches + 255) / 256, 4096)));
      config.block = dim3(256);
      config.stream = stream;
      status = host_adapter().launch(config, reinterpret_cast<void const*>(&epilogue::fill_strided_kernel<float>),
                                     kernel_args);
    }
  });
  return status;
}

}  // namespace tilefuse::gemm::detail
