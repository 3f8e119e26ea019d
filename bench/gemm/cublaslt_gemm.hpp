// The fused peer's GEMM: cuBLASLt matmul with CUBLASLT_EPILOGUE_GELU_BIAS, D = gelu(A * B + bias),
// the bias one value per column of our row-major D (one per row of cuBLASLt's column-major D^T, which
// is what cuBLASLt's bias means). cuBLASLt's GELU is the tanh approximation, as tilefuse's GeluTanh.
// The residual is added by a separate kernel (elementwise.hpp): cuBLASLt would add C before the GELU.
#pragma once

#include <cstddef>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "operands.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

class CublasLtGeluBias {
 public:
  explicit CublasLtGeluBias(cudaStream_t stream, std::size_t workspace_bytes = std::size_t{32} << 20);
  ~CublasLtGeluBias();
  CublasLtGeluBias(CublasLtGeluBias const&) = delete;
  CublasLtGeluBias& operator=(CublasLtGeluBias const&) = delete;

  // Builds the descriptors for `problem` and asks the heuristic for an algorithm (with the bias pointer
  // of `sample`: the heuristic reads its alignment). Returns "" or why cuBLASLt cannot run it.
  std::string prepare(GemmProblem const& problem, GemmOperands const& sample);
  // D = gelu(A * B + bias) for one operand set of the prepared problem.
  void run(GemmOperands const& ops);

  static std::string version();

 private:
  void release_descriptors();

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  GemmProblem problem_{};
  cublasLtMatmulDesc_t matmul_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr;   // our B
  cublasLtMatrixLayout_t second_ = nullptr;  // our A
  cublasLtMatrixLayout_t out_ = nullptr;     // D^T, N x M column-major
  cublasLtMatmulAlgo_t algo_{};
  bool prepared_ = false;
};

}  // namespace tilefuse::bench
