// Host reference GEMM: the plainest batched D = A * B, accumulated in float or double, that every
// GEMM kernel is compared against; and the operand check it runs first.
#pragma once

#include <type_traits>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/reference/parallel.hpp>

namespace tilefuse::reference {

// An element of any tilefuse type read as the accumulator type. Every narrow type widens exactly,
// so the only rounding in a reference is that of the accumulation itself.
template <class Acc, class T>
inline Acc widen(T x) {
  static_assert(std::is_same_v<Acc, float> || std::is_same_v<Acc, double>,
                "reference accumulators are float or double");
  if constexpr (std::is_same_v<Acc, double>) {
    return to_double(x);
  } else {
    return to_float(x);
  }
}

namespace detail {

// Checks one batched operand: its shape, that its leading dimension can hold its rows or columns,
// and its pointer. An output additionally must not have overlapping batch entries, because the
// reference would then silently overwrite its own results; inputs may broadcast (batch_stride 0).
template <class T, class Layout>
Status check_gemm_matrix(char const* name, MatrixRef<T, Layout> const& mat, index_t rows, index_t cols,
                         char const* shape, index_t batch, bool is_output) {
  if (mat.rows != rows || mat.cols != cols) {
    return invalid_argument("gemm: ", name, " is ", mat.rows, " x ", mat.cols, " but the problem needs ",
                            shape, " = ", rows, " x ", cols, "; build ", name, " with those rows and cols");
  }
  index_t const min_ld = Layout::packed_ld(rows, cols);
  if (mat.ld < min_ld) {
    return invalid_argument("gemm: ", name, ".ld = ", mat.ld, " is smaller than ", min_ld,
                            ", the smallest leading dimension of a ", rows, " x ", cols, " ", Layout::kName,
                            " matrix; use ", name, ".ld >= ", min_ld);
  }
  if (mat.batch_stride < 0) {
    return invalid_argument("gemm: ", name, ".batch_stride = ", mat.batch_stride,
                            " is negative; use a batch_stride >= 0");
  }
  bool const empty = rows == 0 || cols == 0 || batch == 0;
  if (!empty && mat.data == nullptr) {
    return invalid_argument("gemm: ", name, ".data is null but ", name, " holds ", rows, " x ", cols,
                            " elements per batch; pass the operand's memory");
  }
  if (is_output && !empty && batch > 1) {
    // Two ways for batch entries not to overlap: stacked (each entry after the previous one's last
    // element) or interleaved within the leading dimension (entry l occupies lines
    // [l * batch_stride, l * batch_stride + minor) of every row or column, as for the per-group
    // columns of a grouped convolution's output).
    index_t const span = Layout::offset(rows - 1, cols - 1, mat.ld) + 1;
    index_t const minor = Layout::packed_ld(rows, cols);
    bool const stacked = mat.batch_stride >= span;
    bool const interleaved = mat.batch_stride >= minor && (batch - 1) * mat.batch_stride + minor <= mat.ld;
    if (!stacked && !interleaved) {
      return invalid_argument("gemm: ", name, ".batch_stride = ", mat.batch_stride,
                              " makes the batch entries of the output overlap (each spans ", span,
                              " elements with ld = ", mat.ld, "); use ", name, ".batch_stride >= ", span,
                              ", or interleave the entries within ld");
    }
  }
  return Status::success();
}

}  // namespace detail

// Success when A is M x K, B is K x N and acc_out is M x N (each per batch entry), with usable
// leading dimensions, batch strides and pointers; otherwise names the offending operand field.
template <class Acc, class TA, class LA, class TB, class LB>
Status check_gemm_operands(GemmCoord problem, MatrixRef<TA const, LA> const& a,
                           MatrixRef<TB const, LB> const& b, MatrixRef<Acc, RowMajor> const& acc_out) {
  if (problem.m < 0 || problem.n < 0 || problem.k < 0 || problem.batch < 0) {
    return invalid_argument("gemm: problem (m, n, k, batch) = (", problem.m, ", ", problem.n, ", ",
                            problem.k, ", ", problem.batch, ") has a negative extent; every extent must be >= 0");
  }
  TILEFUSE_RETURN_IF_ERROR(
      detail::check_gemm_matrix("A", a, problem.m, problem.k, "M x K", problem.batch, false));
  TILEFUSE_RETURN_IF_ERROR(
      detail::check_gemm_matrix("B", b, problem.k, problem.n, "K x N", problem.batch, false));
  TILEFUSE_RETURN_IF_ERROR(
      detail::check_gemm_matrix("acc_out", acc_out, problem.m, problem.n, "M x N", problem.batch, true));
  return Status::success();
}

// acc_out[l](m, n) = sum over k of A[l](m, k) * B[l](k, n), for every batch entry l, in Acc (float or
// double), summing k in increasing order. acc_out is overwritten, never accumulated into. Returns
// the operand check's failure without touching acc_out.
template <class Acc, class TA, class LA, class TB, class LB>
Status gemm(GemmCoord problem, MatrixRef<TA const, LA> a, MatrixRef<TB const, LB> b,
            MatrixRef<Acc, RowMajor> acc_out) {
  static_assert(std::is_same_v<Acc, float> || std::is_same_v<Acc, double>,
                "reference accumulators are float or double");
  TILEFUSE_RETURN_IF_ERROR(check_gemm_operands(problem, a, b, acc_out));
  // Rows (batch entry, m) in blocks over threads (parallel.hpp).
  for_row_blocks(problem.batch * problem.m, static_cast<double>(problem.n) * problem.k, [&](index_t begin, index_t end) {
    for (index_t row = begin; row < end; ++row) {
      index_t const l = row / problem.m, m = row % problem.m;
      for (index_t n = 0; n < problem.n; ++n) {
        Acc sum = Acc(0);
        for (index_t k = 0; k < problem.k; ++k) {
          sum += widen<Acc>(a.at(m, k, l)) * widen<Acc>(b.at(k, n, l));
        }
        acc_out.at(m, n, l) = sum;
      }
    }
  });
  return Status::success();
}

}  // namespace tilefuse::reference
