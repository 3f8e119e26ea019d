// Conv2d wgrad, D = dw = acc: edge cases, ResNet-50's layers and parallel split-K (3 splits), bf16 on
// the large tile and fp16 on the small one; the compute-sanitizer subset (Conv2dSmall), and run()'s
// refusal of split-K without a workspace, which needs these same instances.
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Bf16EdgeCasesLarge, bfloat16_t, kWgrad, conv_specs::Plain, Sm80LargeConfig, conv_edge_cases(300))
TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Bf16ResNet50Large, bfloat16_t, kWgrad, conv_specs::Plain, Sm80LargeConfig, resnet50_cases(2, 301))
TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Bf16SplitK3Large, bfloat16_t, kWgrad, conv_specs::Plain, Sm80LargeConfig, wgrad_split_k_cases(302))
TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Fp16EdgeCasesSmall, half_t, kWgrad, conv_specs::Plain, Sm80SmallConfig, conv_edge_cases(303))
TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Fp16ResNet50Small, half_t, kWgrad, conv_specs::Plain, Sm80SmallConfig, resnet50_cases(2, 304))
TILEFUSE_GPU_CONV_TEST(Conv2dWgrad, Fp16SplitK3Small, half_t, kWgrad, conv_specs::Plain, Sm80SmallConfig, wgrad_split_k_cases(305))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16WgradLarge, bfloat16_t, kWgrad, conv_specs::Plain, Sm80LargeConfig, conv_small_cases(306))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16WgradSplitK3Large, bfloat16_t, kWgrad, conv_specs::Plain, Sm80LargeConfig, conv_small_cases(307, 3))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Fp16WgradSmall, half_t, kWgrad, conv_specs::Plain, Sm80SmallConfig, conv_small_cases(308))

using PlainWgrad = conv::Conv2d<bfloat16_t, ConvMode::kWgrad, conv_specs::Plain::Tree<bfloat16_t>, Sm80LargeConfig>;

TEST(Conv2dCanImplement, RunRefusesSplitKWithoutWorkspace) {
  Stream stream;
  Conv2dProblem p = conv_problem(2, 8, 8, 16, 16, 3, 3, 1);
  p.mode = ConvMode::kWgrad;
  DeviceBuffer x(static_cast<std::size_t>(p.N * p.H * p.W * p.C) * 2);
  DeviceBuffer dy(static_cast<std::size_t>(p.N * p.P() * p.Q() * p.K) * 2);
  DeviceBuffer dw(static_cast<std::size_t>(p.K * p.R * p.S * p.C) * 2);
  PlainWgrad::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<bfloat16_t const>();
  args.dy = dy.as<bfloat16_t const>();
  args.epilogue.set("D", dw.as<bfloat16_t>());
  args.split_k = 3;
  ASSERT_TRUE(PlainWgrad::can_implement(args).ok()) << PlainWgrad::can_implement(args).to_string();
  ASSERT_GE(PlainWgrad::workspace_size(args), static_cast<std::size_t>(3 * p.K * p.R * p.S * p.C) * sizeof(float))
      << "parallel split-K keeps one fp32 partial per split and output element";
  Status const ran = PlainWgrad::run(args, nullptr, stream.get());
  EXPECT_FALSE(ran.ok()) << "split-K ran without its workspace";
  EXPECT_NE(ran.message().find("workspace"), std::string::npos) << ran.to_string();
  // A workspace that is not 16-byte aligned (an offset into an allocation) is refused before any launch.
  DeviceBuffer workspace(PlainWgrad::workspace_size(args) + 16);
  Status const offset = PlainWgrad::run(args, static_cast<char*>(workspace.get()) + 4, stream.get());
  EXPECT_FALSE(offset.ok()) << "split-K ran with a misaligned workspace";
  EXPECT_NE(offset.message().find("16-byte-aligned workspace"), std::string::npos) << offset.to_string();
  stream.synchronize();
}

}  // namespace
}  // namespace tilefuse::gpu_test
