// Tests of the host reference GEMM: a hand-computed product, every layout pair against an independent
// row-major triple loop, half/bfloat16 inputs, and the operand check.
#include <tilefuse/reference/gemm.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tilefuse {
namespace {

// A batch of matrices in `Layout`, stored in a std::vector. ld_pad and stride_pad make the view
// non-packed, so that a reference that confused ld with rows or cols would read the wrong element.
template <class T, class Layout>
struct HostMatrix {
  std::vector<T> storage;
  MatrixRef<T, Layout> view;

  HostMatrix(index_t rows, index_t cols, index_t batch, index_t ld_pad = 0, index_t stride_pad = 0) {
    index_t const ld = Layout::packed_ld(rows, cols) + ld_pad;
    index_t const major = std::is_same_v<Layout, RowMajor> ? rows : cols;  // number of ld-spaced lines
    index_t const stride = major * ld + stride_pad;
    storage.assign(static_cast<size_t>(stride * batch + 1), T{});
    view = MatrixRef<T, Layout>{storage.data(), rows, cols, ld, stride};
  }
  MatrixRef<T const, Layout> cview() const {
    return MatrixRef<T const, Layout>{storage.data(), view.rows, view.cols, view.ld, view.batch_stride};
  }
};

// Plain row-major copy of a batch, one std::vector<double> per batch entry: the independent side.
template <class T, class Layout>
std::vector<std::vector<double>> row_major_copy(HostMatrix<T, Layout> const& m, index_t batch) {
  std::vector<std::vector<double>> out(static_cast<size_t>(batch));
  for (index_t l = 0; l < batch; ++l) {
    for (index_t r = 0; r < m.view.rows; ++r) {
      for (index_t c = 0; c < m.view.cols; ++c) out[l].push_back(to_double(m.view.at(r, c, l)));
    }
  }
  return out;
}

// Fills with integers in [-8, 8]: every product and sum of the sizes below is exact in float and in
// double, so the reference and the direct loop must agree to the bit.
template <class T, class Layout>
void fill_integers(HostMatrix<T, Layout>& m, index_t batch, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-8, 8);
  for (index_t l = 0; l < batch; ++l) {
    for (index_t r = 0; r < m.view.rows; ++r) {
      for (index_t c = 0; c < m.view.cols; ++c) m.view.at(r, c, l) = convert<T>(static_cast<double>(dist(rng)));
    }
  }
}

TEST(ReferenceGemm, HandComputed2x3Times3x2) {
  // [1 2 3]   [ 7  8]   [ 58  64]
  // [4 5 6] * [ 9 10] = [139 154]
  //           [11 12]
  double const a[] = {1, 2, 3, 4, 5, 6};
  double const b[] = {7, 8, 9, 10, 11, 12};
  GemmCoord const problem{2, 2, 3, 1};
  auto const A = MatrixRef<double const, RowMajor>::packed(a, 2, 3);
  auto const B = MatrixRef<double const, RowMajor>::packed(b, 3, 2);

  double d[4] = {};
  ASSERT_TRUE(reference::gemm(problem, A, B, MatrixRef<double, RowMajor>::packed(d, 2, 2)).ok());
  EXPECT_EQ(d[0], 58.0);
  EXPECT_EQ(d[1], 64.0);
  EXPECT_EQ(d[2], 139.0);
  EXPECT_EQ(d[3], 154.0);

  float f[4] = {};
  ASSERT_TRUE(reference::gemm(problem, A, B, MatrixRef<float, RowMajor>::packed(f, 2, 2)).ok());
  EXPECT_EQ(f[0], 58.0f);
  EXPECT_EQ(f[1], 64.0f);
  EXPECT_EQ(f[2], 139.0f);
  EXPECT_EQ(f[3], 154.0f);
}

TEST(ReferenceGemm, HandComputedColumnMajorBatched) {
  // Batch 0: A = [1 2; 3 4] stored column-major as {1, 3, 2, 4}; B = I. Batch 1: A = I, B = [0 1; 1 0].
  float const a[] = {1, 3, 2, 4, 1, 0, 0, 1};
  float const b[] = {1, 0, 0, 1, 0, 1, 1, 0};
  auto const A = MatrixRef<float const, ColumnMajor>::packed(a, 2, 2);
  auto const B = MatrixRef<float const, ColumnMajor>::packed(b, 2, 2);
  double d[8] = {};
  ASSERT_TRUE(reference::gemm(GemmCoord{2, 2, 2, 2}, A, B, MatrixRef<double, RowMajor>::packed(d, 2, 2)).ok());
  double const want[] = {1, 2, 3, 4, 0, 1, 1, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(d[i], want[i]) << "element " << i;
}

template <class LA_, class LB_>
struct Layouts {
  using LA = LA_;
  using LB = LB_;
};
template <class L>
class ReferenceGemmLayouts : public ::testing::Test {};
using AllLayouts = ::testing::Types<Layouts<RowMajor, RowMajor>, Layouts<RowMajor, ColumnMajor>,
                                    Layouts<ColumnMajor, RowMajor>, Layouts<ColumnMajor, ColumnMajor>>;
TYPED_TEST_SUITE(ReferenceGemmLayouts, AllLayouts);

// Compares reference::gemm with a direct loop over row-major copies, for one element type, one
// accumulator and packed or padded views.
template <class T, class Acc, class LA, class LB>
void expect_matches_direct_loop(GemmCoord problem, index_t pad, std::uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "m=" << problem.m << " n=" << problem.n << " k=" << problem.k
                                  << " batch=" << problem.batch << " pad=" << pad << " A " << LA::kName
                                  << " B " << LB::kName);
  std::mt19937 rng(seed);
  HostMatrix<T, LA> a(problem.m, problem.k, problem.batch, pad, 2 * pad);
  HostMatrix<T, LB> b(problem.k, problem.n, problem.batch, pad, 3 * pad);
  HostMatrix<Acc, RowMajor> d(problem.m, problem.n, problem.batch, pad, pad);
  fill_integers(a, problem.batch, rng);
  fill_integers(b, problem.batch, rng);
  // A poison value: an element the reference forgot to write would show up.
  for (Acc& v : d.storage) v = Acc(-12345);

  Status const st = reference::gemm(problem, a.cview(), b.cview(), d.view);
  ASSERT_TRUE(st.ok()) << st.message();

  auto const ra = row_major_copy(a, problem.batch);
  auto const rb = row_major_copy(b, problem.batch);
  for (index_t l = 0; l < problem.batch; ++l) {
    for (index_t i = 0; i < problem.m; ++i) {
      for (index_t j = 0; j < problem.n; ++j) {
        double want = 0;
        for (index_t p = 0; p < problem.k; ++p) want += ra[l][i * problem.k + p] * rb[l][p * problem.n + j];
        ASSERT_EQ(static_cast<double>(d.view.at(i, j, l)), want) << "at (" << i << ", " << j << ", " << l << ")";
      }
    }
  }
}

TYPED_TEST(ReferenceGemmLayouts, MatchesDirectLoopDouble) {
  using LA = typename TypeParam::LA;
  using LB = typename TypeParam::LB;
  for (GemmCoord const problem : {GemmCoord{7, 5, 3, 3}, GemmCoord{1, 1, 1, 3}, GemmCoord{33, 17, 9, 3}}) {
    for (index_t pad : {0, 3}) {
      expect_matches_direct_loop<double, double, LA, LB>(problem, pad, 1);
      expect_matches_direct_loop<float, float, LA, LB>(problem, pad, 2);
    }
  }
}

TYPED_TEST(ReferenceGemmLayouts, HalfAndBfloat16IntegerInputsAreExact) {
  using LA = typename TypeParam::LA;
  using LB = typename TypeParam::LB;
  for (GemmCoord const problem : {GemmCoord{7, 5, 3, 3}, GemmCoord{33, 17, 9, 3}}) {
    expect_matches_direct_loop<half_t, float, LA, LB>(problem, 0, 3);
    expect_matches_direct_loop<half_t, double, LA, LB>(problem, 1, 4);
    expect_matches_direct_loop<bfloat16_t, float, LA, LB>(problem, 2, 5);
    expect_matches_direct_loop<bfloat16_t, double, LA, LB>(problem, 0, 6);
  }
}

TEST(ReferenceGemm, MixedInputTypes) {
  // A in half, B in bfloat16: 1.5 * 2 + (-0.25) * 4 = 2.
  half_t const a[] = {convert<half_t>(1.5), convert<half_t>(-0.25)};
  bfloat16_t const b[] = {convert<bfloat16_t>(2.0), convert<bfloat16_t>(4.0)};
  float d = 0;
  Status const st = reference::gemm(GemmCoord{1, 1, 2, 1}, MatrixRef<half_t const, RowMajor>::packed(a, 1, 2),
                                    MatrixRef<bfloat16_t const, ColumnMajor>::packed(b, 2, 1),
                                    MatrixRef<float, RowMajor>::packed(&d, 1, 1));
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(d, 2.0f);
}

TEST(ReferenceGemm, BroadcastInputWithZeroBatchStride) {
  // B is shared by both batch entries (batch_stride 0), as in a weight reused across a batch.
  double const a[] = {1, 2, 3, 4};
  double const b[] = {10, 100};
  MatrixRef<double const, RowMajor> const B{b, 2, 1, 1, 0};
  double d[2] = {};
  ASSERT_TRUE(reference::gemm(GemmCoord{1, 1, 2, 2}, MatrixRef<double const, RowMajor>::packed(a, 1, 2), B,
                              MatrixRef<double, RowMajor>::packed(d, 1, 1))
                  .ok());
  EXPECT_EQ(d[0], 210.0);
  EXPECT_EQ(d[1], 430.0);
}

TEST(ReferenceGemm, CheckRejectsMismatchedOperands) {
  std::vector<double> a(64), b(64), d(64);
  GemmCoord const problem{4, 3, 2, 2};
  auto const A = MatrixRef<double const, RowMajor>::packed(a.data(), 4, 2);
  auto const B = MatrixRef<double const, ColumnMajor>::packed(b.data(), 2, 3);
  auto const D = MatrixRef<double, RowMajor>::packed(d.data(), 4, 3);
  ASSERT_TRUE(reference::check_gemm_operands(problem, A, B, D).ok());

  auto expect_rejected = [&](Status const& st, std::string const& needle) {
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  // Wrong shapes.
  expect_rejected(reference::check_gemm_operands(GemmCoord{5, 3, 2, 2}, A, B, D), "A is 4 x 2");
  expect_rejected(reference::check_gemm_operands(GemmCoord{4, 3, 2, 2}, A,
                                                 MatrixRef<double const, ColumnMajor>::packed(b.data(), 3, 3), D),
                  "B is 3 x 3");
  expect_rejected(reference::check_gemm_operands(problem, A, B, MatrixRef<double, RowMajor>::packed(d.data(), 4, 4)),
                  "acc_out is 4 x 4");
  expect_rejected(reference::check_gemm_operands(GemmCoord{4, -3, 2, 2}, A, B, D), "negative");
  // Leading dimensions too small for the layout.
  auto A_small_ld = A;
  A_small_ld.ld = 1;
  expect_rejected(reference::check_gemm_operands(problem, A_small_ld, B, D), "A.ld = 1");
  auto B_small_ld = B;
  B_small_ld.ld = 1;
  expect_rejected(reference::check_gemm_operands(problem, A, B_small_ld, D), "B.ld = 1");
  // Null data, negative and overlapping batch strides.
  auto A_null = A;
  A_null.data = nullptr;
  expect_rejected(reference::check_gemm_operands(problem, A_null, B, D), "A.data is null");
  auto B_negative = B;
  B_negative.batch_stride = -6;
  expect_rejected(reference::check_gemm_operands(problem, A, B_negative, D), "B.batch_stride = -6");
  auto D_overlap = D;
  D_overlap.batch_stride = 11;
  expect_rejected(reference::check_gemm_operands(problem, A, B, D_overlap), "acc_out.batch_stride = 11");
  // Batch entries side by side within each row (ld = 6, entry l in columns [3l, 3l + 3)) do not overlap.
  MatrixRef<double, RowMajor> const D_interleaved{d.data(), 4, 3, 6, 3};
  EXPECT_TRUE(reference::check_gemm_operands(problem, A, B, D_interleaved).ok());
  auto D_interleaved_overlap = D_interleaved;
  D_interleaved_overlap.batch_stride = 2;
  expect_rejected(reference::check_gemm_operands(problem, A, B, D_interleaved_overlap), "acc_out.batch_stride = 2");

  // gemm runs the same check and leaves the output alone when it fails.
  d.assign(d.size(), 7.0);
  EXPECT_FALSE(reference::gemm(problem, A_small_ld, B, D).ok());
  for (double v : d) EXPECT_EQ(v, 7.0);
}

}  // namespace
}  // namespace tilefuse
