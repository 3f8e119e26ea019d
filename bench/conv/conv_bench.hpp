// One conv2d benchmark row, end to end: allocate rotating operand sets, let cuDNN search its algorithms,
// check every implementation against a float64 direct-convolution sample (a wrong one is marked, never
// timed), then time tilefuse and its peers in the same process on the same data.
//
// Peers: epilogue none -> "cuDNN" (the bare convolution of the mode). bias_relu_residual (fprop) ->
// "cuDNN fused" (cudnnConvolutionBiasActivationForward) and "cuDNN + elementwise" (the bare convolution,
// then one bias + residual + ReLU kernel).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "conv_problems.hpp"
#include "cudnn_conv.hpp"
#include "device_info.hpp"
#include "gemm_bench.hpp"

namespace tilefuse::bench {

struct ConvResultRow : RowResults {
  ConvProblem problem;
  std::vector<std::string> peer_describe;  // the cuDNN algorithm of each peer
};

class ConvBench {
 public:
  ConvBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream);

  // Throws FatalDeviceError when the device is unusable afterwards; any other failure is in the row.
  ConvResultRow run(ConvProblem const& problem);

  // Device memory a run may take for operand sets: most of what is free now, less room for cuDNN's search.
  std::size_t memory_budget() const;

 private:
  DeviceInfo device_;
  BenchSettings settings_;
  cudaStream_t stream_;
  CudnnConv cudnn_;
};

}  // namespace tilefuse::bench
