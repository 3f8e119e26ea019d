// Conv2d's argument checks: can_implement refuses what cannot run with a sentence naming the culprit
// (groups, mode, null / host pointers, invalid problems, split-K, epilogue arguments), accepts each
// mode with only the tensors it reads, and describe() names the operand path and why. Host-side only:
// nothing here launches a kernel (run()'s refusals are tested beside the instances they launch, in
// conv2d_fprop_test.cu and conv2d_wgrad_test.cu).
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using T = bfloat16_t;
using FusedFprop = conv::Conv2d<T, ConvMode::kFprop, conv_specs::BiasReluResidual::Tree<T>, Sm80LargeConfig>;
using PlainDgrad = conv::Conv2d<T, ConvMode::kDgrad, conv_specs::Plain::Tree<T>, Sm80SmallConfig>;
using PlainWgrad = conv::Conv2d<T, ConvMode::kWgrad, conv_specs::Plain::Tree<T>, Sm80LargeConfig>;

// Whether `text` contains `word` as a whole word (case-insensitive): "x" must not match "index".
bool names(std::string const& text, std::string_view word) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return out;
  };
  std::string const t = lower(text);
  std::string const w = lower(word);
  auto is_word_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (std::size_t at = t.find(w); at != std::string::npos; at = t.find(w, at + 1)) {
    bool const starts = at == 0 || !is_word_char(t[at - 1]) || !is_word_char(w.front());
    bool const ends = at + w.size() == t.size() || !is_word_char(t[at + w.size()]) || !is_word_char(w.back());
    if (starts && ends) return true;
  }
  return false;
}

// Device memory big enough for every tensor of kProblem (nothing here launches, so only the pointers matter).
Conv2dProblem const kProblem = conv_problem(2, 8, 8, 16, 32, 3, 3, 1);
constexpr std::size_t kRoom = 64 * 1024 * sizeof(T);

struct Buffers {
  DeviceBuffer x{kRoom}, w{kRoom}, dy{kRoom}, out{kRoom}, bias{kRoom}, residual{kRoom};
};

FusedFprop::Arguments valid_fprop(Buffers const& b) {
  FusedFprop::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = kProblem;
  args.problem.mode = ConvMode::kFprop;
  args.x = b.x.as<T const>();
  args.w = b.w.as<T const>();
  args.epilogue.set("D", b.out.as<T>()).set("bias", b.bias.as<T const>()).set("residual", b.residual.as<T const>());
  return args;
}

PlainDgrad::Arguments valid_dgrad(Buffers const& b) {
  PlainDgrad::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = kProblem;
  args.problem.mode = ConvMode::kDgrad;
  args.dy = b.dy.as<T const>();
  args.w = b.w.as<T const>();
  args.epilogue.set("D", b.out.as<T>());
  return args;
}

PlainWgrad::Arguments valid_wgrad(Buffers const& b) {
  PlainWgrad::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = kProblem;
  args.problem.mode = ConvMode::kWgrad;
  args.x = b.x.as<T const>();
  args.dy = b.dy.as<T const>();
  args.epilogue.set("D", b.out.as<T>());
  return args;
}

// can_implement refuses with a message naming every word of `words`; describe carries the refusal.
template <class Op>
void expect_refused(typename Op::Arguments const& args, std::vector<std::string_view> words) {
  Status const s = Op::can_implement(args);
  ASSERT_FALSE(s.ok()) << "can_implement accepted the arguments; describe: " << Op::describe(args);
  EXPECT_FALSE(s.message().empty()) << "a refusal must say why";
  for (auto w : words) EXPECT_TRUE(names(s.message(), w)) << "the refusal should name \"" << w << "\": " << s.to_string();
  EXPECT_NE(Op::describe(args).find(s.message()), std::string::npos)
      << "describe should carry the refusal; describe: " << Op::describe(args) << "\nrefusal: " << s.message();
}

TEST(Conv2dCanImplement, AcceptsEachModeWithOnlyTheTensorsItReads) {
  Buffers b;
  Status s = FusedFprop::can_implement(valid_fprop(b));  // dy left null
  EXPECT_TRUE(s.ok()) << s.to_string();
  s = PlainDgrad::can_implement(valid_dgrad(b));  // x left null
  EXPECT_TRUE(s.ok()) << s.to_string();
  s = PlainWgrad::can_implement(valid_wgrad(b));  // w left null
  EXPECT_TRUE(s.ok()) << s.to_string();
  auto wgrad = valid_wgrad(b);
  wgrad.split_k = 3;
  s = PlainWgrad::can_implement(wgrad);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(Conv2dCanImplement, OutputMatrixOfEachMode) {
  Conv2dProblem const& p = kProblem;  // N=2 8x8, C=16, K=32, 3x3 "same": P = Q = 8
  EXPECT_EQ(FusedFprop::output_matrix(p), (GemmCoord{2 * 8 * 8, 32, 3 * 3 * 16, 1}));  // y: (n,p,q) x k
  EXPECT_EQ(PlainDgrad::output_matrix(p), (GemmCoord{2 * 8 * 8, 16, 3 * 3 * 32, 1}));  // dx: (n,h,w) x c
  EXPECT_EQ(PlainWgrad::output_matrix(p), (GemmCoord{32, 3 * 3 * 16, 2 * 8 * 8, 1}));  // dw: k x (r,s,c)
}

TEST(Conv2dCanImplement, RefusesGroups) {
  Buffers b;
  auto args = valid_fprop(b);
  args.problem.groups = 2;
  expect_refused<FusedFprop>(args, {"groups"});
  auto wgrad = valid_wgrad(b);
  wgrad.problem.groups = 4;
  expect_refused<PlainWgrad>(wgrad, {"groups"});
}

TEST(Conv2dCanImplement, RefusesAModeMismatch) {
  Buffers b;
  auto args = valid_fprop(b);
  args.problem.mode = ConvMode::kDgrad;
  expect_refused<FusedFprop>(args, {"mode", "fprop", "dgrad"});
  auto wgrad = valid_wgrad(b);
  wgrad.problem.mode = ConvMode::kFprop;
  expect_refused<PlainWgrad>(wgrad, {"mode", "wgrad", "fprop"});
}

TEST(Conv2dCanImplement, RefusesNullOperandsOfTheMode) {
  Buffers b;
  auto fprop = valid_fprop(b);
  fprop.x = nullptr;
  expect_refused<FusedFprop>(fprop, {"x", "null"});
  fprop = valid_fprop(b);
  fprop.w = nullptr;
  expect_refused<FusedFprop>(fprop, {"w", "null"});
  auto dgrad = valid_dgrad(b);
  dgrad.dy = nullptr;
  expect_refused<PlainDgrad>(dgrad, {"dy", "null"});
  dgrad = valid_dgrad(b);
  dgrad.w = nullptr;
  expect_refused<PlainDgrad>(dgrad, {"w", "null"});
  auto wgrad = valid_wgrad(b);
  wgrad.x = nullptr;
  expect_refused<PlainWgrad>(wgrad, {"x", "null"});
  wgrad = valid_wgrad(b);
  wgrad.dy = nullptr;
  expect_refused<PlainWgrad>(wgrad, {"dy", "null"});
  fprop = valid_fprop(b);
  fprop.epilogue.set("D", static_cast<T*>(nullptr));
  expect_refused<FusedFprop>(fprop, {"D", "null"});
}

TEST(Conv2dCanImplement, RefusesHostMemory) {
  Buffers b;
  std::vector<T> host(static_cast<std::size_t>(kProblem.N * kProblem.H * kProblem.W * kProblem.C));
  auto args = valid_fprop(b);
  args.x = host.data();
  expect_refused<FusedFprop>(args, {"x", "host"});
}

TEST(Conv2dCanImplement, RefusesInvalidProblemsNamingTheField) {
  Buffers b;
  auto args = valid_fprop(b);
  args.problem.C = 0;
  expect_refused<FusedFprop>(args, {"C = 0"});
  args = valid_fprop(b);
  args.problem.R = 11;  // covers 11 rows, the padded input has 10
  expect_refused<FusedFprop>(args, {"R = 11"});
  args = valid_fprop(b);
  args.problem.stride_w = 0;
  expect_refused<FusedFprop>(args, {"stride_w = 0"});
  args = valid_fprop(b);
  args.problem.pad_h = -1;
  expect_refused<FusedFprop>(args, {"pad_h = -1"});
}

TEST(Conv2dCanImplement, RefusesNegativeSplitK) {
  Buffers b;
  for (int split : {-1, -7}) {
    auto args = valid_wgrad(b);
    args.split_k = split;
    SCOPED_TRACE(::testing::Message() << "split_k " << split);
    expect_refused<PlainWgrad>(args, {"split_k"});
  }
}

// split_k = 0 lets the operation choose; describe and workspace_size agree on the choice.
TEST(Conv2dCanImplement, AcceptsSplitKZeroAndResolvesIt) {
  Buffers b;
  for (Conv2dProblem p : {kProblem, conv_problem(8, 28, 28, 8, 8, 3, 3, 1)}) {  // the second: K = N*P*Q long
    auto args = valid_wgrad(b);
    args.problem = p;
    args.problem.mode = ConvMode::kWgrad;
    args.split_k = 0;
    Status const s = PlainWgrad::can_implement(args);
    EXPECT_TRUE(s.ok()) << s.to_string();
    std::string const d = PlainWgrad::describe(args);
    bool const splits = PlainWgrad::workspace_size(args) > 0;
    EXPECT_EQ(names(d, "split-K"), splits) << "describe and workspace_size disagree on the split: " << d;
  }
}

TEST(Conv2dCanImplement, RefusesWrongEpilogueArguments) {
  Buffers b;
  FusedFprop::Arguments args = valid_fprop(b);
  args.epilogue = FusedFprop::EpilogueArgs{};
  args.epilogue.set("D", b.out.as<T>()).set("residual", b.residual.as<T const>());
  expect_refused<FusedFprop>(args, {"bias"});  // never set
  args = valid_fprop(b);
  args.epilogue.set("bais", b.bias.as<T const>());  // a misspelt name
  expect_refused<FusedFprop>(args, {"bais"});
  args = valid_fprop(b);
  args.epilogue.set("D", b.out.as<T const>());  // read-only output
  expect_refused<FusedFprop>(args, {"D"});
  args = valid_fprop(b);
  args.epilogue.set("D", b.out.as<half_t>());  // wrong element type
  expect_refused<FusedFprop>(args, {"D"});
  args = valid_fprop(b);
  args.epilogue.set("residual", b.residual.as<T const>(), {.ld = kProblem.K - 1});  // rows overlap
  expect_refused<FusedFprop>(args, {"residual", "ld"});
  args = valid_fprop(b);
  args.epilogue.set("bias", static_cast<T const*>(nullptr));
  expect_refused<FusedFprop>(args, {"bias", "null"});
}

TEST(Conv2dDescribe, NamesTheOperandPathAndWhy) {
  Buffers b;
  auto args = valid_fprop(b);  // C = 16, K = 32, aligned
  std::string d = FusedFprop::describe(args);
  EXPECT_TRUE(names(d, "16-byte")) << d;
  EXPECT_FALSE(names(d, "element-wise")) << d;

  args.problem.C = 3;  // the first layer of a network
  d = FusedFprop::describe(args);
  EXPECT_TRUE(names(d, "element-wise")) << d;
  EXPECT_TRUE(names(d, "C = 3")) << "describe should say why: " << d;

  auto dgrad = valid_dgrad(b);
  dgrad.problem.K = 20;
  d = PlainDgrad::describe(dgrad);
  EXPECT_TRUE(names(d, "element-wise")) << d;
  EXPECT_TRUE(names(d, "K = 20")) << "describe should say why: " << d;

  auto wgrad = valid_wgrad(b);
  wgrad.x = b.x.as<T const>() + 1;  // 2-byte aligned only
  d = PlainWgrad::describe(wgrad);
  EXPECT_TRUE(names(d, "element-wise")) << d;
  EXPECT_TRUE(names(d, "x") && names(d, "aligned")) << "describe should say which operand: " << d;
}

TEST(Conv2dDescribe, NamesTheModeAndSplitK) {
  Buffers b;
  auto wgrad = valid_wgrad(b);
  EXPECT_TRUE(names(PlainWgrad::describe(wgrad), "wgrad")) << PlainWgrad::describe(wgrad);
  EXPECT_FALSE(names(PlainWgrad::describe(wgrad), "split-K")) << PlainWgrad::describe(wgrad);
  wgrad.split_k = 3;
  EXPECT_TRUE(names(PlainWgrad::describe(wgrad), "split-K 3")) << PlainWgrad::describe(wgrad);
  EXPECT_TRUE(names(FusedFprop::describe(valid_fprop(b)), "fprop"));
  EXPECT_TRUE(names(PlainDgrad::describe(valid_dgrad(b)), "dgrad"));
}

}  // namespace
}  // namespace tilefuse::gpu_test
