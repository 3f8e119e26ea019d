// The conv planner (conv/device/conv2d_plan.hpp) as a plain function: the decisions conv::Conv2d and the
// Python package both get, on made-up device facts (no GPU).
#include <gtest/gtest.h>

#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/gemm/gemm_config.h>

namespace tilefuse::conv {
namespace {

constexpr DeviceFacts kH100{9, 0, 132};
constexpr DeviceFacts kA100{8, 0, 108};

ConvPlanInput input(ConvMode mode, index_t n, index_t hw, index_t c, index_t k, index_t rs, DeviceFacts device = kH100) {
  ConvPlanInput in;
  Conv2dProblem& p = in.problem;
  p.N = n, p.H = hw, p.W = hw, p.C = c, p.K = k, p.R = rs, p.S = rs, p.pad_h = rs / 2, p.pad_w = rs / 2;
  p.mode = mode;
  in.device = device;
  in.split_k = 0;
  return in;
}

TEST(Conv2dPlan, Sm80TileShapesAreTheConfigs) {
  auto const same = [](gemm::Sm80Tile t, auto config) {
    std::array<int, 3> const s = gemm::sm80_tile_shape(t);
    using C = decltype(config);
    return s[0] == C::kTileM && s[1] == C::kTileN && s[2] == C::kTileK;
  };
  EXPECT_TRUE(same(gemm::Sm80Tile::kLarge, gemm::Sm80LargeConfig{}));
  EXPECT_TRUE(same(gemm::Sm80Tile::kSmall, gemm::Sm80SmallConfig{}));
  EXPECT_TRUE(same(gemm::Sm80Tile::kNarrow, gemm::Sm80NarrowConfig{}));
}

TEST(Conv2dPlan, AlignedFpropOnHopperTakesIm2colAndSaysWhy) {
  ConvPlan const plan = plan_conv2d(input(ConvMode::kFprop, 64, 56, 64, 64, 3));
  EXPECT_EQ(plan.family, ConvFamily::kSm90);
  EXPECT_TRUE(plan.im2col);
  EXPECT_EQ(plan.split_k, 1);
  EXPECT_NE(plan.why_tile.find("128x256:"), std::string::npos) << plan.why_tile;
  EXPECT_NE(plan.why_source.find("im2col"), std::string::npos) << plan.why_source;
}

TEST(Conv2dPlan, OtherDevicesAndUnalignedProblemsRunTheSm80Kernel) {
  ConvPlan const a100 = plan_conv2d(input(ConvMode::kFprop, 8, 14, 64, 64, 3, kA100));
  EXPECT_EQ(a100.family, ConvFamily::kSm80);
  EXPECT_NE(a100.why_not_hopper.find("sm_80"), std::string::npos) << a100.why_not_hopper;
  ConvPlan const rgb = plan_conv2d(input(ConvMode::kFprop, 8, 224, 3, 64, 7));
  EXPECT_EQ(rgb.family, ConvFamily::kSm80);
  EXPECT_FALSE(rgb.aligned);
  EXPECT_NE(rgb.why_narrow.find("C = 3"), std::string::npos) << rgb.why_narrow;
  ConvPlanInput misaligned = input(ConvMode::kWgrad, 8, 14, 64, 64, 3);
  misaligned.operands_aligned = false;
  EXPECT_EQ(plan_conv2d(misaligned).why_narrow, "dy or x is not 16-byte aligned");
}

// A residual TMA cannot read is a fact the caller passes (conv::Conv2d from the bound tree, Python from the
// tensor): a plan that would load it by TMA runs the sm80 kernel and says why; a tree without one is unaffected.
TEST(Conv2dPlan, UnalignedResidualSendsATmaResidualPlanToSm80) {
  ConvPlanInput in = input(ConvMode::kFprop, 64, 14, 256, 256, 3);
  in.tree = {true, true};
  ASSERT_EQ(plan_conv2d(in).family, ConvFamily::kSm90);
  in.residual_unaligned = "the residual, loaded by TMA, needs a 16-byte-aligned base (test)";
  ConvPlan const off = plan_conv2d(in);
  EXPECT_EQ(off.family, ConvFamily::kSm80);
  EXPECT_EQ(off.why_not_hopper, in.residual_unaligned);
  EXPECT_EQ(off.split_k, off.sm80_split_k);
  in.tree = {true, false};  // no residual loaded by TMA: the fact does not apply
  EXPECT_EQ(plan_conv2d(in).family, ConvFamily::kSm90);
}

TEST(Conv2dPlan, DgradWithStrideTwoHasNoHopperSource) {
  ConvPlanInput in = input(ConvMode::kDgrad, 8, 28, 64, 64, 3);
  in.problem.stride_h = in.problem.stride_w = 2;
  ConvPlan const plan = plan_conv2d(in);
  EXPECT_EQ(plan.family, ConvFamily::kSm80);
  EXPECT_NE(plan.why_not_hopper.find("strides are 2x2"), std::string::npos) << plan.why_not_hopper;
}

TEST(Conv2dPlan, WgradSplitsLongReductionsAndSumsManySplitsInTheKernel) {
  ConvPlanInput in = input(ConvMode::kWgrad, 64, 56, 64, 64, 1);
  ConvPlan const plan = plan_conv2d(in);
  ASSERT_EQ(plan.family, ConvFamily::kSm90);
  EXPECT_GE(plan.split_k, 12);
  EXPECT_TRUE(plan.split_in_kernel);
  in.deterministic = true;
  EXPECT_FALSE(plan_conv2d(in).split_in_kernel);
  in.deterministic = false;
  in.overrides.split_reduction = SplitReduction::kPass;
  EXPECT_FALSE(plan_conv2d(in).split_in_kernel);
  in.overrides = {};
  in.split_k = 5;
  ConvPlan const five = plan_conv2d(in);
  EXPECT_EQ(five.split_k, 5);
  EXPECT_FALSE(five.split_in_kernel) << "below 12 splits the pass sums them";
}

TEST(Conv2dPlan, OverridesForceAndSayWhereTheyCannot) {
  ConvPlanInput in = input(ConvMode::kFprop, 2, 14, 64, 64, 3);
  in.overrides.sm90_source = ConvSource::kGather;
  in.overrides.sm90_tile = ConvSm90Tile::kWide;
  ConvPlan const gathered = plan_conv2d(in);
  EXPECT_FALSE(gathered.im2col);
  EXPECT_NE(gathered.why_tile.find("wide ignored"), std::string::npos) << gathered.why_tile;
  in.overrides.sm90_tile = ConvSm90Tile::kNarrow;
  ConvPlan const narrow = plan_conv2d(in);
  EXPECT_EQ(narrow.sm90_tile, ConvSm90Tile::kNarrow);
  EXPECT_NE(narrow.why_tile.find("forced"), std::string::npos);
  in.overrides = {};
  in.overrides.family = ConvFamily::kSm80;
  EXPECT_EQ(plan_conv2d(in).family, ConvFamily::kSm80);
  // fprop takes no split on the Hopper kernel: a requested split runs the sm80 kernel.
  in.overrides = {};
  in.split_k = 4;
  ConvPlan const split = plan_conv2d(in);
  EXPECT_EQ(split.family, ConvFamily::kSm80);
  EXPECT_EQ(split.split_k, 4);
}

TEST(Conv2dPlan, TheTmaResidualRemovesTheWideTileAndKeepsCooperative128x64) {
  ConvPlanInput in = input(ConvMode::kFprop, 2, 64, 320, 320, 3);
  EXPECT_EQ(plan_conv2d(in).sm90_tile, ConvSm90Tile::kWide);
  in.tree = {true, true};
  EXPECT_NE(plan_conv2d(in).sm90_tile, ConvSm90Tile::kWide);
  ConvPlanInput small = input(ConvMode::kFprop, 2, 14, 64, 64, 3);
  EXPECT_EQ(plan_conv2d(small).sm90_tile, ConvSm90Tile::kPingPongNarrow);
  small.tree = {true, true};
  EXPECT_EQ(plan_conv2d(small).sm90_tile, ConvSm90Tile::kNarrow);
}

TEST(Conv2dPlan, Fp8WithC64TakesHalfKTiles) {
  ConvPlanInput in = input(ConvMode::kFprop, 8, 28, 64, 128, 3);
  in.element = ConvElement::kE4m3;
  ConvPlan const plan = plan_conv2d(in);
  EXPECT_EQ(plan.family, ConvFamily::kSm90);
  EXPECT_TRUE(plan.im2col && plan.half_k);
}

TEST(Conv2dPlan, TileNamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(ConvSm90Tile::kShortLarge); ++i) {
    auto const tile = static_cast<ConvSm90Tile>(i);
    EXPECT_EQ(conv_sm90_tile_named(name_of(tile)), tile);
  }
  EXPECT_FALSE(conv_sm90_tile_named("huge"));
}

}  // namespace
}  // namespace tilefuse::conv
