// cuBLASLt GELU + bias peer (see cublaslt_gemm.hpp).
#include "cublaslt_gemm.hpp"

#include <cstdint>

#include "blas_mapping.hpp"

namespace tilefuse::bench {
namespace {

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, T const& value) {
  BENCH_BLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                   std::int64_t batch, std::int64_t batch_stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  BENCH_BLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                              static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    auto const count = static_cast<std::int32_t>(batch);
    BENCH_BLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    BENCH_BLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &batch_stride, sizeof(batch_stride)));
  }
  return layout;
}

}  // namespace

CublasLtGeluBias::CublasLtGeluBias(cudaStream_t stream, std::size_t workspace_bytes)
    : stream_(stream), workspace_(workspace_bytes) {
  BENCH_BLAS_CHECK(cublasLtCreate(&handle_));
}

CublasLtGeluBias::~CublasLtGeluBias() {
  release_descriptors();
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

void CublasLtGeluBias::release_descriptors() {
  if (matmul_ != nullptr) cublasLtMatmulDescDestroy(matmul_);
  if (first_ != nullptr) cublasLtMatrixLayoutDestroy(first_);
  if (second_ != nullptr) cublasLtMatrixLayoutDestroy(second_);
  if (out_ != nullptr) cublasLtMatrixLayoutDestroy(out_);
  matmul_ = nullptr;
  first_ = second_ = out_ = nullptr;
  prepared_ = false;
}

std::string CublasLtGeluBias::prepare(GemmProblem const& problem, GemmOperands const& sample) {
  release_descriptors();
  problem_ = problem;
  ColumnMajorGemm const g = to_column_major(problem, sample);
  cudaDataType_t const type = cuda_data_type(problem.dtype);

  BENCH_BLAS_CHECK(cublasLtMatmulDescCreate(&matmul_, cublas_compute_type(problem.dtype), CUDA_R_32F));
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(g.op_first));
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(g.op_second));
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(CUBLASLT_EPILOGUE_GELU_BIAS));
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(type));
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, sample.bias);
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, std::int64_t{0});  // one bias for the batch

  first_ = make_layout(type, g.rows_first, g.cols_first, g.ld_first, problem.batch, g.stride_first);
  second_ = make_layout(type, g.rows_second, g.cols_second, g.ld_second, problem.batch, g.stride_second);
  out_ = make_layout(type, g.m, g.n, g.ld_out, problem.batch, g.stride_out);

  cublasLtMatmulPreference_t preference = nullptr;
  BENCH_BLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  std::uint64_t const workspace_bytes = workspace_.bytes();
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (status == CUBLAS_STATUS_SUCCESS) {
    status = cublasLtMatmulAlgoGetHeuristic(handle_, matmul_, first_, second_, out_, out_, preference, 1, &result,
                                            &found);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS) {
    return "cublasLtMatmulAlgoGetHeuristic failed with status " + std::to_string(static_cast<int>(status));
  }
  if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) return "cuBLASLt has no algorithm for this problem";
  algo_ = result.algo;
  prepared_ = true;
  return {};
}

void CublasLtGeluBias::run(GemmOperands const& ops) {
  if (!prepared_) throw BenchError("CublasLtGeluBias::run before a successful prepare");
  // NOTES: only the bias pointer lives in the descriptor; it changes with the operand set. Setting it is
  // a host-side copy into the descriptor, no GPU work.
  set_attribute(matmul_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ops.bias);
  ColumnMajorGemm const g = to_column_major(problem_, ops);
  float const alpha = 1.0f;
  float const beta = 0.0f;
  BENCH_BLAS_CHECK(cublasLtMatmul(handle_, matmul_, &alpha, g.first, first_, g.second, second_, &beta, g.out, out_,
                                  g.out, out_, &algo_, workspace_.get(), workspace_.bytes(), stream_));
}

std::string CublasLtGeluBias::version() { return std::to_string(cublasLtGetVersion()); }

}  // namespace tilefuse::bench
