// Activations that are not exact in float: gelu (tanh form), silu of acc + bias, and the region
// activation row < r0 ? sigmoid : tanh. D is compared with a float64 evaluation of the formula, within
// half an ulp of D's type plus the float evaluation error.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16GeluTanhRowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::GeluTanhD, Sm80LargeConfig, 500)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16GeluTanhColColSmall, bfloat16_t, ColumnMajor, ColumnMajor, specs::GeluTanhD, Sm80SmallConfig, 501)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16SiluBiasRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::SiluBias, Sm80LargeConfig, 502)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16RegionSigmoidTanhColRowLarge, bfloat16_t, ColumnMajor, RowMajor, specs::RegionSigmoidTanh, Sm80LargeConfig, 503)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16RegionSigmoidTanhRowRowSmall, bfloat16_t, RowMajor, RowMajor, specs::RegionSigmoidTanh, Sm80SmallConfig, 504)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16GeluTanhColRowLarge, half_t, ColumnMajor, RowMajor, specs::GeluTanhD, Sm80LargeConfig, 505)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16SiluBiasRowRowSmall, half_t, RowMajor, RowMajor, specs::SiluBias, Sm80SmallConfig, 506)

}  // namespace
}  // namespace tilefuse::gpu_test
