// Host reference of the FP8 scaled GEMM (torch._scaled_mm's semantics), in double:
//   y(m, n) = sum over k of (A(m, k) * scale_a(m, k)) * (B(k, n) * scale_b(k, n))  +  bias(n)
//   D(m, n) = convert<TOut>(scale_result * y(m, n))          (scale_result only when given)
//   amax    = max over (m, n) of |y(m, n)|                  (before scale_result and conversion)
// Each operand element is dequantized with the scale that covers it, then everything is summed in
// double; the only rounding before the output conversion is double's. convert<> is the library's: round
// to nearest even, fp8 saturating to +-448 (e4m3) / +-57344 (e5m2). amax propagates NaN.
//
// The scales are a grid over the operand (ScaleGrid): one value per block_rows x block_cols elements,
// which expresses every scaling mode without naming them (gemm/scaled_gemm_problem.hpp does):
//   per-tensor   A: block M x K            B: block K x N            (one value)
//   row-wise     A: block 1 x K            B: block K x 1
//   block-wise   A: block 1 x 128          B: block 128 x 128        (edge blocks partial)
#pragma once

#include <cmath>
#include <mutex>
#include <type_traits>
#include <vector>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/reference/parallel.hpp>

namespace tilefuse::reference {

// Scales over an operand: element (row, col) of the operand is scaled by
// data[(row / block_rows) * row_stride + (col / block_cols) * col_stride].
struct ScaleGrid {
  float const* data = nullptr;
  index_t block_rows = 1;  // operand rows covered by one scale
  index_t block_cols = 1;  // operand columns covered by one scale
  index_t row_stride = 0;  // elements between the scales of consecutive row blocks
  index_t col_stride = 0;  // elements between the scales of consecutive column blocks

  double at(index_t row, index_t col) const {
    return static_cast<double>(data[(row / block_rows) * row_stride + (col / block_cols) * col_stride]);
  }
};

namespace detail {

inline Status check_scale_grid(char const* name, ScaleGrid const& s) {
  if (s.data == nullptr) {
    return invalid_argument("scaled_gemm reference: ", name, ".data is null; pass the operand's scales");
  }
  if (s.block_rows < 1 || s.block_cols < 1) {
    return invalid_argument("scaled_gemm reference: ", name, " blocks are ", s.block_rows, " x ", s.block_cols,
                            "; each scale must cover at least 1 x 1 operand elements");
  }
  return Status::success();
}

}  // namespace detail

// D = convert<TOut>(scale_result * (dequant(A) * dequant(B) + bias)) for A (M x K), B (K x N), D (M x N).
// bias: N values or null; scale_result: one value or null; amax: receives max |y| when not null.
// Refuses inconsistent extents or null data without touching D.
template <class TOut, class TA, class LA, class TB, class LB, class TBias = bfloat16_t>
Status scaled_gemm(MatrixRef<TA const, LA> a, ScaleGrid scale_a, MatrixRef<TB const, LB> b, ScaleGrid scale_b,
                   TBias const* bias, float const* scale_result, MatrixRef<TOut, RowMajor> d,
                   double* amax = nullptr) {
  index_t const m = a.rows, k = a.cols, n = b.cols;
  if (b.rows != k || d.rows != m || d.cols != n) {
    return invalid_argument("scaled_gemm reference: A is ", m, " x ", k, ", B is ", b.rows, " x ", n, " and D is ",
                            d.rows, " x ", d.cols, "; they must be M x K, K x N and M x N");
  }
  if (m < 0 || n < 0 || k < 0) {
    return invalid_argument("scaled_gemm reference: (M, N, K) = (", m, ", ", n, ", ", k, ") has a negative extent");
  }
  if ((m * k > 0 && a.data == nullptr) || (k * n > 0 && b.data == nullptr) || (m * n > 0 && d.data == nullptr)) {
    return invalid_argument("scaled_gemm reference: A, B or D has null data but holds elements; pass their memory");
  }
  TILEFUSE_RETURN_IF_ERROR(detail::check_scale_grid("scale_a", scale_a));
  TILEFUSE_RETURN_IF_ERROR(detail::check_scale_grid("scale_b", scale_b));

  // A NaN stays: nothing compares above it.
  auto const keep_max = [](double& max_abs, double y) {
    if (std::isnan(y) || std::abs(y) > max_abs) max_abs = std::abs(y);
  };
  // Rows in blocks over threads (parallel.hpp), each block's max kept apart and folded in order.
  std::vector<double> block_max;
  std::mutex block_max_lock;
  for_row_blocks(m, static_cast<double>(n) * k, [&](index_t begin, index_t end) {
    double max_abs = 0.0;
    for (index_t row = begin; row < end; ++row) {
      for (index_t col = 0; col < n; ++col) {
        double y = 0.0;
        for (index_t i = 0; i < k; ++i) {
          double const av = to_double(a.at(row, i)) * scale_a.at(row, i);
          double const bv = to_double(b.at(i, col)) * scale_b.at(i, col);
          y += av * bv;
        }
        if (bias != nullptr) y += to_double(bias[col]);
        keep_max(max_abs, y);
        double const out = scale_result != nullptr ? y * static_cast<double>(*scale_result) : y;
        d.at(row, col) = convert<TOut>(out);
      }
    }
    std::lock_guard<std::mutex> const hold(block_max_lock);
    block_max.push_back(max_abs);
  });
  double max_abs = 0.0;
  for (double value : block_max) keep_max(max_abs, value);
  if (amax != nullptr) *amax = max_abs;
  return Status::success();
}

}  // namespace tilefuse::reference
