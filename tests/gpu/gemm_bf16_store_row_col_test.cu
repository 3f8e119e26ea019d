// bf16 GEMM, D = acc, A row-major, B column-major: the shape sweep, strided batches and split-K on both tile
// configs, and the small cases the compute-sanitizer runs. On an sm_90 device the 128x256x64 config loads
// its operands by TMA; RowColLargeCpAsync runs the same tile by cp.async there.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, RowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, 110)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, RowColLargeCpAsync, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD,
                              Sm80LargeCpAsyncConfig, 114)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, RowColSmall, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 111)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreRowCol, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 112)
// The 128x256 config under the sanitizers too (the other small tests run 128x128).
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreRowColLarge, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, 113)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreRowColLargeCpAsync, bfloat16_t, RowMajor, ColumnMajor, specs::StoreD,
                             Sm80LargeCpAsyncConfig, 115)

}  // namespace
}  // namespace tilefuse::gpu_test
