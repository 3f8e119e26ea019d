// Residual epilogues: relu(acc + bias[col] + C) and alpha * acc + C with a column-major C, exact on
// integer data; fp16 alpha * acc + beta * C.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualReluRowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::ResidualRelu, Sm80LargeConfig, 400)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualReluRowColSmall, bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80SmallConfig, 401)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualColumnMajorCColColLarge, bfloat16_t, ColumnMajor, ColumnMajor, specs::ResidualColumnMajorC, Sm80LargeConfig, 402)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16AlphaBetaCRowRowSmall, half_t, RowMajor, RowMajor, specs::AlphaBetaC, Sm80SmallConfig, 403)

}  // namespace
}  // namespace tilefuse::gpu_test
