// Conv2d fprop on the Hopper kernel (conv/kernel/sm90_implicit_gemm.h), reached through the default
// config (Sm80AutoConfig) with split_k = 1: on an sm_90 device every case with C and K multiples of 8
// and aligned operands runs the TMA + WGMMA kernel, its x by TMA im2col where C is a multiple of 64
// (and the geometry fits an im2col tensor map), else by the cp.async gathering producer; the others
// (C = 3, odd channels, misaligned operands) fall back to the sm80 path inside the same lists. The
// *Gather tests rerun lists with the gather source forced (ConvOverrides::sm90_source), so both sources see the same
// problems; the Conv2dSm90FpropTile tests force each tile and schedule (ConvOverrides::sm90_tile). Every
// output element is checked against the host reference (conv2d_harness.hpp). Then the
// selection itself: describe() names the Hopper kernel and its source for an aligned fprop, and the
// sm80 path, with the reason, otherwise.

#include "conv2d_test_cases.hpp"
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::Sm80AutoConfig;

// Problems that reach every Hopper tile (K = 64 -> 128x64, K = 128 -> 128x128, wide K -> 128x256),
// several tiles per persistent block, k tails (r*s*c not a multiple of 64) and padding on every side.
inline std::vector<ConvCase> sm90_tile_cases(std::uint64_t seed) {
  return seeded({conv_case(conv_problem(4, 56, 56, 64, 64, 3, 3, 1)),     // 128x64, 12544 pixels: 98 tiles
                 conv_case(conv_problem(8, 28, 28, 128, 128, 3, 3, 1)),   // 128x128, 49 x 1 tiles, k = 1152
                 conv_case(conv_problem(2, 14, 14, 256, 1024, 1, 1, 0)),  // wide K
                 conv_case(conv_problem(16, 14, 14, 24, 40, 3, 3, 1)),    // k = 216: a partial k-tile; n = 40
                 conv_case(conv_problem(3, 17, 19, 8, 520, 5, 5, 2, 2)),  // k = 200, n = 520 (a partial wide tile)
                 conv_case(conv_problem(64, 7, 7, 512, 512, 3, 3, 1)),    // ResNet-50 layer 10 at full size
                 conv_case(conv_problem(2, 9, 9, 16, 8, 3, 3, 4, 1, 3))}, // dilation 3, padding 4
                seed);
}

// Problems for the im2col source (C a multiple of 64): padding, stride 2 with odd extents, dilation 2,
// asymmetric filters / padding / strides / dilations, taps wholly in the padding, 1 x 1 outputs, N*P*Q
// not a multiple of 128 (tiles crossing images and the last one partial), partial N tiles, all three
// tiles.
inline std::vector<ConvCase> sm90_im2col_cases(std::uint64_t seed) {
  std::vector<ConvCase> cases = {
      conv_case(conv_problem(2, 9, 11, 64, 72, 3, 3, 1)),         // 198 pixels: 2 tiles, the last partial; n = 72
      conv_case(conv_problem(3, 15, 13, 64, 64, 3, 3, 1, 2)),     // stride 2, odd extents (8 x 7 outputs)
      conv_case(conv_problem(2, 15, 15, 128, 96, 1, 1, 0, 2)),    // 1x1 stride 2 (the downsample shortcut)
      conv_case(conv_problem(2, 12, 10, 64, 64, 3, 3, 2, 1, 2)),  // dilation 2, padding 2
      conv_case(conv_problem(1, 19, 17, 128, 40, 5, 5, 3, 2, 2)), // 5x5 dilation 2 stride 2 padding 3
      conv_case(conv_problem(2, 23, 23, 64, 64, 7, 7, 3, 2)),     // 7x7 stride 2 padding 3
      conv_case(conv_problem(1, 4, 4, 64, 8, 3, 3, 3)),           // padding 3: taps wholly in the padding
      conv_case(conv_problem(2, 7, 7, 64, 32, 7, 7, 0)),          // 7x7 on 7x7: 1 x 1 outputs
      conv_case(conv_problem(5, 13, 13, 192, 256, 3, 3, 1)),      // 845 pixels, tiles crossing images, 128x256
      conv_case(conv_problem(4, 20, 20, 64, 64, 3, 3, 1)),        // K = 64: the 128x64 tile
      conv_case(conv_problem(3, 28, 28, 128, 128, 3, 3, 1)),      // K = 128: the 128x128 tile
      conv_case(conv_problem(2, 14, 14, 256, 520, 1, 1, 0)),      // 1x1, n = 520: a partial wide tile
      conv_case(conv_problem(3, 7, 9, 128, 64, 1, 1, 0, 1, 2)),   // 1x1 (dilation 2 changes nothing): tiled TMA, 189 pixels
  };
  // Asymmetric in everything: a 2x3 filter, padding (0, 1), stride (1, 2), dilation (2, 1).
  Conv2dProblem a = conv_problem(2, 5, 17, 64, 24, 2, 3, 0);
  a.pad_w = 1, a.stride_w = 2, a.dilation_h = 2;
  cases.push_back(conv_case(a));
  // And the other way round: a 3x2 filter, padding (2, 0), stride (3, 1), dilation (1, 2).
  Conv2dProblem b = conv_problem(3, 12, 6, 128, 16, 3, 2, 0);
  b.pad_h = 2, b.stride_h = 3, b.dilation_w = 2;
  cases.push_back(conv_case(b));
  return seeded(cases, seed);
}

// A bf16 / fp16 fprop case list run with one planner override set: the gather source forced (ConvOverrides::sm90_source)
// (both sources see the same problems) or the tile forced (ConvOverrides::sm90_tile) (every Hopper tile and
// schedule on the im2col cases: the model reaches the cooperative 128x64 and 128x128 tiles only with
// the gather source, and ping-pong 128x128 only for epilogues that read no memory).
// On an sm_90 device at least one case must say that the override took effect: else the test would check the
// default path only and pass.
#define TILEFUSE_GPU_CONV_ENV_TEST(Suite, Name, T, variable, value, Spec, cases)                                   \
  TEST(Suite, Name) {                                                                                              \
    ScopedConvOverride const forced(variable, value);                                                              \
    int const took = run_conv_cases<T, ConvMode::kFprop, Spec, Sm80AutoConfig>(cases, 4, forced_marker(variable, value)); \
    if (sm90_skip_reason().empty()) EXPECT_GT(took, 0) << "no case ran with the override " << value;            \
  }
#define TILEFUSE_GPU_CONV_GATHER_TEST(Suite, Name, T, Spec, cases) \
  TILEFUSE_GPU_CONV_ENV_TEST(Suite, Name, T, ConvOverride::kSource, "gather", Spec, cases)
#define TILEFUSE_GPU_CONV_TILE_TEST(Name, tile, Spec, cases) \
  TILEFUSE_GPU_CONV_ENV_TEST(Conv2dSm90FpropTile, Name, bfloat16_t, ConvOverride::kTile, tile, Spec, cases)

TILEFUSE_GPU_CONV_TILE_TEST(NarrowCooperative, "narrow", conv_specs::Plain, sm90_im2col_cases(930))
TILEFUSE_GPU_CONV_TILE_TEST(MediumCooperative, "medium", conv_specs::Plain, sm90_im2col_cases(931))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongNarrow, "pingpong-narrow", conv_specs::Plain, sm90_im2col_cases(932))
// Ping-pong 128x64 with trees that read memory (loaded in line by each visit): a residual, and
// per-channel vectors.
TILEFUSE_GPU_CONV_TILE_TEST(NarrowCooperativeBiasReluResidual, "narrow", conv_specs::BiasReluResidual, sm90_im2col_cases(937))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongNarrowBiasReluResidual, "pingpong-narrow", conv_specs::BiasReluResidual,
                            sm90_im2col_cases(934))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongNarrowAlphaBetaResidual, "pingpong-narrow", conv_specs::AlphaBetaResidual,
                            sm90_im2col_cases(935))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongNarrowFoldedBnSilu, "pingpong-narrow", conv_specs::FoldedBnSilu,
                            sm90_im2col_cases(936))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongMediumBiasReluResidual, "pingpong-medium", conv_specs::BiasReluResidual,
                            sm90_im2col_cases(933))
TILEFUSE_GPU_CONV_TILE_TEST(PingPongMediumTileCases, "pingpong-medium", conv_specs::Plain, sm90_tile_cases(934))
// 128x160 (16-bit fprop by im2col, trees without the TMA residual): output channels not multiples of 160
// (K = 64, 96, 256: a part-empty last tile), and per-channel vectors in the epilogue.
TILEFUSE_GPU_CONV_TILE_TEST(WideCooperative, "wide", conv_specs::Plain, sm90_im2col_cases(938))
TILEFUSE_GPU_CONV_TILE_TEST(WideTileCases, "wide", conv_specs::Plain, sm90_tile_cases(939))
TILEFUSE_GPU_CONV_TILE_TEST(WideFoldedBnSilu, "wide", conv_specs::FoldedBnSilu, sm90_im2col_cases(940))
TILEFUSE_GPU_CONV_ENV_TEST(Conv2dSm90FpropTile, WideFp16, half_t, ConvOverride::kTile, "wide", conv_specs::Plain,
                           sm90_im2col_cases(941))
// 64x256 ping-pong (64-row tiles, one per consumer warpgroup): forced on the im2col and tile cases, bf16
// and fp16, plain, with per-channel vectors, and with the residual by TMA (each consumer warpgroup's
// sub-tiles in a ring of its own, two slots wrapped twice per 256-wide tile): bias + residual + ReLU on the
// im2col and tile cases, alpha * acc + beta * residual, and fp16 with the residual after the activation.
TILEFUSE_GPU_CONV_TILE_TEST(ShortLarge, "64x256", conv_specs::Plain, sm90_im2col_cases(941))
TILEFUSE_GPU_CONV_TILE_TEST(ShortLargeTileCases, "64x256", conv_specs::Plain, sm90_tile_cases(942))
TILEFUSE_GPU_CONV_TILE_TEST(ShortLargeFoldedBnSilu, "64x256", conv_specs::FoldedBnSilu, sm90_im2col_cases(943))
TILEFUSE_GPU_CONV_ENV_TEST(Conv2dSm90FpropTile, ShortLargeFp16, half_t, ConvOverride::kTile, "64x256", conv_specs::Plain,
                           sm90_im2col_cases(944))
TILEFUSE_GPU_CONV_TILE_TEST(ShortLargeBiasReluResidual, "64x256", conv_specs::BiasReluResidual, sm90_im2col_cases(945))
TILEFUSE_GPU_CONV_TILE_TEST(ShortLargeTileCasesBiasReluResidual, "64x256", conv_specs::BiasReluResidual,
                            sm90_tile_cases(946))
TILEFUSE_GPU_CONV_TILE_TEST(ShortLargeAlphaBetaResidual, "64x256", conv_specs::AlphaBetaResidual, sm90_im2col_cases(947))
TILEFUSE_GPU_CONV_ENV_TEST(Conv2dSm90FpropTile, ShortLargeFp16ResidualAfterRelu, half_t, ConvOverride::kTile, "64x256",
                           conv_specs::ResidualAfterRelu, sm90_im2col_cases(948))

TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16Im2colCases, bfloat16_t, kFprop, conv_specs::Plain, Sm80AutoConfig, sm90_im2col_cases(920))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Fp16Im2colCases, half_t, kFprop, conv_specs::Plain, Sm80AutoConfig, sm90_im2col_cases(921))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16Im2colCasesBiasReluResidual, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_im2col_cases(922))
TILEFUSE_GPU_CONV_GATHER_TEST(Conv2dSm90FpropGather, Bf16Im2colCases, bfloat16_t, conv_specs::Plain, sm90_im2col_cases(923))
TILEFUSE_GPU_CONV_GATHER_TEST(Conv2dSm90FpropGather, Bf16TileCases, bfloat16_t, conv_specs::Plain, sm90_tile_cases(924))
TILEFUSE_GPU_CONV_GATHER_TEST(Conv2dSm90FpropGather, Bf16ResNet50BiasReluResidual, bfloat16_t, conv_specs::BiasReluResidual, resnet50_cases(2, 925))

TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16EdgeCases, bfloat16_t, kFprop, conv_specs::Plain, Sm80AutoConfig, conv_edge_cases(900))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Fp16EdgeCases, half_t, kFprop, conv_specs::Plain, Sm80AutoConfig, conv_edge_cases(901))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16TileCases, bfloat16_t, kFprop, conv_specs::Plain, Sm80AutoConfig, sm90_tile_cases(902))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16ResNet50BiasReluResidual, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig, resnet50_cases(2, 903))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Fp16ResNet50ResidualAfterRelu, half_t, kFprop, conv_specs::ResidualAfterRelu, Sm80AutoConfig, resnet50_cases(1, 904))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16EpilogueAlphaBetaResidual, bfloat16_t, kFprop, conv_specs::AlphaBetaResidual, Sm80AutoConfig, conv_epilogue_cases(905))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16EpilogueFoldedBnSilu, bfloat16_t, kFprop, conv_specs::FoldedBnSilu, Sm80AutoConfig, conv_epilogue_cases(906))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16EpilogueAuxPreactivation, bfloat16_t, kFprop, conv_specs::AuxPreactivation, Sm80AutoConfig, conv_epilogue_cases(907))
TILEFUSE_GPU_CONV_TEST(Conv2dSm90Fprop, Bf16TileCasesBiasReluResidual, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig, sm90_tile_cases(908))
// The compute-sanitizer subset (Conv2dSmall.*): the Hopper kernel on small problems.
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16FpropSm90, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig, conv_small_cases(909))

// ---- selection ----

template <class Config>
using SelectFprop = conv::Conv2d<bfloat16_t, ConvMode::kFprop, conv_specs::Plain::Tree<bfloat16_t>, Config>;

// describe() of an fprop of the given problem on fresh device buffers.
template <class Config>
std::string describe_fprop(Conv2dProblem p, int split_k = 1) {
  p.mode = ConvMode::kFprop;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer y(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  typename SelectFprop<Config>::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", y.as<bfloat16_t>());
  args.split_k = split_k;
  return SelectFprop<Config>::describe(args);
}

TEST(Conv2dSm90Select, AlignedFpropRunsTheHopperKernel) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::string const d = describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  EXPECT_NE(d.find("sm90 TMA + WGMMA implicit-GEMM conv2d fprop"), std::string::npos) << d;
  EXPECT_NE(d.find("x by TMA im2col"), std::string::npos) << d;
  EXPECT_NE(d.find("tile 128x64x64"), std::string::npos) << "K = 64 fits one 64-wide tile\n" << d;
  EXPECT_NE(d.find("ping-pong"), std::string::npos) << "128x64 tiles run ping-pong with im2col\n" << d;
  std::string const wide = describe_fprop<Sm80AutoConfig>(conv_problem(64, 14, 14, 256, 256, 3, 3, 1));
  EXPECT_NE(wide.find("tile 128x256x64"), std::string::npos) << wide;
  EXPECT_EQ(wide.find("ping-pong"), std::string::npos) << "128x256 stays cooperative\n" << wide;
  // A short-K 1x1 layer whose 392 tiles of 128x256 make 3 per SM: 64x256 ping-pong (v128g).
  std::string const short_k = describe_fprop<Sm80AutoConfig>(conv_problem(64, 14, 14, 256, 1024, 1, 1, 0));
  EXPECT_NE(short_k.find("tile 64x256x64"), std::string::npos) << short_k;
  EXPECT_NE(short_k.find("ping-pong"), std::string::npos) << short_k;
  EXPECT_NE(short_k.find("x by tiled TMA (one box of 64 pixels"), std::string::npos)
      << "1x1, stride 1, no padding: x is its im2col matrix\n" << short_k;
  std::string const few = describe_fprop<Sm80AutoConfig>(conv_problem(64, 7, 7, 512, 512, 3, 3, 1));
  EXPECT_NE(few.find("tile 128x128x64"), std::string::npos) << "50 tiles of 128x256 leave most SMs idle\n" << few;
  EXPECT_NE(few.find("ping-pong"), std::string::npos) << "a plain 128x128 epilogue runs ping-pong\n" << few;
  // The gather source has no ping-pong configs.
  ScopedConvOverride const gather(ConvOverride::kSource, "gather");
  std::string const gathered = describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  EXPECT_NE(gathered.find("tile 128x64x64"), std::string::npos) << gathered;
  EXPECT_EQ(gathered.find("ping-pong"), std::string::npos) << gathered;
}

TEST(Conv2dSm90Select, ForcedTileIsTheOneThatRuns) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ScopedConvOverride const forced(ConvOverride::kTile, "narrow");
  std::string const d = describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  EXPECT_NE(d.find("tile 128x64x64"), std::string::npos) << d;
  EXPECT_EQ(d.find("ping-pong"), std::string::npos) << "forced cooperative 128x64\n" << d;
  EXPECT_NE(d.find("forced (ConvOverrides::sm90_tile)"), std::string::npos) << d;
}

TEST(Conv2dSm90Select, OutputChannelsInWholeTilesOf160TakeThe128x160Tile) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // UNet's C = K = 320 at 64x64 (N = 2: 64 x 2 tiles of 128x160, one per SM; 128x128 needs 192 tiles).
  std::string const d = describe_fprop<Sm80AutoConfig>(conv_problem(2, 64, 64, 320, 320, 3, 3, 1));
  EXPECT_NE(d.find("tile 128x160x64"), std::string::npos) << "N = 320 is two whole 160-wide tiles\n" << d;
  EXPECT_NE(d.find("128x160: 128 tiles"), std::string::npos) << "the wave model weighs it\n" << d;
  // Forced where it does not exist (the gather source), the request is ignored, and said so.
  ScopedConvOverride const forced(ConvOverride::kTile, "wide");
  std::string const gathered = [] {
    ScopedConvOverride const gather(ConvOverride::kSource, "gather");
    return describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  }();
  EXPECT_NE(gathered.find("ConvOverrides::sm90_tile = wide ignored"), std::string::npos) << gathered;
  EXPECT_EQ(gathered.find("tile 128x160"), std::string::npos) << "the gather source has no 128x160 config\n" << gathered;
}

TEST(Conv2dSm90Select, OtherProblemsRunTheSm80PathAndSayWhy) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // C = 3 (a first layer): the gathers need whole 16-byte chunks.
  std::string const c3 = describe_fprop<Sm80AutoConfig>(conv_problem(1, 32, 32, 3, 64, 7, 7, 3, 2));
  EXPECT_NE(c3.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << c3;
  EXPECT_NE(c3.find("Hopper kernel not used"), std::string::npos) << c3;
  EXPECT_NE(c3.find("multiples of 8"), std::string::npos) << c3;
  // An explicit split-K.
  std::string const split = describe_fprop<Sm80AutoConfig>(conv_problem(1, 8, 8, 64, 64, 3, 3, 1), 2);
  EXPECT_NE(split.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << split;
  EXPECT_NE(split.find("split_k = 2"), std::string::npos) << split;
  // An explicit sm80 config forces the sm80 path and mentions no Hopper kernel.
  std::string const forced = describe_fprop<gemm::Sm80LargeConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  EXPECT_NE(forced.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << forced;
  EXPECT_EQ(forced.find("Hopper"), std::string::npos) << forced;
}

// describe() of the fused residual tree (bias + residual + ReLU) on the given problem, fresh device
// buffers, the residual `residual_offset` elements into its buffer (1: off 16 bytes).
std::string describe_fused_fprop(Conv2dProblem p, int residual_offset = 0) {
  using Fused = conv::Conv2d<bfloat16_t, ConvMode::kFprop, conv_specs::BiasReluResidual::Tree<bfloat16_t>, Sm80AutoConfig>;
  p.mode = ConvMode::kFprop;
  std::size_t const outputs = static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K);
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer y(outputs * 2);
  DeviceBuffer residual(outputs * 2 + 16);
  DeviceBuffer bias(static_cast<std::size_t>(p.K) * 2);
  Fused::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", y.as<bfloat16_t>());
  args.epilogue.set("bias", bias.as<bfloat16_t const>());
  args.epilogue.set("residual", residual.as<bfloat16_t const>() + residual_offset);
  EXPECT_TRUE(Fused::can_implement(args).ok()) << Fused::can_implement(args).to_string();
  return Fused::describe(args);
}

// The fused residual tree loads its residual (and bias) by TMA on the cooperative tiles and the 64x256
// ping-pong one; a residual TMA cannot describe (a base off 16 bytes) sends the problem to the sm80 path,
// which says why.
TEST(Conv2dSm90Select, FusedResidualByTmaOrSm80WhenUnaligned) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // The short-K 1x1 layer takes 64x256 ping-pong fused as it does bare.
  Conv2dProblem const p = conv_problem(64, 14, 14, 256, 1024, 1, 1, 0);
  std::string const aligned = describe_fused_fprop(p);
  EXPECT_NE(aligned.find("tile 64x256x64"), std::string::npos) << aligned;
  EXPECT_NE(aligned.find("ping-pong"), std::string::npos) << aligned;
  EXPECT_NE(aligned.find("residual by TMA"), std::string::npos) << aligned;
  // A 3x3 layer keeps the cooperative 128x256 tile, and so does a 1x1 layer of 2 k-tiles, whose fused
  // epilogue is longer than the other warpgroup's mainloop (v130c).
  std::string const wide = describe_fused_fprop(conv_problem(64, 14, 14, 256, 256, 3, 3, 1));
  EXPECT_NE(wide.find("tile 128x256x64"), std::string::npos) << wide;
  EXPECT_NE(wide.find("residual by TMA"), std::string::npos) << wide;
  std::string const two_k_tiles = describe_fused_fprop(conv_problem(64, 28, 28, 128, 512, 1, 1, 0));
  EXPECT_NE(two_k_tiles.find("tile 128x256x64"), std::string::npos) << two_k_tiles;
  EXPECT_NE(describe_fprop<Sm80AutoConfig>(conv_problem(64, 28, 28, 128, 512, 1, 1, 0)).find("tile 64x256x64"),
            std::string::npos)
      << "bare, the same layer runs 64x256";
  std::string const off = describe_fused_fprop(p, 1);
  EXPECT_NE(off.find("sm80 mma.sync implicit-GEMM"), std::string::npos) << off;
  EXPECT_NE(off.find("residual, loaded by TMA, needs a 16-byte-aligned base"), std::string::npos) << off;
}

// ResNet-50's first layer (K = 64: the 128x64 tile) fused keeps the cooperative consumers, whose
// residual comes by TMA (v90: 36% faster than ping-pong there); bare it runs ping-pong.
TEST(Conv2dSm90Select, NarrowFusedTileIsCooperativeWithTheResidualByTma) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  Conv2dProblem const p = conv_problem(64, 56, 56, 64, 64, 1, 1, 0);
  std::string const fused = describe_fused_fprop(p);
  EXPECT_NE(fused.find("tile 128x64x64"), std::string::npos) << fused;
  EXPECT_NE(fused.find("residual by TMA"), std::string::npos) << fused;
  EXPECT_EQ(fused.find("ping-pong"), std::string::npos) << fused;
  std::string const plain = describe_fprop<Sm80AutoConfig>(p);
  EXPECT_NE(plain.find("ping-pong"), std::string::npos) << plain;
}

TEST(Conv2dSm90Select, HopperRunsNeedNoWorkspace) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  Conv2dProblem p = conv_problem(2, 14, 14, 64, 64, 3, 3, 1);
  p.mode = ConvMode::kFprop;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer y(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  SelectFprop<Sm80AutoConfig>::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", y.as<bfloat16_t>());
  args.split_k = 0;  // "choose": the Hopper kernel takes it and does not split
  EXPECT_EQ(SelectFprop<Sm80AutoConfig>::workspace_size(args), 0u);
  EXPECT_NE(SelectFprop<Sm80AutoConfig>::describe(args).find("sm90 TMA"), std::string::npos);
}

TEST(Conv2dSm90Select, TheSourceOfXIsIm2colWhereItAppliesElseTheGather) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  // Every im2col case list problem runs the im2col source (so the correctness tests above test it); the
  // 1x1 problems with stride 1 and no padding load the same boxes by a tiled map.
  for (ConvCase const& c : sm90_im2col_cases(0)) {
    Conv2dProblem const& p = c.problem;
    bool const pointwise = p.R == 1 && p.S == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
    std::string const d = describe_fprop<Sm80AutoConfig>(p);
    EXPECT_NE(d.find(pointwise ? "x by tiled TMA" : "x by TMA im2col"), std::string::npos) << d;
  }
  // C = 32: a multiple of 8, not of 64.
  std::string const c32 = describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 32, 64, 3, 3, 1));
  EXPECT_NE(c32.find("16-byte cp.async gathers"), std::string::npos) << c32;
  EXPECT_NE(c32.find("not a multiple of 64"), std::string::npos) << c32;
  // A dilated filter reaching beyond the im2col corner range (pad - (R - 1) * dilation < -128).
  std::string const far = describe_fprop<Sm80AutoConfig>(conv_problem(1, 160, 160, 64, 64, 3, 3, 0, 1, 70));
  EXPECT_NE(far.find("16-byte cp.async gathers"), std::string::npos) << far;
  EXPECT_NE(far.find("im2col tensor map is refused"), std::string::npos) << far;
  // A stride above TMA's traversal limit of 8.
  std::string const stride9 = describe_fprop<Sm80AutoConfig>(conv_problem(1, 40, 40, 64, 64, 3, 3, 1, 9));
  EXPECT_NE(stride9.find("16-byte cp.async gathers"), std::string::npos) << stride9;
  // The environment forces the gather.
  ScopedConvOverride const gather(ConvOverride::kSource, "gather");
  std::string const forced = describe_fprop<Sm80AutoConfig>(conv_problem(2, 14, 14, 64, 64, 3, 3, 1));
  EXPECT_NE(forced.find("16-byte cp.async gathers"), std::string::npos) << forced;
  EXPECT_NE(forced.find("the gather source forced"), std::string::npos) << forced;
}

}  // namespace
}  // namespace tilefuse::gpu_test
