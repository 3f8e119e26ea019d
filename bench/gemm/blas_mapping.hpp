// How a row-major D = A * B is asked of column-major BLAS (cuBLAS, cuBLASLt).
//
// A row-major M x N matrix D has the same bytes as a column-major N x M matrix, D^T. So the library is
// asked for D^T = B^T * A^T: its "A" is our B, its "B" is our A, and its m, n are our N, M.
//   our B row-major (K x N, ld N) is, read column-major, the N x K matrix B^T: no transpose (OP_N);
//   our B column-major (ld K) is B itself: the library must transpose it (OP_T).
//   our A row-major (M x K, ld K) is, read column-major, A^T: OP_N; column-major A needs OP_T.
// So layout "tn" (A row-major, B column-major) becomes cuBLAS's preferred "TN" call.
#pragma once

#include <cstdint>

#include <cublas_api.h>
#include <library_types.h>

#include "operands.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

struct ColumnMajorGemm {
  cublasOperation_t op_first;   // applied to `first` (our B)
  cublasOperation_t op_second;  // applied to `second` (our A)
  std::int64_t m, n, k;         // of the column-major problem: N, M, K
  void const* first;
  std::int64_t ld_first, stride_first;
  std::int64_t rows_first, cols_first;  // the stored matrix, before op_first
  void const* second;
  std::int64_t ld_second, stride_second;
  std::int64_t rows_second, cols_second;
  void* out;
  std::int64_t ld_out, stride_out;  // out is N x M column-major
};

inline ColumnMajorGemm to_column_major(GemmProblem const& p, GemmOperands const& ops) {
  ColumnMajorGemm g{};
  g.m = p.n;
  g.n = p.m;
  g.k = p.k;
  g.first = ops.b;
  g.op_first = p.layout.b_row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  g.ld_first = ops.strides.ldb;
  g.stride_first = ops.strides.batch_stride_b;
  g.rows_first = p.layout.b_row_major ? p.n : p.k;
  g.cols_first = p.layout.b_row_major ? p.k : p.n;
  g.second = ops.a;
  g.op_second = p.layout.a_row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  g.ld_second = ops.strides.lda;
  g.stride_second = ops.strides.batch_stride_a;
  g.rows_second = p.layout.a_row_major ? p.k : p.m;
  g.cols_second = p.layout.a_row_major ? p.m : p.k;
  g.out = ops.d;
  g.ld_out = ops.strides.ldd;
  g.stride_out = ops.strides.batch_stride_d;
  return g;
}

// The type of A, B and D in memory (tf32 is stored as fp32).
inline cudaDataType_t cuda_data_type(DType t) {
  switch (t) {
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kFP16: return CUDA_R_16F;
    case DType::kTF32: return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

// fp32 accumulation for every dtype; FAST_TF32 lets cuBLAS read fp32 operands as tf32 on tensor cores,
// which is what tilefuse's tf32 path computes (the plain 32F would be full fp32 on the CUDA cores).
inline cublasComputeType_t cublas_compute_type(DType t) {
  return t == DType::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace tilefuse::bench
