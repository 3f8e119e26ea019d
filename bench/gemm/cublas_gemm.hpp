// The plain peer: cuBLAS cublasGemmEx (cublasGemmStridedBatchedEx for batch > 1) with bf16/fp16
// inputs and output and CUBLAS_COMPUTE_32F, or for tf32 fp32 inputs and output and
// CUBLAS_COMPUTE_32F_FAST_TF32 (tf32 tensor cores); alpha = 1, beta = 0.
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "operands.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

class CublasGemm {
 public:
  explicit CublasGemm(cudaStream_t stream);
  ~CublasGemm();
  CublasGemm(CublasGemm const&) = delete;
  CublasGemm& operator=(CublasGemm const&) = delete;

  // D = A * B, D row-major (see blas_mapping.hpp). Throws BenchError on failure.
  void run(GemmProblem const& problem, GemmOperands const& ops) const;

  static std::string version();

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace tilefuse::bench
