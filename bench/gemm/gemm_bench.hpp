// One benchmark row, end to end: allocate rotating operand sets, check every implementation against a
// float64 sample (a wrong kernel is marked, never timed), then time tilefuse and its peers in the same
// process on the same data.
//
// Peers: epilogue none -> cuBLAS cublasGemmEx (tf32: CUBLAS_COMPUTE_32F_FAST_TF32). bias_gelu_residual ->
// (a) cuBLASLt GELU_BIAS + a residual add kernel, (b) cuBLAS + a bias+GELU kernel + a residual add kernel
// (the unfused baseline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cublas_gemm.hpp"
#include "cublaslt_gemm.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"
#include "problems.hpp"
#include "reference_check.hpp"
#include "results.hpp"
#include "timing.hpp"

namespace tilefuse::bench {

class GemmBench {
 public:
  GemmBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream);

  // Throws FatalDeviceError when the device is unusable afterwards; any other failure is in the row.
  ResultRow run(GemmProblem const& problem);

  CublasGemm const& cublas() const { return cublas_; }
  // Device memory a run may take for operand sets: most of what is free now.
  std::size_t memory_budget() const;

 private:
  DeviceInfo device_;
  BenchSettings settings_;
  cudaStream_t stream_;
  CublasGemm cublas_;
  CublasLtGeluBias cublaslt_;
};

}  // namespace tilefuse::bench
