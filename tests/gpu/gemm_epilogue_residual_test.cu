// Residual epilogues: relu(acc + bias[col] + C) and alpha * acc + C with a column-major C, exact on
// integer data; fp16 alpha * acc + beta * C. The tn 128x256x64 instances run the TMA-operand kernel on
// an sm_90 device; the sweep adds odd leading dimensions, shared and batched C and split-K there.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualReluRowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::ResidualRelu, Sm80LargeConfig, 400)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualReluRowColSmall, bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80SmallConfig, 401)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualColumnMajorCColColLarge, bfloat16_t, ColumnMajor, ColumnMajor, specs::ResidualColumnMajorC, Sm80LargeConfig, 402)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmEpilogueResidualSweep, Bf16ResidualReluRowColLarge, bfloat16_t, RowMajor, ColumnMajor,
                              specs::ResidualRelu, Sm80LargeConfig, 404)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16ResidualReluRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, 405)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16AlphaBetaCRowColLarge, half_t, RowMajor, ColumnMajor, specs::AlphaBetaC, Sm80LargeConfig, 406)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16ResidualReluRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::ResidualRelu, Sm80LargeConfig, 407)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16AlphaBetaCRowRowSmall, half_t, RowMajor, RowMajor, specs::AlphaBetaC, Sm80SmallConfig, 403)

}  // namespace
}  // namespace tilefuse::gpu_test
