// An auxiliary output inside the tree (Store<"aux", ...>) and a column-amax reduction
// (ColReduce<"amax", reduce::AbsMax, ...>, float, initialised by the library: the test poisons it
// with NaN, which AbsMax would propagate). Exact on integer data.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16AuxAmaxRowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::AuxAmax, Sm80LargeConfig, 600)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16AuxAmaxColColSmall, bfloat16_t, ColumnMajor, ColumnMajor, specs::AuxAmax, Sm80SmallConfig, 601)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Bf16AuxAmaxRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::AuxAmax, Sm80LargeConfig, 602)
TILEFUSE_GPU_GEMM_EPILOGUE_TEST(GemmEpilogue, Fp16AuxAmaxColRowLarge, half_t, ColumnMajor, RowMajor, specs::AuxAmax, Sm80LargeConfig, 603)
// The reduction's atomics and the extra store under the sanitizer.
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16AuxAmaxRowRow, bfloat16_t, RowMajor, RowMajor, specs::AuxAmax, Sm80LargeConfig, 604)

}  // namespace
}  // namespace tilefuse::gpu_test
