// Fused epilogues without a residual, and fused epilogues of the backward modes: folded batch-norm
// (per-channel scale and shift) + SiLU against a float64 formula, an auxiliary output (the
// pre-activation), and alpha * acc + beta * residual on dgrad and on wgrad with split-K (gradient
// accumulation into an existing dw).
#include "conv2d_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Fp16FpropFoldedBnSiluLarge, half_t, kFprop, conv_specs::FoldedBnSilu, Sm80LargeConfig, conv_epilogue_cases(500))
TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Bf16FpropAuxPreactivationLarge, bfloat16_t, kFprop, conv_specs::AuxPreactivation, Sm80LargeConfig, conv_epilogue_cases(501))
TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Fp16DgradAlphaBetaResidualSmall, half_t, kDgrad, conv_specs::AlphaBetaResidual, Sm80SmallConfig, conv_epilogue_cases(502))
TILEFUSE_GPU_CONV_TEST(Conv2dEpilogue, Bf16WgradAlphaBetaResidualSplitK3Large, bfloat16_t, kWgrad, conv_specs::AlphaBetaResidual, Sm80LargeConfig,
                       wgrad_split_k_cases(503))

}  // namespace
}  // namespace tilefuse::gpu_test
