// gemm::GemmSm90 with the packed epilogue's staged AuxLoad (Config::kPackedLoads, opt-in until measured:
// gemm_sm90.md v64): trees that read a 16-bit residual C, with a bias and scalars loaded per pair, on
// the epilogue case list (shapes that are not tile multiples, odd leading dimensions that take the
// element-wise copies of the staged input) and on persistent blocks (a warp's slices reused across tiles).
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

static_assert(gemm::sm90::GemmKernel<bfloat16_t, specs::ResidualRelu::Tree<bfloat16_t>, Sm90LargePackedLoadsConfig>::kPackedLoads,
              "the opt-in config takes the staged AuxLoad");
static_assert(!gemm::sm90::GemmKernel<bfloat16_t, specs::ResidualRelu::Tree<bfloat16_t>, Sm90LargeConfig>::kPackedLoads,
              "the default config does not");

TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PackedLoads, Bf16ResidualReluLarge, bfloat16_t, specs::ResidualRelu, Sm90LargePackedLoadsConfig, epilogue_cases(1200))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PackedLoads, Fp16ResidualReluMedium, half_t, specs::ResidualRelu, Sm90MediumPackedLoadsConfig, epilogue_cases(1201))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PackedLoads, Bf16AlphaBetaCLarge, bfloat16_t, specs::AlphaBetaC, Sm90LargePackedLoadsConfig, epilogue_cases(1202))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PackedLoads, Bf16ResidualReluPersistent, bfloat16_t, specs::ResidualRelu, Sm90MediumPackedLoadsConfig, persistent_cases(1203))

}  // namespace
}  // namespace tilefuse::gpu_test
