// The epilogues users asked for, written as trees and checked against the formula written plainly.
#include "evt_test_util.hpp"

namespace tilefuse::epilogue {
namespace {

using testing::expect_tree_matches;
using testing::random_values;

constexpr ProblemShape kShape{9, 21, 3};
constexpr std::size_t kCount = kShape.rows * kShape.cols * kShape.batch;

std::size_t at(index_t r, index_t c, index_t b) { return static_cast<std::size_t>((b * kShape.rows + r) * kShape.cols + c); }

std::vector<bfloat16_t> to_bf16(std::vector<float> const& v) {
  std::vector<bfloat16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = convert<bfloat16_t>(v[i]);
  return out;
}

TEST(EpilogueCompositions, ReluOfScaledAccPlusBiasThenResidual) {
  // relu(alpha * acc + bias[col]) + C
  using Tree = Store<"D", float,
                     Add<Relu<Add<Mul<Scalar<"alpha">, Acc>, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"C", bfloat16_t>>>;
  auto const bias = to_bf16(random_values(kShape.cols, 2));
  auto const c = to_bf16(random_values(kCount, 3));
  expect_tree_matches<Tree>(
      kShape, [&](auto& a) { a.set("alpha", 1.5f).set("bias", bias.data(), {.batch_stride = 0}).set("C", c.data()); },
      [&](float acc, index_t r, index_t col, index_t b) {
        float const z = 1.5f * acc + to_float(bias[col]);
        return (z < 0.0f ? 0.0f : z) + to_float(c[at(r, col, b)]);
      });
}

TEST(EpilogueCompositions, ReluOfAccPlusBiasPlusResidual) {
  // relu(acc + bias + C): the residual block of a ResNet, conv + bias + add + ReLU in one epilogue.
  using Tree = Store<"D", float, Relu<Add<Add<Acc, RowBroadcast<"bias", float>>, AuxLoad<"C", float>>>>;
  auto const bias = random_values(kShape.cols, 4);
  auto const c = random_values(kCount, 5);
  expect_tree_matches<Tree>(kShape, [&](auto& a) { a.set("bias", bias.data(), {.batch_stride = 0}).set("C", c.data()); },
                            [&](float acc, index_t r, index_t col, index_t b) {
                              float const z = (acc + bias[col]) + c[at(r, col, b)];
                              return z < 0.0f ? 0.0f : z;
                            });
}

TEST(EpilogueCompositions, AlphaAccPlusBetaC) {
  using Tree = Store<"D", float, Add<Mul<Scalar<"alpha">, Acc>, Mul<Scalar<"beta">, AuxLoad<"C", float>>>>;
  auto const c = random_values(kCount, 6);
  expect_tree_matches<Tree>(kShape, [&](auto& a) { a.set("alpha", 0.75f).set("beta", -2.0f).set("C", c.data()); },
                            [&](float acc, index_t r, index_t col, index_t b) {
                              return 0.75f * acc + -2.0f * c[at(r, col, b)];
                            });
}

TEST(EpilogueCompositions, FoldedBatchNormThenSilu) {
  // silu(acc * scale[k] + shift[k]): batch-norm folded into a per-channel scale and shift.
  using Tree = Store<"D", float, Silu<Add<Mul<Acc, RowBroadcast<"scale", float>>, RowBroadcast<"shift", float>>>>;
  auto const scale = random_values(kShape.cols, 7, 0.1f, 2.0f);
  auto const shift = random_values(kShape.cols, 8);
  expect_tree_matches<Tree>(kShape,
                            [&](auto& a) {
                              a.set("scale", scale.data(), {.batch_stride = 0}).set("shift", shift.data(), {.batch_stride = 0});
                            },
                            [&](float acc, index_t, index_t col, index_t) {
                              float const x = acc * scale[col] + shift[col];
                              return x * (1.0f / (1.0f + std::exp(-x)));
                            });
}

TEST(EpilogueCompositions, RegionActivationByRow) {
  // where(row < r0, sigmoid(x), tanh(x)): a different activation above and below row r0.
  using Tree = Store<"D", float, Where<Less<Row, Scalar<"r0">>, Sigmoid<Acc>, Tanh<Acc>>>;
  for (float r0 : {0.0f, 4.0f, 9.0f}) {
    expect_tree_matches<Tree>(kShape, [&](auto& a) { a.set("r0", r0); },
                              [&](float acc, index_t r, index_t, index_t) {
                                return static_cast<float>(r) < r0 ? 1.0f / (1.0f + std::exp(-acc)) : std::tanh(acc);
                              });
  }
}

TEST(EpilogueCompositions, AuxiliaryOutputAndReductions) {
  // z = acc + bias is stored as "aux" (bf16); D = gelu(z); amax[col] = max |D| over rows;
  // rowsum[row] = sum of D over columns.
  using Z = Store<"aux", bfloat16_t, Add<Acc, RowBroadcast<"bias", float>>>;
  using Tree = Store<"D", float, RowReduce<"rowsum", reduce::Sum, ColReduce<"amax", reduce::AbsMax, GeluErf<Z>>>>;
  auto const bias = random_values(kShape.cols, 9);
  auto gelu = [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); };

  for (int width : {1, 8}) {
    // Every output poisoned for each width: poisoned once, the second width would be checked against what the
    // first one wrote (aux, amax and rowsum alike).
    std::vector<bfloat16_t> aux(kCount, convert<bfloat16_t>(testing::kPoison));
    std::vector<float> amax(kShape.cols * kShape.batch, testing::kPoison);
    std::vector<float> rowsum(kShape.rows * kShape.batch, testing::kPoison);
    std::vector<float> d(kCount, testing::kPoison);
    std::vector<float> acc = random_values(kCount, 10);
    EpilogueArguments<Tree> args;
    args.set("bias", bias.data(), {.batch_stride = 0}).set("aux", aux.data()).set("amax", amax.data());
    args.set("rowsum", rowsum.data()).set("D", d.data());
    auto acc_ref = MatrixRef<float const, RowMajor>::packed(acc.data(), kShape.rows, kShape.cols);
    Status s = width == 1 ? run_host<Tree, 1>(args, acc_ref, kShape) : run_host<Tree, 8>(args, acc_ref, kShape);
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (index_t b = 0; b < kShape.batch; ++b) {
      for (index_t col = 0; col < kShape.cols; ++col) {
        float want_amax = 0.0f;
        for (index_t r = 0; r < kShape.rows; ++r) want_amax = std::max(want_amax, std::fabs(gelu(acc[at(r, col, b)] + bias[col])));
        EXPECT_EQ(amax[b * kShape.cols + col], want_amax) << "amax col " << col << " batch " << b << " width " << width;
      }
      for (index_t r = 0; r < kShape.rows; ++r) {
        double want_sum = 0.0;
        for (index_t col = 0; col < kShape.cols; ++col) {
          float const z = acc[at(r, col, b)] + bias[col];
          EXPECT_EQ(to_float(aux[at(r, col, b)]), to_float(convert<bfloat16_t>(z)))
              << "aux (" << r << ", " << col << ", " << b << ") width " << width;
          EXPECT_EQ(d[at(r, col, b)], gelu(z));
          want_sum += gelu(z);
        }
        // The sum's order depends on the vector width, so compare with a bound, not bits.
        EXPECT_NEAR(rowsum[b * kShape.rows + r], want_sum, 1e-5 * kShape.cols) << "row " << r << " batch " << b;
      }
    }
  }
}

TEST(EpilogueCompositions, MaxReductionOfNegativeValues) {
  // A plain max (not amax) must start from -inf, or all-negative columns would report 0.
  using Tree = Store<"D", float, ColReduce<"colmax", reduce::Max, Acc>>;
  std::vector<float> acc = random_values(kCount, 11, -9.0f, -1.0f);
  std::vector<float> d(kCount), colmax(kShape.cols * kShape.batch);
  EpilogueArguments<Tree> args;
  args.set("colmax", colmax.data()).set("D", d.data());
  auto acc_ref = MatrixRef<float const, RowMajor>::packed(acc.data(), kShape.rows, kShape.cols);
  ASSERT_TRUE(run_host<Tree>(args, acc_ref, kShape).ok());
  for (index_t b = 0; b < kShape.batch; ++b)
    for (index_t col = 0; col < kShape.cols; ++col) {
      float want = -INFINITY;
      for (index_t r = 0; r < kShape.rows; ++r) want = std::max(want, acc[at(r, col, b)]);
      EXPECT_EQ(colmax[b * kShape.cols + col], want);
    }
}

}  // namespace
}  // namespace tilefuse::epilogue
