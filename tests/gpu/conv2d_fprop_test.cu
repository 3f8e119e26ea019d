// Conv2d fprop, D = acc: edge cases and ResNet-50's layers, bf16 on the large tile and fp16 on the small
// one; the compute-sanitizer subset (Conv2dSmall) and run()'s refusals, which need these same
// instances (a kernel is compiled once per translation unit that launches it).
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_CONV_TEST(Conv2dFprop, Bf16EdgeCasesLarge, bfloat16_t, kFprop, conv_specs::Plain, Sm80LargeConfig, conv_edge_cases(100))
TILEFUSE_GPU_CONV_TEST(Conv2dFprop, Bf16ResNet50Large, bfloat16_t, kFprop, conv_specs::Plain, Sm80LargeConfig, resnet50_cases(2, 101))
TILEFUSE_GPU_CONV_TEST(Conv2dFprop, Fp16EdgeCasesSmall, half_t, kFprop, conv_specs::Plain, Sm80SmallConfig, conv_edge_cases(102))
TILEFUSE_GPU_CONV_TEST(Conv2dFprop, Fp16ResNet50Small, half_t, kFprop, conv_specs::Plain, Sm80SmallConfig, resnet50_cases(2, 103))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16FpropLarge, bfloat16_t, kFprop, conv_specs::Plain, Sm80LargeConfig, conv_small_cases(104))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Fp16FpropSmall, half_t, kFprop, conv_specs::Plain, Sm80SmallConfig, conv_small_cases(105))

using PlainFprop = conv::Conv2d<bfloat16_t, ConvMode::kFprop, conv_specs::Plain::Tree<bfloat16_t>, Sm80LargeConfig>;

// run() refuses what can_implement refuses (here a mode mismatch) and writes nothing.
TEST(Conv2dCanImplement, RunRefusesWhatCanImplementRefusesAndWritesNothing) {
  Stream stream;
  Conv2dProblem p = conv_problem(1, 8, 8, 16, 16, 3, 3, 1);
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer w(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  DeviceBuffer y(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  y.fill_bytes(kPoisonByte, stream.get());
  PlainFprop::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.problem.mode = ConvMode::kDgrad;
  args.x = x.as<bfloat16_t const>();
  args.w = w.as<bfloat16_t const>();
  args.epilogue.set("D", y.as<bfloat16_t>());
  Status const checked = PlainFprop::can_implement(args);
  ASSERT_FALSE(checked.ok());
  Status const ran = PlainFprop::run(args, nullptr, stream.get());
  EXPECT_FALSE(ran.ok());
  EXPECT_EQ(ran.code(), checked.code()) << ran.to_string();
  stream.synchronize();
  std::vector<std::uint8_t> out(y.bytes());
  y.download(out.data(), stream.get());
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::uint8_t b) { return b == kPoisonByte; }))
      << "a refused run wrote to D";
}

}  // namespace
}  // namespace tilefuse::gpu_test
