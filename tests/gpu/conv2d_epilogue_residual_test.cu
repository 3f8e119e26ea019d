// Fused fprop epilogues with a residual: relu(conv + bias + residual), relu(conv + bias) + residual,
// and alpha * conv + beta * residual. All exact on integer data.
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Bf16FpropBiasReluResidualLarge, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80LargeConfig, conv_epilogue_cases(400))
TILEFUSE_GPU_CONV_TEST(Conv2dSmall, Bf16FpropBiasReluResidualLarge, bfloat16_t, kFprop, conv_specs::BiasReluResidual, Sm80LargeConfig, conv_small_cases(402))
TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Fp16FpropResidualAfterReluSmall, half_t, kFprop, conv_specs::ResidualAfterRelu, Sm80SmallConfig, conv_epilogue_cases(403))
TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Bf16FpropAlphaBetaResidualSmall, bfloat16_t, kFprop, conv_specs::AlphaBetaResidual, Sm80SmallConfig, conv_epilogue_cases(404))

}  // namespace
}  // namespace tilefuse::gpu_test
