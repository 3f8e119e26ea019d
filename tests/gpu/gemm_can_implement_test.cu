// The GPU path's argument checks: can_implement refuses what cannot run (with a sentence naming the
// culprit), run refuses the same arguments without launching anything, and describe names the path a
// problem takes (the 16-byte cp.async path or the element-wise one) and why.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using BiasTree = specs::BiasRowRelu::Tree<bfloat16_t>;
using BiasOp = gemm::Gemm<bfloat16_t, RowMajor, RowMajor, BiasTree, Sm80LargeConfig>;
using ColumnAOp = gemm::Gemm<bfloat16_t, ColumnMajor, ColumnMajor, specs::StoreD::Tree<bfloat16_t>, Sm80SmallConfig>;

bool mentions(std::string const& text, std::string_view word) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return out;
  };
  return lower(text).find(lower(word)) != std::string::npos;
}

bool names_narrow_path(std::string const& d) {
  return mentions(d, "element-wise") || mentions(d, "elementwise") || mentions(d, "narrow");
}
bool names_fast_path(std::string const& d) { return mentions(d, "16-byte") && !names_narrow_path(d); }

// Device memory for a 64 x 64 x 64 problem, with room for a batch of 4 and padded leading dimensions.
constexpr index_t kM = 64;
constexpr index_t kN = 64;
constexpr index_t kK = 64;
constexpr std::size_t kRoom = 4 * 128 * 128 * sizeof(bfloat16_t);

struct Buffers {
  DeviceBuffer a{kRoom};
  DeviceBuffer b{kRoom};
  DeviceBuffer d{kRoom};
  DeviceBuffer bias{kRoom};
};

BiasOp::Arguments valid_bias_args(Buffers const& buf) {
  BiasOp::Arguments args;
  args.problem = GemmCoord{kM, kN, kK, 1};
  args.a = buf.a.as<bfloat16_t const>();
  args.b = buf.b.as<bfloat16_t const>();
  args.epilogue.set("D", buf.d.as<bfloat16_t>()).set("bias", buf.bias.as<bfloat16_t const>(), {.batch_stride = 0});
  return args;
}

ColumnAOp::Arguments valid_column_args(Buffers const& buf) {
  ColumnAOp::Arguments args;
  args.problem = GemmCoord{kM, kN, kK, 1};
  args.a = buf.a.as<bfloat16_t const>();
  args.b = buf.b.as<bfloat16_t const>();
  args.epilogue.set("D", buf.d.as<bfloat16_t>());
  return args;
}

// can_implement refuses, with a message that mentions every word of `words`; describe says so too.
template <class Op>
void expect_refused(typename Op::Arguments const& args, std::vector<std::string_view> words) {
  Status const s = Op::can_implement(args);
  ASSERT_FALSE(s.ok()) << "can_implement accepted the arguments; describe: " << Op::describe(args);
  EXPECT_FALSE(s.message().empty()) << "a refusal must say why";
  for (auto w : words) EXPECT_TRUE(mentions(s.message(), w)) << "the refusal should mention \"" << w << "\": " << s.to_string();
  EXPECT_TRUE(Op::describe(args).find(s.message()) != std::string::npos)
      << "describe should carry the refusal; describe: " << Op::describe(args) << "\nrefusal: " << s.message();
}

TEST(GemmCanImplement, AcceptsValidArguments) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  Status s = BiasOp::can_implement(args);
  EXPECT_TRUE(s.ok()) << s.to_string();
  args.split_k = 2;
  s = BiasOp::can_implement(args);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_GE(BiasOp::workspace_size(args), static_cast<std::size_t>(2 * kM * kN * sizeof(float)))
      << "parallel split-K keeps one fp32 partial per split and output element";
  auto column = valid_column_args(buf);
  s = ColumnAOp::can_implement(column);
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(GemmCanImplement, RefusesNullOperands) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  args.a = nullptr;
  expect_refused<BiasOp>(args, {"null"});
  args = valid_bias_args(buf);
  args.b = nullptr;
  expect_refused<BiasOp>(args, {"null"});
  args = valid_bias_args(buf);
  args.epilogue.set("D", static_cast<bfloat16_t*>(nullptr));
  expect_refused<BiasOp>(args, {"\"D\"", "null"});
  args = valid_bias_args(buf);
  args.epilogue.set("bias", static_cast<bfloat16_t const*>(nullptr));
  expect_refused<BiasOp>(args, {"bias", "null"});
}

TEST(GemmCanImplement, RefusesLeadingDimensionsTooSmall) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  args.lda = kK - 1;  // row-major A: a row holds K elements
  expect_refused<BiasOp>(args, {"lda"});
  args = valid_bias_args(buf);
  args.ldb = kN - 1;  // row-major B: a row holds N elements
  expect_refused<BiasOp>(args, {"ldb"});
  auto column = valid_column_args(buf);
  column.lda = kM - 1;  // column-major A: a column holds M elements
  expect_refused<ColumnAOp>(column, {"lda"});
  column = valid_column_args(buf);
  column.ldb = kK - 1;  // column-major B: a column holds K elements
  expect_refused<ColumnAOp>(column, {"ldb"});
  args = valid_bias_args(buf);
  args.epilogue.set("D", buf.d.as<bfloat16_t>(), {.ld = kN - 1});
  expect_refused<BiasOp>(args, {"\"D\"", "ld"});
}

TEST(GemmCanImplement, RefusesNegativeExtents) {
  Buffers buf;
  for (GemmCoord p : {GemmCoord{-1, kN, kK, 1}, GemmCoord{kM, -1, kK, 1}, GemmCoord{kM, kN, -1, 1},
                      GemmCoord{kM, kN, kK, -1}}) {
    auto args = valid_bias_args(buf);
    args.problem = p;
    SCOPED_TRACE(::testing::Message() << "problem " << p.m << " x " << p.n << " x " << p.k << " batch " << p.batch);
    expect_refused<BiasOp>(args, {});
  }
}

TEST(GemmCanImplement, RefusesBadSplitK) {
  Buffers buf;
  for (int split : {-1, -4}) {  // (0 asks the operation to choose: GemmSelect.SplitKZeroChooses)
    auto args = valid_bias_args(buf);
    args.split_k = split;
    SCOPED_TRACE(::testing::Message() << "split_k " << split);
    expect_refused<BiasOp>(args, {"split"});
  }
}

TEST(GemmCanImplement, RefusesOverlappingBatches) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  args.problem.batch = 2;
  args.batch_stride_a = 1;
  expect_refused<BiasOp>(args, {"batch"});
  args = valid_bias_args(buf);
  args.problem.batch = 2;
  args.epilogue.set("D", buf.d.as<bfloat16_t>(), {.batch_stride = kN});  // D entries of kM x kN would overlap
  expect_refused<BiasOp>(args, {"\"D\"", "batch"});
}

TEST(GemmCanImplement, RefusesMissingOrReadOnlyEpilogueArguments) {
  Buffers buf;
  BiasOp::Arguments args;
  args.problem = GemmCoord{kM, kN, kK, 1};
  args.a = buf.a.as<bfloat16_t const>();
  args.b = buf.b.as<bfloat16_t const>();
  args.epilogue.set("D", buf.d.as<bfloat16_t>());
  expect_refused<BiasOp>(args, {"bias"});  // bias never set
  args.epilogue = BiasOp::EpilogueArgs{};
  args.epilogue.set("bias", buf.bias.as<bfloat16_t const>(), {.batch_stride = 0});
  expect_refused<BiasOp>(args, {"\"D\""});  // D never set
  args.epilogue.set("D", buf.d.as<bfloat16_t const>());
  expect_refused<BiasOp>(args, {"\"D\""});  // D read-only
  args.epilogue.set("D", buf.d.as<half_t>());
  expect_refused<BiasOp>(args, {"\"D\""});  // D of the wrong element type
}

TEST(GemmCanImplement, RefusesHostMemory) {
  Buffers buf;
  std::vector<bfloat16_t> host(static_cast<std::size_t>(kM * kK));
  auto args = valid_bias_args(buf);
  args.a = host.data();
  expect_refused<BiasOp>(args, {});
}

TEST(GemmCanImplement, RunRefusesWhatCanImplementRefusesAndLaunchesNothing) {
  Buffers buf;
  Stream stream;
  buf.d.fill_bytes(kPoisonByte, stream.get());
  auto args = valid_bias_args(buf);
  args.lda = kK - 1;
  Status const checked = BiasOp::can_implement(args);
  ASSERT_FALSE(checked.ok());
  Status const ran = BiasOp::run(args, nullptr, stream.get());
  EXPECT_FALSE(ran.ok());
  EXPECT_EQ(ran.code(), checked.code()) << ran.to_string();
  stream.synchronize();
  std::vector<std::uint8_t> d(buf.d.bytes());
  buf.d.download(d.data(), stream.get());
  EXPECT_TRUE(std::all_of(d.begin(), d.end(), [](std::uint8_t x) { return x == kPoisonByte; }))
      << "a refused run wrote to D";
}

TEST(GemmCanImplement, RunRefusesSplitKWithoutWorkspace) {
  Buffers buf;
  Stream stream;
  auto args = valid_bias_args(buf);
  args.split_k = 2;
  ASSERT_TRUE(BiasOp::can_implement(args).ok());
  if (BiasOp::workspace_size(args) == 0) GTEST_SKIP() << "this split-K needs no workspace";
  Status const ran = BiasOp::run(args, nullptr, stream.get());
  EXPECT_FALSE(ran.ok()) << "split-K ran without its workspace";
  stream.synchronize();
}

TEST(GemmDescribe, NamesTheSixteenBytePathForAlignedOperands) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  std::string const d = BiasOp::describe(args);
  EXPECT_TRUE(names_fast_path(d)) << d;
  args.lda = 72;  // padded, still a multiple of 8 elements
  args.ldb = 128;
  EXPECT_TRUE(names_fast_path(BiasOp::describe(args))) << BiasOp::describe(args);
  auto column = valid_column_args(buf);
  EXPECT_TRUE(names_fast_path(ColumnAOp::describe(column))) << ColumnAOp::describe(column);
}

TEST(GemmDescribe, NamesTheElementWisePathAndWhy) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  args.lda = 65;  // odd: rows of A are not 16-byte aligned
  std::string d = BiasOp::describe(args);
  EXPECT_TRUE(names_narrow_path(d)) << d;
  EXPECT_TRUE(mentions(d, "lda")) << "describe should say which operand forced the narrow path: " << d;

  args = valid_bias_args(buf);
  args.ldb = 67;
  d = BiasOp::describe(args);
  EXPECT_TRUE(names_narrow_path(d)) << d;
  EXPECT_TRUE(mentions(d, "ldb")) << d;

  args = valid_bias_args(buf);
  args.a = buf.a.as<bfloat16_t const>() + 1;  // 2-byte aligned only
  d = BiasOp::describe(args);
  EXPECT_TRUE(names_narrow_path(d)) << d;

  args = valid_bias_args(buf);
  args.problem.batch = 3;
  args.batch_stride_a = kM * kK + 1;  // the second matrix starts off the 16-byte grid
  d = BiasOp::describe(args);
  EXPECT_TRUE(names_narrow_path(d)) << d;

  auto column = valid_column_args(buf);
  column.lda = kM + 1;
  d = ColumnAOp::describe(column);
  EXPECT_TRUE(names_narrow_path(d)) << d;
}

TEST(GemmDescribe, NamesSplitK) {
  Buffers buf;
  auto args = valid_bias_args(buf);
  EXPECT_FALSE(mentions(BiasOp::describe(args), "split")) << BiasOp::describe(args);
  args.split_k = 2;
  EXPECT_TRUE(mentions(BiasOp::describe(args), "split")) << BiasOp::describe(args);
}

}  // namespace
}  // namespace tilefuse::gpu_test
