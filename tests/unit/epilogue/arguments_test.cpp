// Epilogue arguments are set by name and checked: every mistake is refused with a sentence naming it.
#include <gtest/gtest.h>

#include <vector>

#include <tilefuse/epilogue/arguments.hpp>

namespace tilefuse::epilogue {
namespace {

using Tree = Store<"D", half_t, Relu<Add<Mul<Scalar<"alpha">, Acc>, Add<RowBroadcast<"bias", half_t>, AuxLoad<"C", half_t>>>>>;
constexpr ProblemShape kShape{4, 6, 2};

struct Buffers {
  std::vector<half_t> bias = std::vector<half_t>(12);
  std::vector<half_t> c = std::vector<half_t>(48);
  std::vector<half_t> d = std::vector<half_t>(48);
};

// Binds and returns the error message ("" on success).
std::string bind_message(EpilogueArguments<Tree> const& args, ProblemShape shape = kShape) {
  Tree::Params params;
  Status s = args.bind(shape, &params);
  return s.ok() ? "" : s.message();
}

TEST(EpilogueArguments, ListsNamesInTreeOrder) {
  EXPECT_EQ(EpilogueArguments<Tree>::argument_names(), (std::vector<std::string>{"D", "alpha", "bias", "C"}));
}

TEST(EpilogueArguments, BindsNamedValuesIntoParams) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", 2.0f).set("bias", b.bias.data()).set("C", b.c.data(), {.ld = 6}).set("D", b.d.data());
  Tree::Params params;
  ASSERT_TRUE(args.bind(kShape, &params).ok());
  EXPECT_EQ(params.data, b.d.data());
  EXPECT_EQ(params.ld, 6);
  EXPECT_EQ(params.batch_stride, 24);
  auto const& relu = cuda::std::get<0>(params.children);
  auto const& add = cuda::std::get<0>(relu.children);
  auto const& mul = cuda::std::get<0>(add.children);
  EXPECT_EQ(cuda::std::get<0>(mul.children).value, 2.0f);
  auto const& inner = cuda::std::get<1>(add.children);
  EXPECT_EQ(cuda::std::get<0>(inner.children).data, b.bias.data());
  EXPECT_EQ(cuda::std::get<0>(inner.children).batch_stride, 6);
  EXPECT_EQ(cuda::std::get<1>(inner.children).data, b.c.data());
}

TEST(EpilogueArguments, RefusesAnUnknownName) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", 1.0f).set("bais", b.bias.data()).set("bias", b.bias.data()).set("C", b.c.data()).set("D", b.d.data());
  std::string const m = bind_message(args);
  EXPECT_NE(m.find("no argument named \"bais\""), std::string::npos) << m;
  EXPECT_NE(m.find("D, alpha, bias, C"), std::string::npos) << m;
}

TEST(EpilogueArguments, RefusesAMissingArgument) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", 1.0f).set("C", b.c.data()).set("D", b.d.data());
  std::string const m = bind_message(args);
  EXPECT_NE(m.find("\"bias\" was never set"), std::string::npos) << m;
}

TEST(EpilogueArguments, RefusesTheWrongElementType) {
  Buffers b;
  std::vector<float> bias32(6);
  EpilogueArguments<Tree> args;
  args.set("alpha", 1.0f).set("bias", bias32.data()).set("C", b.c.data()).set("D", b.d.data());
  std::string const m = bind_message(args);
  EXPECT_NE(m.find("\"bias\" points to float32"), std::string::npos) << m;
  EXPECT_NE(m.find("uses float16"), std::string::npos) << m;
}

TEST(EpilogueArguments, RefusesAReadOnlyOutputAndNullPointers) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", 1.0f).set("bias", b.bias.data()).set("C", b.c.data());
  args.set("D", static_cast<half_t const*>(b.d.data()));
  EXPECT_NE(bind_message(args).find("output \"D\" was given a pointer to const"), std::string::npos);
  args.set("D", static_cast<half_t*>(nullptr));
  EXPECT_NE(bind_message(args).find("\"D\" is a null pointer"), std::string::npos);
}

TEST(EpilogueArguments, RefusesAPointerForAScalarOfTheWrongTypeAndAScalarForAPointer) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", b.bias.data()).set("bias", b.bias.data()).set("C", b.c.data()).set("D", b.d.data());
  EXPECT_NE(bind_message(args).find("scalar \"alpha\" was given a float16 pointer"), std::string::npos);
  args.set("alpha", 1.0f).set("bias", 3.0f);
  EXPECT_NE(bind_message(args).find("\"bias\" needs a pointer to float16"), std::string::npos);
}

TEST(EpilogueArguments, RefusesStridesThatDoNotFitTheProblem) {
  Buffers b;
  EpilogueArguments<Tree> args;
  args.set("alpha", 1.0f).set("bias", b.bias.data()).set("C", b.c.data(), {.ld = 5}).set("D", b.d.data());
  std::string m = bind_message(args);
  EXPECT_NE(m.find("\"C\" has ld = 5"), std::string::npos) << m;
  EXPECT_NE(m.find("needs ld >= 6"), std::string::npos) << m;

  args.set("C", b.c.data()).set("D", b.d.data(), {.batch_stride = 0});
  m = bind_message(args);
  EXPECT_NE(m.find("output \"D\" has batch_stride = 0"), std::string::npos) << m;

  args.set("D", b.d.data()).set("C", b.c.data(), {.batch_stride = 10});
  m = bind_message(args);
  EXPECT_NE(m.find("\"C\" has batch_stride = 10"), std::string::npos) << m;

  // Sharing one input across the batch is allowed.
  args.set("C", b.c.data(), {.batch_stride = 0});
  EXPECT_EQ(bind_message(args), "");
}

TEST(EpilogueArguments, RefusesMisalignedPointers) {
  std::vector<float> storage(64);
  using FloatTree = Store<"D", float, Acc>;
  EpilogueArguments<FloatTree> args;
  auto* misaligned_ptr = reinterpret_cast<float*>(reinterpret_cast<char*>(storage.data()) + 2);
  args.set("D", misaligned_ptr);
  FloatTree::Params params;
  Status s = args.bind({2, 2, 1}, &params);
  EXPECT_EQ(s.code(), StatusCode::kMisaligned);
}

TEST(EpilogueArguments, TreesThatReadCoordinatesAreKnown) {
  EXPECT_FALSE(uses_coordinates<Tree>());
  EXPECT_TRUE((uses_coordinates<Store<"D", float, Where<Less<Row, Scalar<"r0">>, Acc, Acc>>>()));
}

}  // namespace
}  // namespace tilefuse::epilogue
