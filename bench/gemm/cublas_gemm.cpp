// cuBLAS peer (see cublas_gemm.hpp).
#include "cublas_gemm.hpp"

#include "blas_mapping.hpp"
#include "cuda_check.hpp"

namespace tilefuse::bench {

CublasGemm::CublasGemm(cudaStream_t stream) {
  BENCH_BLAS_CHECK(cublasCreate(&handle_));
  BENCH_BLAS_CHECK(cublasSetStream(handle_, stream));
  BENCH_BLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void CublasGemm::run(GemmProblem const& problem, GemmOperands const& ops) const {
  ColumnMajorGemm const g = to_column_major(problem, ops);
  cudaDataType_t const type = cuda_data_type(problem.dtype);
  cublasComputeType_t const compute = cublas_compute_type(problem.dtype);
  float const alpha = 1.0f;
  float const beta = 0.0f;
  if (problem.batch == 1) {
    BENCH_BLAS_CHECK(cublasGemmEx(handle_, g.op_first, g.op_second, static_cast<int>(g.m), static_cast<int>(g.n),
                                  static_cast<int>(g.k), &alpha, g.first, type, static_cast<int>(g.ld_first),
                                  g.second, type, static_cast<int>(g.ld_second), &beta, g.out, type,
                                  static_cast<int>(g.ld_out), compute, CUBLAS_GEMM_DEFAULT));
  } else {
    BENCH_BLAS_CHECK(cublasGemmStridedBatchedEx(
        handle_, g.op_first, g.op_second, static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k),
        &alpha, g.first, type, static_cast<int>(g.ld_first), g.stride_first, g.second, type,
        static_cast<int>(g.ld_second), g.stride_second, &beta, g.out, type, static_cast<int>(g.ld_out),
        g.stride_out, static_cast<int>(problem.batch), compute, CUBLAS_GEMM_DEFAULT));
  }
}

std::string CublasGemm::version() {
  int v = 0;
  if (cublasGetProperty(MAJOR_VERSION, &v) != CUBLAS_STATUS_SUCCESS) return "unknown";
  int minor = 0, patch = 0;
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  return std::to_string(v) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace tilefuse::bench
