// Tests of the FP8 scaled-GEMM host reference (reference/scaled_gemm.hpp): hand-computed products for
// each scaling mode (block-wise with K and N not multiples of 128), bias, scale_result, fp8 saturation,
// amax, and the reference's own argument checks. Scale grids are built from gemm/scaled_gemm_problem.hpp's
// shapes and torch's strides, so the two headers are checked to describe the same layouts.
#include <tilefuse/gemm/scaled_gemm_problem.hpp>
#include <tilefuse/reference/gemm.hpp>
#include <tilefuse/reference/scaled_gemm.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tilefuse {
namespace {

using gemm::ScalingMode;
using reference::ScaleGrid;

template <class T>
std::vector<T> quantize(std::vector<double> const& values) {
  std::vector<T> out;
  for (double v : values) out.push_back(convert<T>(v));
  return out;
}

// The grid over A (M x K) for `mode`, reading scales stored with torch's strides.
ScaleGrid grid_a(ScalingMode mode, std::vector<float> const& scales, index_t m, index_t k) {
  gemm::ScaleShape const s = gemm::scale_a_shape(mode, m, k);
  gemm::ScaleStrides const st = gemm::scale_a_strides(mode, m);
  EXPECT_EQ(static_cast<index_t>(scales.size()), s.rows * s.cols) << "test data of the wrong size";
  return {scales.data(), s.block_rows, s.block_cols, st.row_stride, st.col_stride};
}

ScaleGrid grid_b(ScalingMode mode, std::vector<float> const& scales, index_t k, index_t n) {
  gemm::ScaleShape const s = gemm::scale_b_shape(mode, k, n);
  gemm::ScaleStrides const st = gemm::scale_b_strides(mode, k);
  EXPECT_EQ(static_cast<index_t>(scales.size()), s.rows * s.cols) << "test data of the wrong size";
  return {scales.data(), s.block_rows, s.block_cols, st.row_stride, st.col_stride};
}

TEST(ScaledGemmReference, PerTensorHandComputed) {
  // A (2 x 3, row-major) and B (3 x 2, column-major: stored column by column):
  //   [1 2 3]   [ 1 -2]   [ 4   4]              scale_a * scale_b = 0.5 * 4 = 2:  [ 8   8]
  //   [4 5 6] * [ 0  0] = [10   4]                                                 [20   8]
  //             [ 1  2]
  auto const a = quantize<float_e4m3_t>({1, 2, 3, 4, 5, 6});
  auto const b = quantize<float_e4m3_t>({1, 0, 1, -2, 0, 2});
  std::vector<float> const sa = {0.5f}, sb = {4.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 2, 3);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), 3, 2);

  float d[4] = {};
  double amax = -1;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, sa, 2, 3), B,
                                     grid_b(ScalingMode::kPerTensor, sb, 3, 2), static_cast<bfloat16_t const*>(nullptr),
                                     nullptr, MatrixRef<float, RowMajor>::packed(d, 2, 2), &amax)
                  .ok());
  EXPECT_EQ(d[0], 8.0f);
  EXPECT_EQ(d[1], 8.0f);
  EXPECT_EQ(d[2], 20.0f);
  EXPECT_EQ(d[3], 8.0f);
  EXPECT_EQ(amax, 20.0);
}

TEST(ScaledGemmReference, PerTensorEqualsScaledPlainGemm) {
  // Powers of two as scales: every product is exact, so the scaled GEMM is scale_a * scale_b times the
  // plain reference GEMM, to the bit.
  index_t const m = 5, n = 7, k = 48;
  std::vector<double> av, bv;
  for (index_t i = 0; i < m * k; ++i) av.push_back(static_cast<double>((i * 7) % 17) - 8.0);
  for (index_t i = 0; i < k * n; ++i) bv.push_back(static_cast<double>((i * 5) % 13) - 6.0);
  auto const a = quantize<float_e4m3_t>(av);
  auto const b = quantize<float_e5m2_t>(bv);
  std::vector<float> const sa = {0.25f}, sb = {8.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), m, k);
  auto const B = MatrixRef<float_e5m2_t const, ColumnMajor>::packed(b.data(), k, n);

  std::vector<double> plain(m * n), scaled(m * n);
  auto const plain_out = MatrixRef<double, RowMajor>::packed(plain.data(), m, n);
  ASSERT_TRUE(reference::gemm(GemmCoord{m, n, k, 1}, A, B, plain_out).ok());
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, sa, m, k), B,
                                     grid_b(ScalingMode::kPerTensor, sb, k, n), static_cast<half_t const*>(nullptr),
                                     nullptr, MatrixRef<double, RowMajor>::packed(scaled.data(), m, n))
                  .ok());
  for (index_t i = 0; i < m * n; ++i) EXPECT_EQ(scaled[i], 2.0 * plain[i]) << "element " << i;
}

TEST(ScaledGemmReference, RowWiseHandComputed) {
  // A (2 x 2) * B (2 x 3) = [1 2] * [1 0 2]   = [3 2 2]
  //                         [3 4]   [1 1 0]     [7 4 6]
  // scale_a per row (2, -1), scale_b per column (1, 0.5, 4):
  //   D = [ 2*3*1   2*2*0.5   2*2*4 ]  = [ 6  2  16]
  //       [-1*7*1  -1*4*0.5  -1*6*4 ]    [-7 -2 -24]
  auto const a = quantize<float_e4m3_t>({1, 2, 3, 4});
  auto const b = quantize<float_e4m3_t>({1, 1, 0, 1, 2, 0});  // columns of B
  std::vector<float> const sa = {2.0f, -1.0f}, sb = {1.0f, 0.5f, 4.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 2, 2);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), 2, 3);

  float d[6] = {};
  double amax = 0;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kRowWise, sa, 2, 2), B,
                                     grid_b(ScalingMode::kRowWise, sb, 2, 3), static_cast<bfloat16_t const*>(nullptr),
                                     nullptr, MatrixRef<float, RowMajor>::packed(d, 2, 3), &amax)
                  .ok());
  float const expected[6] = {6, 2, 16, -7, -2, -24};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d[i], expected[i]) << "element " << i;
  EXPECT_EQ(amax, 24.0);
}

TEST(ScaledGemmReference, BlockWisePartialBlocksHandComputed) {
  // M = 2, K = 144 (K blocks of 128 and 16), N = 144 (N blocks of 128 and 16). A is all ones in K block 0
  // and all twos in K block 1; B is all ones. So
  //   y(m, n) = 128 * 1 * sa(m, 0) * sb(0, nb) + 16 * 2 * sa(m, 1) * sb(1, nb),   nb = n / 128
  // sa (M x 2, stored M-major): row 0 = (1, 2), row 1 = (0.5, 8)
  // sb (2 x 2, stored K-block-major): K block 0 = (1, 3), K block 1 = (2, 0.25)
  //   y(0, n < 128) = 128 + 32 * 2 * 2     = 256     y(0, n >= 128) = 384 + 32 * 2 * 0.25 = 400
  //   y(1, n < 128) = 64 + 32 * 8 * 2      = 576     y(1, n >= 128) = 192 + 32 * 8 * 0.25 = 256
  index_t const m = 2, k = 144, n = 144;
  std::vector<double> av;
  for (index_t row = 0; row < m; ++row) {
    for (index_t i = 0; i < k; ++i) av.push_back(i < 128 ? 1.0 : 2.0);
  }
  auto const a = quantize<float_e4m3_t>(av);
  auto const b = quantize<float_e4m3_t>(std::vector<double>(k * n, 1.0));
  std::vector<float> const sa = {1.0f, 0.5f, 2.0f, 8.0f};   // index m + M * kb
  std::vector<float> const sb = {1.0f, 2.0f, 3.0f, 0.25f};  // index kb + Kb * nb
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), m, k);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), k, n);

  std::vector<float> d(m * n);
  double amax = 0;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kBlockWise, sa, m, k), B,
                                     grid_b(ScalingMode::kBlockWise, sb, k, n), static_cast<bfloat16_t const*>(nullptr),
                                     nullptr, MatrixRef<float, RowMajor>::packed(d.data(), m, n), &amax)
                  .ok());
  for (index_t col = 0; col < n; ++col) {
    EXPECT_EQ(d[col], col < 128 ? 256.0f : 400.0f) << "row 0, column " << col;
    EXPECT_EQ(d[n + col], col < 128 ? 576.0f : 256.0f) << "row 1, column " << col;
  }
  EXPECT_EQ(amax, 576.0);
}

TEST(ScaledGemmReference, BiasAndOutputRounding) {
  // Per-tensor A (1 x 2) = [16 1], B (2 x 3) = [[16 16 -16], [1 3 0]] -> A * B = [257 259 -256];
  // scale 1, bias (bf16) = [0 -3 0.5]: y = [257 256 -255.5]. bf16 keeps 8 significant bits, rounding to
  // nearest even: 257 -> 256 (a tie, 256 is even), 256 -> 256, -255.5 -> -256.
  auto const a = quantize<float_e4m3_t>({16, 1});
  auto const b = quantize<float_e4m3_t>({16, 1, 16, 3, -16, 0});
  auto const bias = quantize<bfloat16_t>({0, -3, 0.5});
  std::vector<float> const one = {1.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 1, 2);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), 2, 3);

  bfloat16_t d[3];
  double amax = 0;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, one, 1, 2), B,
                                     grid_b(ScalingMode::kPerTensor, one, 2, 3), bias.data(), nullptr,
                                     MatrixRef<bfloat16_t, RowMajor>::packed(d, 1, 3), &amax)
                  .ok());
  EXPECT_EQ(to_float(d[0]), 256.0f);
  EXPECT_EQ(to_float(d[1]), 256.0f);
  EXPECT_EQ(to_float(d[2]), -256.0f);
  EXPECT_EQ(amax, 257.0);  // before the output conversion

  float f[3];
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, one, 1, 2), B,
                                     grid_b(ScalingMode::kPerTensor, one, 2, 3), bias.data(), nullptr,
                                     MatrixRef<float, RowMajor>::packed(f, 1, 3))
                  .ok());
  EXPECT_EQ(f[0], 257.0f);
  EXPECT_EQ(f[1], 256.0f);
  EXPECT_EQ(f[2], -255.5f);
}

TEST(ScaledGemmReference, Fp8OutputSaturatesAfterScaleResult) {
  // A (1 x 1) = [16], B (1 x 4) = [2 8 -8 30], scales 1: y = [32 128 -128 480], bias none.
  // scale_result = 4: 4y = [128 512 -512 1920]. e4m3 saturates to +-448; e5m2 holds 128, 512, -512
  // exactly and rounds 1920 to 2048 (two significant bits). amax is max |y| = 480, before scale_result.
  auto const a = quantize<float_e4m3_t>({16});
  auto const b = quantize<float_e4m3_t>({2, 8, -8, 30});
  std::vector<float> const one = {1.0f};
  float const scale_result = 4.0f;
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 1, 1);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), 1, 4);

  float_e4m3_t e4[4];
  double amax = 0;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, one, 1, 1), B,
                                     grid_b(ScalingMode::kPerTensor, one, 1, 4), static_cast<half_t const*>(nullptr),
                                     &scale_result, MatrixRef<float_e4m3_t, RowMajor>::packed(e4, 1, 4), &amax)
                  .ok());
  EXPECT_EQ(to_float(e4[0]), 128.0f);
  EXPECT_EQ(to_float(e4[1]), 448.0f);   // saturated, not NaN
  EXPECT_EQ(to_float(e4[2]), -448.0f);  // saturated, not NaN
  EXPECT_EQ(to_float(e4[3]), 448.0f);
  EXPECT_EQ(amax, 480.0);

  float_e5m2_t e5[4];
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, one, 1, 1), B,
                                     grid_b(ScalingMode::kPerTensor, one, 1, 4), static_cast<half_t const*>(nullptr),
                                     &scale_result, MatrixRef<float_e5m2_t, RowMajor>::packed(e5, 1, 4))
                  .ok());
  EXPECT_EQ(to_float(e5[0]), 128.0f);
  EXPECT_EQ(to_float(e5[1]), 512.0f);
  EXPECT_EQ(to_float(e5[2]), -512.0f);
  EXPECT_EQ(to_float(e5[3]), 2048.0f);

  // Beyond e5m2's range: 16 * 30 * 448 = 215040 saturates to 57344.
  float const huge = 448.0f;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kPerTensor, one, 1, 1), B,
                                     grid_b(ScalingMode::kPerTensor, one, 1, 4), static_cast<half_t const*>(nullptr),
                                     &huge, MatrixRef<float_e5m2_t, RowMajor>::packed(e5, 1, 4))
                  .ok());
  EXPECT_EQ(to_float(e5[3]), 57344.0f);
  EXPECT_EQ(to_float(e5[2]), -57344.0f);
}

TEST(ScaledGemmReference, AmaxPropagatesNaN) {
  // A NaN scale makes one output NaN; amax must say so rather than report the largest finite value.
  auto const a = quantize<float_e4m3_t>({1, 1});
  auto const b = quantize<float_e4m3_t>({1, 2});
  std::vector<float> const sa = {std::numeric_limits<float>::quiet_NaN(), 1.0f}, sb = {1.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 2, 1);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(b.data(), 1, 2);
  float d[4];
  double amax = 0;
  ASSERT_TRUE(reference::scaled_gemm(A, grid_a(ScalingMode::kRowWise, sa, 2, 1), B,
                                     grid_b(ScalingMode::kPerTensor, sb, 1, 2), static_cast<half_t const*>(nullptr),
                                     nullptr, MatrixRef<float, RowMajor>::packed(d, 2, 2), &amax)
                  .ok());
  EXPECT_TRUE(std::isnan(d[0]));
  EXPECT_EQ(d[3], 2.0f);
  EXPECT_TRUE(std::isnan(amax));
}

TEST(ScaledGemmReference, RefusesInconsistentArguments) {
  auto const a = quantize<float_e4m3_t>({1, 2, 3, 4});
  std::vector<float> const one = {1.0f};
  auto const A = MatrixRef<float_e4m3_t const, RowMajor>::packed(a.data(), 2, 2);
  auto const B = MatrixRef<float_e4m3_t const, ColumnMajor>::packed(a.data(), 2, 2);
  float d[4] = {-1, -1, -1, -1};
  ScaleGrid const ok{one.data(), 2, 2, 0, 0};
  auto const none = static_cast<bfloat16_t const*>(nullptr);

  Status s = reference::scaled_gemm(A, ok, B, ok, none, nullptr, MatrixRef<float, RowMajor>::packed(d, 2, 1));
  EXPECT_NE(s.message().find("they must be M x K, K x N and M x N"), std::string::npos) << s.message();
  s = reference::scaled_gemm(A, ScaleGrid{}, B, ok, none, nullptr, MatrixRef<float, RowMajor>::packed(d, 2, 2));
  EXPECT_NE(s.message().find("scale_a.data is null"), std::string::npos) << s.message();
  s = reference::scaled_gemm(A, ok, B, ScaleGrid{one.data(), 0, 1, 0, 0}, none, nullptr,
                             MatrixRef<float, RowMajor>::packed(d, 2, 2));
  EXPECT_NE(s.message().find("scale_b blocks are 0 x 1"), std::string::npos) << s.message();
  s = reference::scaled_gemm(A, ok, B, ok, none, nullptr, MatrixRef<float, RowMajor>{nullptr, 2, 2, 2, 4});
  EXPECT_NE(s.message().find("null data but holds elements"), std::string::npos) << s.message();
  s = reference::scaled_gemm(MatrixRef<float_e4m3_t const, RowMajor>{a.data(), -1, 2, 2, 0}, ok, B, ok, none, nullptr,
                             MatrixRef<float, RowMajor>{d, -1, 2, 2, 0});
  EXPECT_NE(s.message().find("(M, N, K) = (-1, 2, 2) has a negative extent"), std::string::npos) << s.message();
  for (float v : d) EXPECT_EQ(v, -1.0f) << "a refused call wrote D";
}

}  // namespace
}  // namespace tilefuse
