// FP8 Conv2d fprop (e4m3 / e5m2 x and w, bf16 output) on the Hopper kernel, reached through the default
// config: x by TMA im2col where C is a multiple of 128 (the FP8 k-tile), else by the cp.async gathering
// producer (C a multiple of 16); every tile and schedule forced once (ConvOverrides::sm90_tile). Each
// output element is checked against the float64 reference of the same tree (conv2d_harness.hpp): x and
// w hold integers in [-2, 2] (exact in both FP8 types), the per-tensor scales are powers of two, and the
// bound adds 2^-8 of sum |x w| for the tensor cores' FP8 accumulation (it keeps fewer bits than fp32).
// Then the refusals: what the Hopper kernel cannot take has no sm80 fallback in FP8, so can_implement
// says why. Tests skip on devices other than sm_90.
#include <algorithm>
#include <string>
#include <utility>

#include "conv2d_test_cases.hpp"
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::Sm80AutoConfig;

namespace fp8_specs {

using namespace tilefuse::epilogue;

// The per-tensor scales of an FP8 recipe, then what the bf16 tests fuse.
using ScaledAcc = Mul<Mul<Acc, Scalar<"scale_x">>, Scalar<"scale_w">>;
inline constexpr double kScale = 0.5 * 0.25;

// What both specs share: the scales' values, and the bound of the FP8 accumulation (2^-8 of sum |x w|).
struct PerTensorScales {
  static constexpr bool kExact = false;
  static float scalar(std::string_view name, GemmCoord const&) { return name == "scale_x" ? 0.5f : 0.25f; }
  static double accumulation_bound(double abs_acc) { return kScale * abs_acc / 256.0; }
};

struct Scaled : PerTensorScales {
  template <class>
  using Tree = Store<"D", bfloat16_t, ScaledAcc>;
  static constexpr char const* kName = "D = bf16(acc * scale_x * scale_w)";
  static double reference(double acc, Place const&, InputLookup const&, GemmCoord const&) { return acc * kScale; }
};

struct ScaledBiasReluResidual : PerTensorScales {
  template <class>
  using Tree = Store<"D", bfloat16_t,
                     Relu<Add<Add<ScaledAcc, RowBroadcast<"bias", bfloat16_t>>, AuxLoad<"residual", bfloat16_t>>>>;
  static constexpr char const* kName = "D = bf16(relu(acc * scale_x * scale_w + bias[k] + residual))";
  static double reference(double acc, Place const& at, InputLookup const& in, GemmCoord const&) {
    return std::max(0.0, acc * kScale + in("bias", at) + in("residual", at));
  }
};

}  // namespace fp8_specs

// C and K multiples of 16 (the FP8 16-byte chunk). im2col (C % 128 == 0): padding, strides, dilation,
// asymmetric filters, taps wholly in the padding, 1 x 1 outputs, tiles crossing images, partial N tiles;
// im2col with k-tiles of 64 channels (C = 64, 192, 320: 64-byte swizzled rows); the gather (C = 16, 48):
// partial k-tiles (r*s*c not a multiple of 128). Tiles: K = 64 -> 128x64, K = 128 -> 128x128, wide K
// -> 128x256.
inline std::vector<ConvCase> fp8_cases(std::uint64_t seed) {
  std::vector<ConvCase> cases = {
      conv_case(conv_problem(2, 9, 11, 128, 80, 3, 3, 1)),        // 198 pixels: the last tile partial; n = 80
      conv_case(conv_problem(3, 15, 13, 128, 64, 3, 3, 1, 2)),    // stride 2, odd extents
      conv_case(conv_problem(2, 15, 15, 256, 96, 1, 1, 0, 2)),    // 1x1 stride 2
      conv_case(conv_problem(2, 12, 10, 128, 64, 3, 3, 2, 1, 2)), // dilation 2, padding 2
      conv_case(conv_problem(1, 19, 17, 128, 48, 5, 5, 3, 2, 2)), // 5x5 dilation 2 stride 2 padding 3
      conv_case(conv_problem(1, 4, 4, 128, 16, 3, 3, 3)),         // padding 3: taps wholly in the padding
      conv_case(conv_problem(2, 7, 7, 128, 32, 7, 7, 0)),         // 7x7 on 7x7: 1 x 1 outputs
      conv_case(conv_problem(3, 28, 28, 128, 128, 3, 3, 1)),      // K = 128: the 128x128 tile
      conv_case(conv_problem(2, 14, 14, 256, 528, 1, 1, 0)),      // 1x1, n = 528: a partial wide tile
      conv_case(conv_problem(8, 7, 7, 512, 512, 3, 3, 1)),        // ResNet-50 layer 10's shape, k = 4608
      conv_case(conv_problem(5, 13, 13, 192, 256, 3, 3, 1)),      // 64-channel k-tiles (C = 192), 128x256
      conv_case(conv_problem(4, 20, 20, 64, 64, 3, 3, 1)),        // 64-channel k-tiles, K = 64: the 128x64 tile
      conv_case(conv_problem(2, 16, 16, 320, 320, 3, 3, 1)),      // 64-channel k-tiles, UNet's C = 320
      conv_case(conv_problem(3, 11, 9, 64, 48, 3, 3, 1, 2)),      // 64-channel k-tiles, stride 2, odd extents
      conv_case(conv_problem(2, 9, 9, 16, 16, 3, 3, 1)),          // gather, k = 144: one full k-tile + 16
      conv_case(conv_problem(16, 14, 14, 48, 32, 3, 3, 1)),       // gather, k = 432: a partial k-tile
  };
  Conv2dProblem a = conv_problem(2, 5, 17, 128, 32, 2, 3, 0);  // 2x3, padding (0, 1), stride (1, 2), dilation (2, 1)
  a.pad_w = 1, a.stride_w = 2, a.dilation_h = 2;
  cases.push_back(conv_case(a));
  Conv2dProblem b = conv_problem(3, 12, 6, 128, 16, 3, 2, 0);  // 3x2, padding (2, 0), stride (3, 1), dilation (1, 2)
  b.pad_h = 2, b.stride_h = 3, b.dilation_w = 2;
  cases.push_back(conv_case(b));
  return seeded(cases, seed);
}

template <class T, class Spec>
void run_fp8_cases(std::vector<ConvCase> const& cases) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_conv_cases<T, ConvMode::kFprop, Spec, Sm80AutoConfig>(cases);
}

TEST(Conv2dSm90Fp8, E4m3Scaled) { run_fp8_cases<float_e4m3_t, fp8_specs::Scaled>(fp8_cases(960)); }
TEST(Conv2dSm90Fp8, E4m3ScaledBiasReluResidual) {
  run_fp8_cases<float_e4m3_t, fp8_specs::ScaledBiasReluResidual>(fp8_cases(961));
}
TEST(Conv2dSm90Fp8, E5m2Scaled) { run_fp8_cases<float_e5m2_t, fp8_specs::Scaled>(fp8_cases(962)); }
TEST(Conv2dSm90Fp8, E4m3ResNet50BiasReluResidual) {
  // ResNet-50's layers at N = 2 whose C and K are multiples of 16 (all but conv1's C = 3).
  std::vector<ConvCase> cases;
  for (ConvCase const& c : resnet50_cases(2, 963)) {
    if (c.problem.C % 16 == 0) cases.push_back(c);
  }
  run_fp8_cases<float_e4m3_t, fp8_specs::ScaledBiasReluResidual>(cases);
}

// Every Hopper tile and schedule, and the gather source on the im2col problems.
// At least one case must say that the override took effect (else only the default path was checked).
template <class Spec>
void run_fp8_forced(ConvOverride variable, char const* value, std::uint64_t seed) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  ScopedConvOverride const forced(variable, value);
  int const took = run_conv_cases<float_e4m3_t, ConvMode::kFprop, Spec, Sm80AutoConfig>(fp8_cases(seed), 4,
                                                                                         forced_marker(variable, value));
  EXPECT_GT(took, 0) << "no case ran with the override " << value;
}
TEST(Conv2dSm90Fp8Tile, Large) { run_fp8_forced<fp8_specs::Scaled>(ConvOverride::kTile, "large", 970); }
TEST(Conv2dSm90Fp8Tile, Medium) { run_fp8_forced<fp8_specs::Scaled>(ConvOverride::kTile, "medium", 971); }
TEST(Conv2dSm90Fp8Tile, Narrow) { run_fp8_forced<fp8_specs::Scaled>(ConvOverride::kTile, "narrow", 972); }
TEST(Conv2dSm90Fp8Tile, PingPongNarrowBiasReluResidual) {
  run_fp8_forced<fp8_specs::ScaledBiasReluResidual>(ConvOverride::kTile, "pingpong-narrow", 973);
}
TEST(Conv2dSm90Fp8Tile, PingPongMedium) {
  run_fp8_forced<fp8_specs::Scaled>(ConvOverride::kTile, "pingpong-medium", 974);
}
TEST(Conv2dSm90Fp8Tile, GatherBiasReluResidual) {
  run_fp8_forced<fp8_specs::ScaledBiasReluResidual>(ConvOverride::kSource, "gather", 975);
}
// The compute-sanitizer subset (Conv2dSmall.*).
TEST(Conv2dSmall, E4m3FpropSm90) {
  run_fp8_cases<float_e4m3_t, fp8_specs::ScaledBiasReluResidual>(
      seeded({conv_case(conv_problem(1, 5, 6, 128, 16, 3, 3, 1, 2)), conv_case(conv_problem(2, 6, 5, 16, 32, 3, 3, 1))},
             976));
}

// ---- what FP8 refuses ----

using Fp8Op = conv::Conv2d<float_e4m3_t, ConvMode::kFprop, fp8_specs::Scaled::Tree<void>>;

// can_implement of an FP8 fprop on fresh device buffers (x and w `offset` bytes past their base).
Status fp8_can_implement(Conv2dProblem p, int split_k = 1, std::size_t offset = 0, std::string* describe = nullptr) {
  p.mode = ConvMode::kFprop;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) + 16);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) + 16);
  DeviceBuffer y(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  Fp8Op::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = reinterpret_cast<float_e4m3_t const*>(x.as<std::uint8_t>() + offset);
  args.w = reinterpret_cast<float_e4m3_t const*>(w.as<std::uint8_t>() + offset);
  args.epilogue.set("D", y.as<bfloat16_t>());
  args.epilogue.set("scale_x", 1.0f);
  args.epilogue.set("scale_w", 1.0f);
  args.split_k = split_k;
  if (describe != nullptr) *describe = Fp8Op::describe(args);
  return Fp8Op::can_implement(args);
}

TEST(Conv2dSm90Fp8Select, RefusesWhatTheHopperKernelCannotTake) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::string path;
  ASSERT_TRUE(fp8_can_implement(conv_problem(2, 14, 14, 256, 512, 3, 3, 1), 1, 0, &path).ok());
  EXPECT_NE(path.find("x by TMA im2col (one copy of 128 pixels x 128 channels"), std::string::npos) << path;
  EXPECT_NE(path.find("e4m3 operands"), std::string::npos) << path;
  ASSERT_TRUE(fp8_can_implement(conv_problem(2, 14, 14, 64, 64, 3, 3, 1), 1, 0, &path).ok());
  EXPECT_NE(path.find("one copy of 128 pixels x 64 channels"), std::string::npos) << path;
  EXPECT_NE(path.find("64-byte swizzled rows"), std::string::npos) << path;
  ASSERT_TRUE(fp8_can_implement(conv_problem(2, 14, 14, 48, 64, 3, 3, 1), 1, 0, &path).ok());
  EXPECT_NE(path.find("C = 48 is not a multiple of 128 or of 64"), std::string::npos) << path;
  EXPECT_NE(path.find("16-byte cp.async gathers"), std::string::npos) << path;

  for (auto const& [status, why] :
       {std::pair{fp8_can_implement(conv_problem(2, 14, 14, 24, 64, 3, 3, 1)), "are not both multiples of 16"},
        std::pair{fp8_can_implement(conv_problem(2, 14, 14, 64, 40, 3, 3, 1)), "are not both multiples of 16"},
        std::pair{fp8_can_implement(conv_problem(2, 14, 14, 64, 64, 3, 3, 1), 1, 8), "is not 16-byte aligned"},
        std::pair{fp8_can_implement(conv_problem(2, 14, 14, 64, 64, 3, 3, 1), 2), "split_k = 2"}}) {
    EXPECT_EQ(status.code(), StatusCode::kNotSupported) << status.to_string();
    EXPECT_NE(status.message().find("run on the Hopper kernel only"), std::string::npos) << status.to_string();
    EXPECT_NE(status.message().find(why), std::string::npos) << status.to_string();
  }
}

}  // namespace
}  // namespace tilefuse::gpu_test
