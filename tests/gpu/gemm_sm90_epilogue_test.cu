// gemm::GemmSm90 with fused epilogue trees (the sm80 kernel's epilogue case list, each case also with
// A and B padded for TMA): plain store, relu(acc + bias + C), the region activation
// row < r0 ? sigmoid : tanh (coordinates), col < 37 ? relu(acc) : acc + row (coordinates and constants:
// the packed epilogue), an auxiliary output with a column amax (atomics, library-initialised
// reduction), alpha * acc + beta * C, a per-row bias, gelu-tanh.
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16StoreLarge, bfloat16_t, specs::StoreD, Sm90LargeConfig, epilogue_cases(800))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16ResidualReluLarge, bfloat16_t, specs::ResidualRelu, Sm90LargeConfig, epilogue_cases(801))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16ResidualReluMedium, bfloat16_t, specs::ResidualRelu, Sm90MediumConfig, epilogue_cases(802))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Fp16ResidualReluLarge, half_t, specs::ResidualRelu, Sm90LargeConfig, epilogue_cases(803))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16RegionSigmoidTanhLarge, bfloat16_t, specs::RegionSigmoidTanh, Sm90LargeConfig, epilogue_cases(804))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Fp16RegionSigmoidTanhMedium, half_t, specs::RegionSigmoidTanh, Sm90MediumConfig, epilogue_cases(805))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16CoordinateReluLarge, bfloat16_t, specs::CoordinateRelu, Sm90LargeConfig, epilogue_cases(812))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Fp16CoordinateReluMedium, half_t, specs::CoordinateRelu, Sm90MediumConfig, epilogue_cases(813))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16AuxAmaxLarge, bfloat16_t, specs::AuxAmax, Sm90LargeConfig, epilogue_cases(806))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Fp16AuxAmaxMedium, half_t, specs::AuxAmax, Sm90MediumConfig, epilogue_cases(807))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16AlphaBetaCLarge, bfloat16_t, specs::AlphaBetaC, Sm90LargeConfig, epilogue_cases(808))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16BiasColMedium, bfloat16_t, specs::BiasCol, Sm90MediumConfig, epilogue_cases(809))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16GeluTanhLarge, bfloat16_t, specs::GeluTanhD, Sm90LargeConfig, epilogue_cases(810))
// Trees whose only per-element loads are vectors take the packed epilogue (row values once per tile,
// column values once per 8-column group).
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16BiasRowReluLarge, bfloat16_t, specs::BiasRowRelu, Sm90LargeConfig, epilogue_cases(814))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Fp16SiluBiasMedium, half_t, specs::SiluBias, Sm90MediumConfig, epilogue_cases(815))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16BiasColLarge, bfloat16_t, specs::BiasCol, Sm90LargeConfig, epilogue_cases(816))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Epilogue, Bf16RowScaleColumnBiasLarge, bfloat16_t, specs::RowScaleColumnBias, Sm90LargeConfig, epilogue_cases(817))

// The reduction's atomics and the extra store under the sanitizer.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Bf16AuxAmaxLarge, bfloat16_t, specs::AuxAmax, Sm90LargeConfig, small_cases(811))

}  // namespace
}  // namespace tilefuse::gpu_test
