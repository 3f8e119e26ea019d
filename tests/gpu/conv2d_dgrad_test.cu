// Conv2d dgrad (unit and strided), D = dx = acc: edge cases and ResNet-50's layers, bf16 on the large
// tile and fp16 on the small one; the compute-sanitizer subset (Conv2dSmall).
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_CONV_TEST(Conv2dDgrad, Bf16EdgeCasesLarge, bfloat16_t, kDgrad, conv_specs::Plain, Sm80LargeConfig, conv_edge_cases(200))
TILEFUSE_GPU_CONV_TEST(Conv2dDgrad, Bf16ResNet50Large, bfloat16_t, kDgrad, conv_specs::Plain, Sm80LargeConfig, resnet50_cases(2, 201))
TILEFUSE_GPU_CONV_TEST(Conv2dDgrad, Fp16EdgeCasesSmall, half_t, kDgrad, conv_specs::Plain, Sm80SmallConfig, conv_edge_cases(202))
TILEFUSE_GPU_CONV_TEST(Conv2dDgrad, Fp16ResNet50Small, half_t, kDgrad, conv_specs::Plain, Sm80SmallConfig, resnet50_cases(2, 203))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16DgradLarge, bfloat16_t, kDgrad, conv_specs::Plain, Sm80LargeConfig, conv_small_cases(204))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Fp16DgradSmall, half_t, kDgrad, conv_specs::Plain, Sm80SmallConfig, conv_small_cases(205))

}  // namespace
}  // namespace tilefuse::gpu_test
