// Conv2d dgrad on the Hopper kernel (conv/kernel/sm90_implicit_gemm.h, DgradIm2colOperands), reached
// through the default config (Sm80AutoConfig) with split_k = 1: on an sm_90 device every bf16 / fp16
// case with both strides 1, K (dy's channels) a multiple of 64, C a multiple of 8 and aligned operands
// runs the TMA + WGMMA kernel (dy by TMA im2col over the flipped filter, w read MN-major); a bare strided
// dgrad runs by phases (one stride-1 Hopper fprop of dy per phase of dx, stored in place through its row map:
// conv2d_dgrad_by_phases.hpp); the others (K = 40, C = 3, misaligned operands, strided with an epilogue) fall
// back to the sm80 path inside the same lists.
// Every output element is checked against the host reference (conv2d_harness.hpp); the
// Conv2dSm90DgradTile tests force each tile and schedule (ConvOverrides::sm90_tile). Then the
// selection: describe() names the Hopper dgrad for such problems and the sm80 path, with why, otherwise.

#include "conv2d_test_cases.hpp"
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::Sm80AutoConfig;

// Stride-1 problems for the Hopper dgrad: padding larger and smaller than the filter's reach (pad' =
// (filter - 1) * dilation - pad from -1 to 6), dilation, asymmetric filters / padding / dilations,
// 1 x 1 outputs of the forward conv (dy is 1 x 1), C not a multiple of 64 (partial 64-channel boxes of
// w) and partial wide tiles, dx pixels not a multiple of 128 (tiles crossing images), all three tiles;
// and two problems the Hopper dgrad does not take (stride 2, K = 40), which run the sm80 path.
inline std::vector<ConvCase> sm90_dgrad_cases(std::uint64_t seed) {
  std::vector<ConvCase> cases = {
      conv_case(conv_problem(2, 9, 11, 72, 64, 3, 3, 1)),         // 198 pixels: 2 tiles, the last partial; C = 72
      conv_case(conv_problem(2, 12, 10, 64, 64, 3, 3, 2, 1, 2)),  // dilation 2, padding 2
      conv_case(conv_problem(1, 19, 17, 40, 128, 5, 5, 3, 1, 2)), // 5x5 dilation 2 padding 3: C = 40
      conv_case(conv_problem(1, 4, 4, 8, 64, 3, 3, 3)),           // padding 3 > reach 2: pad' = -1
      conv_case(conv_problem(2, 7, 7, 32, 64, 7, 7, 0)),          // 7x7 on 7x7: dy is 1 x 1, pad' = 6
      conv_case(conv_problem(5, 13, 13, 256, 192, 3, 3, 1)),      // 845 pixels, tiles crossing images, 128x256
      conv_case(conv_problem(4, 20, 20, 64, 64, 3, 3, 1)),        // C = 64: the 128x64 tile
      conv_case(conv_problem(3, 28, 28, 128, 128, 3, 3, 1)),      // C = 128: the 128x128 tile
      conv_case(conv_problem(2, 14, 14, 520, 256, 1, 1, 0)),      // 1x1, C = 520: a partial wide tile
      conv_case(conv_problem(3, 7, 9, 128, 64, 1, 1, 0, 1, 2)),   // 1x1 (dilation 2 changes nothing): tiled TMA, 189 pixels
      conv_case(conv_problem(2, 14, 14, 256, 1024, 1, 1, 0)),     // 1x1, long K = 1024
      conv_case(conv_problem(3, 15, 13, 64, 64, 3, 3, 1, 2)),     // stride 2: by phases (bare), else sm80
      conv_case(conv_problem(2, 14, 14, 64, 128, 1, 1, 0, 2)),    // 1x1 stride 2: one phase, three zero
      conv_case(conv_problem(2, 17, 15, 72, 64, 3, 3, 1, 2)),     // odd dx, C = 72: phases of unequal extents
      conv_case(conv_problem(1, 20, 18, 64, 64, 7, 7, 3, 2)),     // 7x7 stride 2 (a stem with C = 64)
      conv_case(conv_problem(2, 16, 16, 64, 128, 3, 3, 1, 3)),    // stride 3: nine phases of one tap
      conv_case(conv_problem(2, 9, 9, 64, 64, 3, 3, 0, 4)),       // stride 4 > filter: phases no tap reaches
      conv_case(conv_problem(2, 8, 8, 64, 40, 3, 3, 1)),          // K = 40: the sm80 path
  };
  // Asymmetric: a 2x3 filter, padding (0, 1), dilation (2, 1).
  Conv2dProblem a = conv_problem(2, 5, 17, 24, 64, 2, 3, 0);
  a.pad_w = 1, a.dilation_h = 2;
  cases.push_back(conv_case(a));
  // A 3x2 filter, padding (2, 0), dilation (1, 2).
  Conv2dProblem b = conv_problem(3, 12, 6, 16, 128, 3, 2, 0);
  b.pad_h = 2, b.dilation_w = 2;
  cases.push_back(conv_case(b));
  // Strides (2, 1) with padding (1, 0): two phases.
  Conv2dProblem s = conv_problem(2, 11, 9, 64, 64, 3, 3, 1, 2);
  s.stride_w = 1, s.pad_w = 0;
  cases.push_back(conv_case(s));
  return seeded(cases, seed);
}

// Small Hopper dgrad problems for compute-sanitizer (Conv2dSmall.*).
inline std::vector<ConvCase> sm90_dgrad_small_cases(std::uint64_t seed) {
  return seeded({conv_case(conv_problem(1, 6, 5, 16, 64, 3, 3, 1)), conv_case(conv_problem(2, 5, 6, 72, 64, 3, 3, 1))},
                seed);
}

TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Bf16Cases, bfloat16_t, kDgrad, conv_specs::Plain, Sm80AutoConfig, sm90_dgrad_cases(960))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Fp16Cases, half_t, kDgrad, conv_specs::Plain, Sm80AutoConfig, sm90_dgrad_cases(961))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Bf16ResNet50, bfloat16_t, kDgrad, conv_specs::Plain, Sm80AutoConfig, resnet50_cases(2, 962))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Bf16EdgeCases, bfloat16_t, kDgrad, conv_specs::Plain, Sm80AutoConfig, conv_edge_cases(963))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Bf16CasesBiasReluResidual, bfloat16_t, kDgrad, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_dgrad_cases(964))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Dgrad, Bf16EpilogueFoldedBnSilu, bfloat16_t, kDgrad, conv_specs::FoldedBnSilu, Sm80AutoConfig, sm90_dgrad_cases(965))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16DgradSm90, bfloat16_t, kDgrad, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_dgrad_small_cases(966))
// Strided, bare: by phases (one with a zero phase), under compute-sanitizer too.
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16DgradByPhases, bfloat16_t, kDgrad, conv_specs::Plain, Sm80AutoConfig,
                       seeded({conv_case(conv_problem(1, 7, 6, 64, 64, 3, 3, 1, 2)),
                               conv_case(conv_problem(1, 6, 6, 64, 64, 1, 1, 0, 2))}, 967))

// Every Hopper tile and schedule on the dgrad cases.
// On an sm_90 device at least one case must run the forced tile (else only the default tile was checked).
#define TILEFUSE_GPU_DGRAD_TILE_TEST(Name, tile, Spec, cases)                                                       \
  TEST(Conv2dSm90DgradTile, Name) {                                                                                 \
    ScopedConvOverride const forced(ConvOverride::kTile, tile);                                                     \
    int const took = run_conv_cases<bfloat16_t, ConvMode::kDgrad, Spec, Sm80AutoConfig>(                           \
        cases, 4, forced_marker(ConvOverride::kTile, tile));                                                        \
    if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no case ran the forced tile " << tile;                 \
  }
TILEFUSE_GPU_DGRAD_TILE_TEST(Large, "large", conv_specs::Plain, sm90_dgrad_cases(970))
TILEFUSE_GPU_DGRAD_TILE_TEST(Medium, "medium", conv_specs::Plain, sm90_dgrad_cases(971))
TILEFUSE_GPU_DGRAD_TILE_TEST(Narrow, "narrow", conv_specs::Plain, sm90_dgrad_cases(972))
TILEFUSE_GPU_DGRAD_TILE_TEST(PingPongNarrow, "pingpong-narrow", conv_specs::Plain, sm90_dgrad_cases(973))
TILEFUSE_GPU_DGRAD_TILE_TEST(PingPongMedium, "pingpong-medium", conv_specs::Plain, sm90_dgrad_cases(974))
TILEFUSE_GPU_DGRAD_TILE_TEST(LargeBiasReluResidual, "large", conv_specs::BiasReluResidual, sm90_dgrad_cases(975))

// The 128x160 tile has no row map: forced on strided dgrads, every phase goes through the workspace and the
// copy into dx (conv2d_dgrad_by_phases.hpp's scatter), which must give the same exact dx.
TEST(Conv2dSm90DgradTile, WideStridedPhasesCopiedIntoDx) {
  ScopedConvOverride const forced(ConvOverride::kTile, "wide");
  std::vector<ConvCase> const cases = seeded({conv_case(conv_problem(2, 15, 13, 160, 128, 3, 3, 1, 2)),
                                              conv_case(conv_problem(2, 14, 14, 160, 64, 1, 1, 0, 2))}, 976);
  int const took =
      run_conv_cases<bfloat16_t, ConvMode::kDgrad, conv_specs::Plain, Sm80AutoConfig>(cases, 4, "copied into dx");
  if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no strided case went through the workspace";
}

// ---- selection ----

using SelectDgrad = conv::Conv2d<bfloat16_t, ConvMode::kDgrad, conv_specs::Plain::Tree<bfloat16_t>, Sm80AutoConfig>;

// describe() of a dgrad of the given problem on fresh device buffers.
std::string describe_dgrad(Conv2dProblem p) {
  p.mode = ConvMode::kDgrad;
  DeviceBuffer dy(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer dx(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  SelectDgrad::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.dy = dy.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", dx.as<bfloat16_t>());
  return SelectDgrad::describe(args);
}

TEST(Conv2dSm90Select, StrideOneDgradRunsTheHopperKernel) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::string const d = describe_dgrad(conv_problem(64, 14, 14, 256, 256, 3, 3, 1));
  EXPECT_NE(d.find("sm90 TMA + WGMMA implicit-GEMM conv2d dgrad"), std::string::npos) << d;
  EXPECT_NE(d.find("dy by TMA im2col"), std::string::npos) << d;
  EXPECT_NE(d.find("MN-major"), std::string::npos) << d;
  std::string const pointwise = describe_dgrad(conv_problem(64, 14, 14, 1024, 256, 1, 1, 0));
  EXPECT_NE(pointwise.find("dy by tiled TMA"), std::string::npos) << "1x1, stride 1, no padding: dy is its im2col matrix\n" << pointwise;
  std::string const strided = describe_dgrad(conv_problem(2, 15, 15, 64, 64, 3, 3, 1, 2));
  EXPECT_NE(strided.find("conv2d dgrad by phases (strides 2x2"), std::string::npos) << strided;
  EXPECT_NE(strided.find("; phase 1,1: sm90 TMA + WGMMA implicit-GEMM conv2d fprop"), std::string::npos) << strided;
  EXPECT_EQ(strided.find("copied into dx"), std::string::npos) << "every phase stores in place\n" << strided;
  std::string const pointwise_strided = describe_dgrad(conv_problem(64, 56, 56, 256, 512, 1, 1, 0, 2));
  EXPECT_NE(pointwise_strided.find("the others zero"), std::string::npos) << pointwise_strided;
  EXPECT_EQ(pointwise_strided.find("phase 1,"), std::string::npos) << "one phase has taps\n" << pointwise_strided;
  Conv2dProblem dilated = conv_problem(2, 15, 15, 64, 64, 3, 3, 2, 2, 2);
  std::string const by_sm80 = describe_dgrad(dilated);
  EXPECT_NE(by_sm80.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << by_sm80;
  EXPECT_NE(by_sm80.find("the strides are 2x2"), std::string::npos) << by_sm80;
  std::string const k40 = describe_dgrad(conv_problem(2, 8, 8, 64, 40, 3, 3, 1));
  EXPECT_NE(k40.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << k40;
  EXPECT_NE(k40.find("K = 40 is not a multiple of 64"), std::string::npos) << k40;
}

// A row map on an fprop whose kernel cannot store through one is refused, not ignored.
TEST(Conv2dSm90Select, OutputRowsNeedTheHopperPackedEpilogue) {
  using Fprop = conv::Conv2d<bfloat16_t, ConvMode::kFprop, conv_specs::Plain::Tree<bfloat16_t>, Sm80AutoConfig>;
  Conv2dProblem p = conv_problem(2, 8, 8, 64, 64, 3, 3, 1);
  p.mode = ConvMode::kFprop;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer y(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  Fprop::Arguments args;
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", y.as<bfloat16_t>());
  args.output_rows.pixels_q = p.Q();
  args.output_rows.pixels_p = p.P();
  args.overrides.family = conv::ConvFamily::kSm80;
  Status const refused = Fprop::can_implement(args);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("output_rows"), std::string::npos) << refused.message();
}

}  // namespace
}  // namespace tilefuse::gpu_test
