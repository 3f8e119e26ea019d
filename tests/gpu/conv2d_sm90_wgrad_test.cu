// Conv2d wgrad on the Hopper kernel (conv/kernel/sm90_implicit_gemm.h, WgradOperands), reached through
// the default config (Sm80AutoConfig): on an sm_90 device every bf16 / fp16 case with C a multiple of 64,
// K a multiple of 8 and aligned operands runs the TMA + WGMMA kernel (dy^T and im2col(x), both MN-major),
// with split_k = 0 (the wave model picks the splits), 1 (no split) or an explicit count; the splits
// summed in the kernel (gemm::Sm90SplitReduce, from 12 splits on) or by a second pass, each forced on
// the cases by Conv2dSm90WgradSplitReduction; the others (C = 40, C = 3, misaligned operands)
// fall back to the sm80 path inside the same lists. Every output element is checked against the host
// reference (conv2d_harness.hpp); the Conv2dSm90WgradTile tests force each tile and schedule. Then the
// selection: describe() names the Hopper wgrad and its split, or the sm80 path and why.

#include "conv2d_test_cases.hpp"
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::Sm80AutoConfig;

// Problems for the Hopper wgrad, every one with the given split_k: padding, strides 2 and 3 with odd
// extents, dilation, asymmetric filters / padding / strides / dilations, taps wholly in the padding,
// K not a multiple of the 128-row tile (partial M tiles), r*s*c not a multiple of the N tile, pixel
// counts that are not multiples of 64 (the last k-tile and split partial); and two problems it does not
// take (C = 40, C = 3), which run the sm80 path.
inline std::vector<ConvCase> sm90_wgrad_cases(std::uint64_t seed, int split_k) {
  std::vector<ConvCase> cases = {
      conv_case(conv_problem(2, 9, 11, 64, 72, 3, 3, 1), split_k),          // K = 72: a partial M tile
      conv_case(conv_problem(2, 12, 10, 64, 64, 3, 3, 2, 1, 2), split_k),   // dilation 2, padding 2
      conv_case(conv_problem(3, 15, 13, 64, 64, 3, 3, 1, 2), split_k),      // stride 2, odd extents
      conv_case(conv_problem(2, 15, 15, 128, 96, 1, 1, 0, 2), split_k),     // 1x1 stride 2
      conv_case(conv_problem(1, 19, 17, 128, 40, 5, 5, 3, 2, 2), split_k),  // 5x5 dilation 2 stride 2 padding 3
      conv_case(conv_problem(2, 23, 23, 64, 64, 7, 7, 3, 2), split_k),      // 7x7 stride 2 padding 3
      conv_case(conv_problem(1, 4, 4, 64, 8, 3, 3, 3), split_k),            // padding 3: taps wholly in the padding
      conv_case(conv_problem(5, 13, 13, 192, 256, 3, 3, 1), split_k),       // r*s*c = 1728, K = 256
      conv_case(conv_problem(2, 14, 14, 256, 520, 1, 1, 0), split_k),      // K = 520; 1x1: x by tiled TMA
      conv_case(conv_problem(3, 7, 9, 128, 64, 1, 1, 0), split_k),          // 1x1, 189 pixels: a partial k-tile of x tiled
      conv_case(conv_problem(4, 28, 28, 64, 64, 3, 3, 1), split_k),         // 3136 pixels: 49 k-tiles
      conv_case(conv_problem(2, 8, 8, 40, 64, 3, 3, 1), split_k),           // C = 40: the sm80 path
      conv_case(conv_problem(1, 9, 9, 3, 64, 3, 3, 1), split_k),            // C = 3: the sm80 path
  };
  // Asymmetric in everything: a 2x3 filter, padding (0, 1), stride (1, 2), dilation (2, 1).
  Conv2dProblem a = conv_problem(2, 5, 17, 64, 24, 2, 3, 0);
  a.pad_w = 1, a.stride_w = 2, a.dilation_h = 2;
  cases.push_back(conv_case(a, split_k));
  // A 3x2 filter, padding (2, 0), stride (3, 1), dilation (1, 2).
  Conv2dProblem b = conv_problem(3, 12, 6, 128, 16, 3, 2, 0);
  b.pad_h = 2, b.stride_h = 3, b.dilation_w = 2;
  cases.push_back(conv_case(b, split_k));
  return seeded(cases, seed);
}

// ResNet-50's layers at N = 2 with the operation's split choice.
inline std::vector<ConvCase> resnet50_split_cases(std::uint64_t seed) {
  std::vector<ConvCase> cases = resnet50_cases(2, seed);
  for (ConvCase& c : cases) c.split_k = 0;
  return cases;
}

// Small Hopper wgrad problems for compute-sanitizer (Conv2dSmall.*): one without a split, one split.
inline std::vector<ConvCase> sm90_wgrad_small_cases(std::uint64_t seed) {
  return seeded({conv_case(conv_problem(1, 6, 5, 64, 16, 3, 3, 1), 1), conv_case(conv_problem(2, 5, 6, 64, 72, 3, 3, 1), 3)},
                seed);
}

TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16CasesChosenSplit, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, sm90_wgrad_cases(980, 0))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16CasesNoSplit, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, sm90_wgrad_cases(981, 1))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Fp16CasesSplit5, half_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, sm90_wgrad_cases(982, 5))
// 37 splits (or as many as a case has k-tiles): the split-K pass shares each output vector among up to
// 32 lanes, some of them with one split more than others.
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16CasesSplit37, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, sm90_wgrad_cases(988, 37))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16ResNet50ChosenSplit, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, resnet50_split_cases(983))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16EdgeCases, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, conv_edge_cases(984))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16CasesBiasReluResidualSplit, bfloat16_t, kWgrad, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_wgrad_cases(985, 0))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Wgrad, Bf16CasesBiasReluResidualNoSplit, bfloat16_t, kWgrad, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_wgrad_cases(986, 1))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16WgradSm90, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, sm90_wgrad_small_cases(987))

// Every Hopper tile and schedule on the wgrad cases.
// On an sm_90 device at least one case must run the forced tile (else only the default tile was checked).
#define TILEFUSE_GPU_WGRAD_TILE_TEST(Name, tile, split_k)                                                         \
  TEST(Conv2dSm90WgradTile, Name) {                                                                               \
    ScopedConvOverride const forced(ConvOverride::kTile, tile);                                                   \
    int const took = run_conv_cases<bfloat16_t, ConvMode::kWgrad, conv_specs::Plain, Sm80AutoConfig>(            \
        sm90_wgrad_cases(990, split_k), 4, forced_marker(ConvOverride::kTile, tile));                             \
    if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no case ran the forced tile " << tile;               \
  }
TILEFUSE_GPU_WGRAD_TILE_TEST(Large, "large", 0)
TILEFUSE_GPU_WGRAD_TILE_TEST(Medium, "medium", 0)
TILEFUSE_GPU_WGRAD_TILE_TEST(Narrow, "narrow", 1)
TILEFUSE_GPU_WGRAD_TILE_TEST(PingPongNarrow, "pingpong-narrow", 2)
TILEFUSE_GPU_WGRAD_TILE_TEST(PingPongMedium, "pingpong-medium", 0)
TILEFUSE_GPU_WGRAD_TILE_TEST(Short, "64x64", 0)
TILEFUSE_GPU_WGRAD_TILE_TEST(ShortNoSplit, "64x64", 1)
TILEFUSE_GPU_WGRAD_TILE_TEST(ShortWide, "64x128", 3)
// The 64-row tiles with each split-K reduction forced (the tickets count 16-row slices of 64-row tiles).
TEST(Conv2dSm90WgradTile, ShortTilesEachReduction) {
  for (char const* tile : {"64x64", "64x128"}) {
    for (char const* reduction : {"kernel", "pass"}) {
      SCOPED_TRACE(std::string(tile) + " " + reduction);
      ScopedConvOverride const forced_tile(ConvOverride::kTile, tile);
      ScopedConvOverride const forced_reduction(ConvOverride::kReduction, reduction);
      int const took = run_conv_cases<bfloat16_t, ConvMode::kWgrad, conv_specs::BiasReluResidual, Sm80AutoConfig>(
          sm90_wgrad_cases(996, 0), 4, forced_marker(ConvOverride::kTile, tile));
      if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no case ran the forced tile";
    }
  }
}

// Each way of summing the splits forced on the cases: in the kernel (the default from 12 splits on) and
// by the second pass (deterministic = true's path, the default below 12); the tree applied by the
// last split's warps or by the pass, on a split the model picks and on fixed ones.
// On an sm_90 device at least one case must sum its splits the forced way.
#define TILEFUSE_GPU_WGRAD_REDUCTION_TEST(Name, reduction, Spec, split_k)                                         \
  TEST(Conv2dSm90WgradSplitReduction, Name) {                                                                     \
    ScopedConvOverride const forced(ConvOverride::kReduction, reduction);                                         \
    int const took = run_conv_cases<bfloat16_t, ConvMode::kWgrad, conv_specs::Spec, Sm80AutoConfig>(             \
        sm90_wgrad_cases(993, split_k), 4, forced_marker(ConvOverride::kReduction, reduction));                   \
    if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no case summed its splits by " << reduction;         \
  }
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(KernelChosenSplit, "kernel", Plain, 0)
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(KernelSplit5, "kernel", Plain, 5)
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(KernelBiasReluResidualSplit5, "kernel", BiasReluResidual, 5)
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(PassChosenSplit, "pass", Plain, 0)
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(PassSplit37, "pass", Plain, 37)
TILEFUSE_GPU_WGRAD_REDUCTION_TEST(PassBiasReluResidualSplit5, "pass", BiasReluResidual, 5)

// ---- selection ----

using SelectWgrad = conv::Conv2d<bfloat16_t, ConvMode::kWgrad, conv_specs::Plain::Tree<bfloat16_t>, Sm80AutoConfig>;

// describe() and workspace_size() of a wgrad of the given problem on fresh device buffers.
std::string describe_wgrad(Conv2dProblem p, int split_k, std::size_t* workspace = nullptr, bool deterministic = false) {
  p.mode = ConvMode::kWgrad;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer dy(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  DeviceBuffer dw(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  SelectWgrad::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.dy = dy.as<bfloat16_t const>();
  args.epilogue.set("D", dw.as<bfloat16_t>());
  args.split_k = split_k;
  args.deterministic = deterministic;
  if (workspace != nullptr) *workspace = SelectWgrad::workspace_size(args);
  return SelectWgrad::describe(args);
}

TEST(Conv2dSm90Select, WgradRunsTheHopperKernelWithSplits) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // 256 x 2304 outputs reduced over 12544 pixels: too few tiles for 132 SMs without a split.
  std::size_t workspace = 0;
  std::string const d = describe_wgrad(conv_problem(64, 14, 14, 256, 256, 3, 3, 1), 0, &workspace);
  EXPECT_NE(d.find("sm90 TMA + WGMMA implicit-GEMM conv2d wgrad"), std::string::npos) << d;
  EXPECT_NE(d.find("A MN-major"), std::string::npos) << d;
  EXPECT_NE(d.find("split-K "), std::string::npos) << d;
  EXPECT_NE(d.find("fp32 partials in the workspace, then a reduction pass"), std::string::npos)
      << "fewer than 12 splits: the second pass\n" << d;
  EXPECT_GT(workspace, std::size_t{0}) << "a split needs its fp32 partials\n" << d;
  // 64 x 576 outputs reduced over 200704 pixels: the model splits K more than 12 ways, and the splits add
  // into one fp32 sum (a ticket per 16-row slice of each 128 x 64 block) unless deterministic = true.
  std::size_t sums = 0;
  std::string const many = describe_wgrad(conv_problem(64, 56, 56, 64, 64, 3, 3, 1), 0, &sums);
  EXPECT_NE(many.find("summed in the kernel"), std::string::npos) << many;
  EXPECT_EQ(sums, std::size_t{64 * 576 * 4 + 8 * 9 * 4}) << many;
  std::size_t partials = 0;
  std::string const two_pass = describe_wgrad(conv_problem(64, 56, 56, 64, 64, 3, 3, 1), 0, &partials, true);
  EXPECT_NE(two_pass.find("fp32 partials in the workspace, then a reduction pass"), std::string::npos) << two_pass;
  EXPECT_GE(partials, 12 * std::size_t{64 * 576 * 4}) << two_pass;
  std::size_t none = 1;
  std::string const unsplit = describe_wgrad(conv_problem(64, 14, 14, 256, 256, 3, 3, 1), 1, &none);
  EXPECT_NE(unsplit.find("no split-K"), std::string::npos) << unsplit;
  EXPECT_EQ(none, std::size_t{0}) << unsplit;
  std::string const c40 = describe_wgrad(conv_problem(2, 8, 8, 40, 64, 3, 3, 1), 0);
  EXPECT_NE(c40.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << c40;
  EXPECT_NE(c40.find("C = 40 is not a multiple of 64"), std::string::npos) << c40;
  // x by im2col for a 3x3 filter, by a tiled map for 1x1 with stride 1 and no padding (im2col(x) = x).
  EXPECT_NE(d.find("x by TMA im2col"), std::string::npos) << d;
  std::string const pointwise = describe_wgrad(conv_problem(64, 14, 14, 1024, 512, 1, 1, 0), 0);
  EXPECT_NE(pointwise.find("x by TMA in boxes of 64 channels x 64 pixels"), std::string::npos) << pointwise;
  std::string const strided = describe_wgrad(conv_problem(64, 14, 14, 1024, 512, 1, 1, 0, 2), 0);
  EXPECT_NE(strided.find("x by TMA im2col"), std::string::npos) << strided;
}

}  // namespace
}  // namespace tilefuse::gpu_test
