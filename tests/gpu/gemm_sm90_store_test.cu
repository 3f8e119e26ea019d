// gemm::GemmSm90 (Hopper TMA + WGMMA), D = acc, A row-major x B column-major, bf16 and fp16, both tile
// configs: the sm80 shape sweep and strided batches (each case also with A and B padded for TMA),
// problems with more tiles than SMs (every persistent block walks several tiles, so the pipeline's
// phases carry across tiles), K tails, and the split-K list (refused, then run with split_k = 1).
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16LargeShapes, bfloat16_t, specs::StoreD, Sm90LargeConfig, shape_sweep_cases(700))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16LargeStrides, bfloat16_t, specs::StoreD, Sm90LargeConfig, stride_cases(701))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16LargeSplitKList, bfloat16_t, specs::StoreD, Sm90LargeConfig, split_k_cases(702))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16LargePersistent, bfloat16_t, specs::StoreD, Sm90LargeConfig, persistent_cases(703))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16MediumShapes, bfloat16_t, specs::StoreD, Sm90MediumConfig, shape_sweep_cases(704))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16MediumStrides, bfloat16_t, specs::StoreD, Sm90MediumConfig, stride_cases(705))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16MediumPersistent, bfloat16_t, specs::StoreD, Sm90MediumConfig, persistent_cases(706))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Fp16LargeShapes, half_t, specs::StoreD, Sm90LargeConfig, shape_sweep_cases(707))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Fp16LargePersistent, half_t, specs::StoreD, Sm90LargeConfig, persistent_cases(708))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Fp16MediumStrides, half_t, specs::StoreD, Sm90MediumConfig, stride_cases(709))
// The 128x96 and 128x160 tiles (the planner's for outputs of a few thousand rows; 16-bit only): n edges
// inside a 96- / 160-wide tile, K tails, several tiles per persistent block.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16MidShapes, bfloat16_t, specs::StoreD, gemm::Sm90MidConfig, shape_sweep_cases(712))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16MidPersistent, bfloat16_t, specs::StoreD, gemm::Sm90MidConfig, persistent_cases(713))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Fp16MidStrides, half_t, specs::StoreD, gemm::Sm90MidConfig, stride_cases(714))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16WideShapes, bfloat16_t, specs::StoreD, gemm::Sm90WideConfig, shape_sweep_cases(715))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Bf16WidePersistent, bfloat16_t, specs::StoreD, gemm::Sm90WideConfig, persistent_cases(716))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Store, Fp16WideStrides, half_t, specs::StoreD, gemm::Sm90WideConfig, stride_cases(717))

// The compute-sanitizer subset.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Bf16StoreLarge, bfloat16_t, specs::StoreD, Sm90LargeConfig, small_cases(710))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Fp16StoreMedium, half_t, specs::StoreD, Sm90MediumConfig, small_cases(711))

}  // namespace
}  // namespace tilefuse::gpu_test
