// The default configuration, Sm80AutoConfig (the operation picks the large or the small tile per
// problem) with split_k = 0 (it picks the splits too): the fused fprop of the benchmark on ResNet-50's
// layers and on one full-size layer, and wgrad, where the long GEMM K (N * P * Q) makes split-K likely.
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

using gemm::Sm80AutoConfig;

// A case list with split_k = 0 (the operation chooses).
std::vector<ConvCase> auto_split(std::vector<ConvCase> cases) {
  for (ConvCase& c : cases) c.split_k = 0;
  return cases;
}

TILEFUSE_GPU_CONV_TEST(Conv2dAuto, Bf16FpropBiasReluResidualResNet50, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig,
                       auto_split(resnet50_cases(2, 600)))
// ResNet-50's first bottleneck 1x1 layer at full size (N = 64): 200,704 output pixels, 8e8 multiply-adds.
TILEFUSE_GPU_CONV_TEST(Conv2dAuto, Bf16FpropBiasReluResidualFullSizeLayer, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80AutoConfig,
                       auto_split(seeded({conv_case(conv_problem(64, 56, 56, 64, 64, 1, 1, 0))}, 601)))
TILEFUSE_GPU_CONV_TEST(Conv2dAuto, Bf16WgradEdgeCases, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, auto_split(conv_edge_cases(602)))
TILEFUSE_GPU_CONV_TEST(Conv2dAuto, Bf16WgradResNet50, bfloat16_t, kWgrad, conv_specs::Plain, Sm80AutoConfig, auto_split(resnet50_cases(2, 603)))

}  // namespace
}  // namespace tilefuse::gpu_test
