// Every epilogue node against a plain lambda, on the host, with partial vectors at the row ends.
#include "evt_test_util.hpp"

namespace tilefuse::epilogue {
namespace {

using testing::expect_tree_matches;
using testing::random_values;

constexpr ProblemShape kShape{7, 13, 2};  // 13 columns: every vector width ends in a partial vector

// Unary ops: Op<Acc> against f(acc).
template <template <class> class Node>
void check_unary(float (*f)(float)) {
  using Tree = Store<"D", float, Node<Acc>>;
  expect_tree_matches<Tree>(kShape, [](auto&) {}, [&](float a, index_t, index_t, index_t) { return f(a); });
}

TEST(EpilogueNodes, UnaryOps) {
  check_unary<Relu>([](float x) { return x < 0.0f ? 0.0f : x; });
  check_unary<Negate>([](float x) { return -x; });
  check_unary<Abs>([](float x) { return std::fabs(x); });
  check_unary<Exp>([](float x) { return std::exp(x); });
  check_unary<Tanh>([](float x) { return std::tanh(x); });
  check_unary<Sigmoid>([](float x) { return 1.0f / (1.0f + std::exp(-x)); });
  check_unary<Silu>([](float x) { return x * (1.0f / (1.0f + std::exp(-x))); });
  check_unary<GeluErf>([](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); });
  check_unary<GeluTanh>([](float x) {
    // -2u log2(e) as ops.h folds it (ActivationsMatchTheirDefinitions checks it against tanh in double).
    return x * (1.0f / (1.0f + std::exp2(x * (-2.3022082f + -0.10294324f * (x * x)))));
  });
}

// Binary ops: Op<Acc, AuxLoad "C"> against f(acc, C).
template <template <class, class> class Node>
void check_binary(float (*f)(float, float)) {
  using Tree = Store<"D", float, Node<Acc, AuxLoad<"C", float>>>;
  std::size_t const count = kShape.rows * kShape.cols * kShape.batch;
  std::vector<float> c = random_values(count, 99);
  // Ties for the comparisons: every fifth C equals its accumulator (expect_tree_matches uses seed 1).
  std::vector<float> const acc = random_values(count, 1);
  for (std::size_t i = 0; i < count; i += 5) c[i] = acc[i];
  expect_tree_matches<Tree>(
      kShape, [&](auto& args) { args.set("C", c.data()); },
      [&](float a, index_t r, index_t col, index_t b) {
        return f(a, c[static_cast<std::size_t>((b * kShape.rows + r) * kShape.cols + col)]);
      });
}

// The activations are written for speed (one exp, a reciprocal); check them against the textbook
// formulas in double.
TEST(EpilogueNodes, ActivationsMatchTheirDefinitions) {
  for (double x = -30.0; x <= 30.0; x += 0.01) {
    double const u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    double const gelu_tanh = 0.5 * x * (1.0 + std::tanh(u));
    double const gelu_erf = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    double const sigmoid = 1.0 / (1.0 + std::exp(-x));
    float const xf = static_cast<float>(x);
    double const bound = 4e-7 * (1.0 + std::fabs(x));
    EXPECT_NEAR(op::GeluTanh::apply(xf), gelu_tanh, bound) << "x = " << x;
    EXPECT_NEAR(op::GeluErf::apply(xf), gelu_erf, bound) << "x = " << x;
    EXPECT_NEAR(op::Sigmoid::apply(xf), sigmoid, bound) << "x = " << x;
    EXPECT_NEAR(op::Silu::apply(xf), x * sigmoid, bound) << "x = " << x;
  }
}

TEST(EpilogueNodes, BinaryOps) {
  check_binary<Add>([](float a, float b) { return a + b; });
  check_binary<Sub>([](float a, float b) { return a - b; });
  check_binary<Mul>([](float a, float b) { return a * b; });
  check_binary<Div>([](float a, float b) { return a / b; });
  check_binary<Min>([](float a, float b) { return a < b ? a : b; });
  check_binary<Max>([](float a, float b) { return a > b ? a : b; });
  check_binary<Less>([](float a, float b) { return a < b ? 1.0f : 0.0f; });
  check_binary<LessEqual>([](float a, float b) { return a <= b ? 1.0f : 0.0f; });
  check_binary<Greater>([](float a, float b) { return a > b ? 1.0f : 0.0f; });
  check_binary<GreaterEqual>([](float a, float b) { return a >= b ? 1.0f : 0.0f; });
  check_binary<Equal>([](float a, float b) { return a == b ? 1.0f : 0.0f; });
  check_binary<NotEqual>([](float a, float b) { return a != b ? 1.0f : 0.0f; });
  check_binary<LeakyRelu>([](float a, float b) { return a < 0.0f ? a * b : a; });
}

TEST(EpilogueNodes, ClampAndWhere) {
  using ClampTree = Store<"D", float, Clamp<Acc, Scalar<"lo">, Scalar<"hi">>>;
  expect_tree_matches<ClampTree>(
      kShape, [](auto& args) { args.set("lo", -1.5f).set("hi", 2.0f); },
      [](float a, index_t, index_t, index_t) { return a < -1.5f ? -1.5f : (a > 2.0f ? 2.0f : a); });

  using WhereTree = Store<"D", float, Where<Greater<Acc, Constant<0.5f>>, Exp<Acc>, Negate<Acc>>>;
  expect_tree_matches<WhereTree>(kShape, [](auto&) {},
                                 [](float a, index_t, index_t, index_t) { return a > 0.5f ? std::exp(a) : -a; });
}

TEST(EpilogueNodes, Leaves) {
  using ScalarTree = Store<"D", float, Add<Acc, Scalar<"s">>>;
  expect_tree_matches<ScalarTree>(kShape, [](auto& a) { a.set("s", 0.25f); },
                                  [](float a, index_t, index_t, index_t) { return a + 0.25f; });

  // A scalar read from memory at run time (e.g. an FP8 scale).
  float scale = -3.0f;
  using PointerScalarTree = Store<"D", float, Mul<Acc, Scalar<"scale">>>;
  expect_tree_matches<PointerScalarTree>(kShape, [&](auto& a) { a.set("scale", static_cast<float const*>(&scale)); },
                                         [](float a, index_t, index_t, index_t) { return a * -3.0f; });

  // Row broadcast: one value per column; per-batch vectors.
  std::vector<half_t> bias(kShape.cols * kShape.batch);
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = convert<half_t>(static_cast<float>(i) - 9.0f);
  using RowTree = Store<"D", float, Add<Acc, RowBroadcast<"bias", half_t>>>;
  expect_tree_matches<RowTree>(kShape, [&](auto& a) { a.set("bias", bias.data()); },
                               [&](float a, index_t, index_t c, index_t b) { return a + (c + b * kShape.cols - 9.0f); });
  // The same bias shared by the whole batch.
  expect_tree_matches<RowTree>(kShape, [&](auto& a) { a.set("bias", bias.data(), {.batch_stride = 0}); },
                               [&](float a, index_t, index_t c, index_t) { return a + (c - 9.0f); });

  // Column broadcast: one value per row.
  std::vector<bfloat16_t> rowvec(kShape.rows * kShape.batch);
  for (std::size_t i = 0; i < rowvec.size(); ++i) rowvec[i] = convert<bfloat16_t>(2.0f * static_cast<float>(i));
  using ColTree = Store<"D", float, Mul<Acc, ColBroadcast<"scale", bfloat16_t>>>;
  expect_tree_matches<ColTree>(kShape, [&](auto& a) { a.set("scale", rowvec.data()); },
                               [&](float a, index_t r, index_t, index_t b) { return a * (2.0f * (r + b * kShape.rows)); });

  // Coordinates.
  using CoordTree = Store<"D", float, Add<Mul<Row, Constant<1000.0f>>, Add<Mul<Col, Constant<10.0f>>, Batch>>>;
  expect_tree_matches<CoordTree>(kShape, [](auto&) {}, [](float, index_t r, index_t c, index_t b) {
    return static_cast<float>(r) * 1000.0f + (static_cast<float>(c) * 10.0f + static_cast<float>(b));
  });
}

TEST(EpilogueNodes, AuxLoadColumnMajorWithPaddedLd) {
  constexpr index_t ld = kShape.rows + 3;
  std::vector<float> c(ld * kShape.cols * kShape.batch, -1.0f);
  for (index_t b = 0; b < kShape.batch; ++b)
    for (index_t col = 0; col < kShape.cols; ++col)
      for (index_t r = 0; r < kShape.rows; ++r) c[b * ld * kShape.cols + col * ld + r] = r * 100.0f + col + b * 0.5f;
  using Tree = Store<"D", float, Add<Acc, AuxLoad<"C", float, ColumnMajor>>>;
  expect_tree_matches<Tree>(kShape, [&](auto& a) { a.set("C", c.data(), {.ld = ld}); },
                            [](float a, index_t r, index_t col, index_t b) { return a + (r * 100.0f + col + b * 0.5f); });
}

TEST(EpilogueNodes, StoreRoundsToItsElementType) {
  constexpr ProblemShape shape{3, 11, 1};
  std::vector<float> acc = random_values(33, 5, -600.0f, 600.0f);
  auto acc_ref = MatrixRef<float const, RowMajor>::packed(acc.data(), 3, 11);
  using Tree = Store<"D", float_e4m3_t, Acc>;
  std::vector<float_e4m3_t> d(33);
  EpilogueArguments<Tree> args;
  args.set("D", d.data());
  ASSERT_TRUE(run_host<Tree>(args, acc_ref, shape).ok());
  for (int i = 0; i < 33; ++i) {
    float const want = acc[i] > 448.0f ? 448.0f : (acc[i] < -448.0f ? -448.0f : to_float(convert<float_e4m3_t>(acc[i])));
    EXPECT_EQ(to_float(d[i]), want) << "element " << i << " acc " << acc[i];
  }
}

// load() reads a fragment's inputs and visit() computes from what it was handed, never from memory: a
// kernel may issue the next fragment's loads before the current one's stores (see compute.h).
TEST(EpilogueNodes, VisitUsesWhatLoadRead) {
  using Tree = Store<"D", float, Add<Mul<Add<Acc, RowBroadcast<"bias", bfloat16_t>>, Scalar<"alpha">>,
                                     Add<AuxLoad<"C", bfloat16_t>, ColBroadcast<"shift", float>>>>;
  constexpr ProblemShape shape{2, 8, 1};
  // Row 2 exists in memory past the 2 x 8 output, poisoned below: a fragment outside the output must not touch it.
  std::vector<bfloat16_t> bias(8), c(24);
  std::vector<float> shift = {0.25f, -0.5f, 0.0f}, d(24, -1.0f);
  for (int i = 0; i < 8; ++i) bias[i] = convert<bfloat16_t>(static_cast<float>(i));
  for (int i = 0; i < 16; ++i) c[i] = convert<bfloat16_t>(100.0f + static_cast<float>(i));
  float alpha = 2.0f;
  EpilogueArguments<Tree> args;
  args.set("D", d.data());
  args.set("bias", static_cast<bfloat16_t const*>(bias.data()));
  args.set("C", static_cast<bfloat16_t const*>(c.data()));
  args.set("shift", static_cast<float const*>(shift.data()));
  args.set("alpha", static_cast<float const*>(&alpha));  // read from memory, as a device scalar
  Tree::Params params;
  ASSERT_TRUE(args.bind(shape, &params).ok());
  Fragment<8> f;
  f.row = 1;
  f.col = 0;
  for (int i = 0; i < 8; ++i) f.acc[i] = 10.0f * static_cast<float>(i);
  auto const loaded = Tree::load(params, f);
  // load_async stages the same values (on the host it loads in place; the device's cp.async path is
  // covered by the Hopper kernel's GPU tests, whose fused trees stage their loads this way).
  typename Tree::template Loaded<8> staged{};
  Tree::load_async(params, f, &staged);
  Fragment<8> partial = f;
  partial.valid = 5;
  typename Tree::template Loaded<8> staged_partial{};
  Tree::load_async(params, partial, &staged_partial);
  // Every input changes after the load: the visit must not see it.
  for (auto& b : bias) b = convert<bfloat16_t>(-1000.0f);
  for (auto& x : c) x = convert<bfloat16_t>(-1000.0f);
  shift[1] = -1000.0f;
  alpha = -1000.0f;
  Array<float, 8> const out = Tree::visit(params, f, loaded);
  for (int i = 0; i < 8; ++i) {
    float const want = (10.0f * i + i) * 2.0f + (100.0f + 8 + i) + (-0.5f);
    EXPECT_EQ(out[i], want) << "column " << i;
    EXPECT_EQ(d[8 + i], want) << "column " << i;  // the store happens in visit()
    EXPECT_EQ(d[i], -1.0f) << "row 0 untouched";
  }
  Array<float, 8> const from_staged = Tree::visit(params, f, staged);
  Array<float, 8> const from_partial = Tree::visit(params, partial, staged_partial);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(from_staged[i], out[i]) << "column " << i;
    if (i < 5) EXPECT_EQ(from_partial[i], out[i]) << "column " << i << " of a partial fragment";
  }
  // A fragment outside the output (valid = 0) loads nothing, and its loaded values are zeros.
  shift[2] = std::nanf("");
  for (int i = 16; i < 24; ++i) c[i] = convert<bfloat16_t>(std::nanf(""));
  Fragment<8> outside = f;
  outside.row = 2;  // past the last row: ColBroadcast would read shift[2], AuxLoad c[16 ..]
  outside.valid = 0;
  auto const none = Tree::load(params, outside);
  Array<float, 8> const zeros = Tree::visit(params, outside, none);  // valid = 0 stores nothing either
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(std::isnan(zeros[i])) << "column " << i << ": a fragment outside the output read row 2";
    EXPECT_EQ(d[16 + i], -1.0f) << "column " << i << ": a fragment outside the output stored";
  }
  for (int i = 0; i < 16; ++i) EXPECT_NE(d[i], 0.0f);
}

TEST(EpilogueNodes, NanPropagatesThroughReluMaxAndAmax) {
  float const nan = std::nanf("");
  EXPECT_TRUE(std::isnan(op::Relu::apply(nan)));
  EXPECT_TRUE(std::isnan(op::Max::apply(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(op::Max::apply(1.0f, nan)));
  EXPECT_TRUE(std::isnan(op::Min::apply(1.0f, nan)));
  EXPECT_TRUE(std::isnan(reduce::AbsMax::combine(0.0f, nan)));
  EXPECT_TRUE(std::isnan(reduce::AbsMax::combine(nan, 3.0f)));
}

}  // namespace
}  // namespace tilefuse::epilogue
