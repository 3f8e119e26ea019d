// Fused epilogues that are exact on integer data: alpha * acc + beta * C, relu(acc + bias[col]) and
// acc + bias[row], compared bit for bit with the host reference.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16AlphaBetaCRowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::AlphaBetaC, Sm80LargeConfig, 300)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16AlphaBetaCColColSmall, bfloat16_t, ColumnMajor, ColumnMajor, specs::AlphaBetaC, Sm80SmallConfig, 301)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16BiasRowReluRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::BiasRowRelu, Sm80LargeConfig, 302)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16BiasRowReluColRowSmall, bfloat16_t, ColumnMajor, RowMajor, specs::BiasRowRelu, Sm80SmallConfig, 303)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16BiasColColRowLarge, bfloat16_t, ColumnMajor, RowMajor, specs::BiasCol, Sm80LargeConfig, 304)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16BiasColRowRowSmall, bfloat16_t, RowMajor, RowMajor, specs::BiasCol, Sm80SmallConfig, 305)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16BiasRowReluColColLarge, half_t, ColumnMajor, ColumnMajor, specs::BiasRowRelu, Sm80LargeConfig, 306)

}  // namespace
}  // namespace tilefuse::gpu_test
