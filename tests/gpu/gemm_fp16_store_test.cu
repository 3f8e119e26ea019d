// fp16 GEMM, D = acc: all four layouts on the small-tile config and row-major x row-major on the large
// one, over the shape sweep, strided batches and split-K; the small cases for the sanitizer.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmFp16Store, RowRowSmall, half_t, RowMajor, RowMajor, specs::StoreD, Sm80SmallConfig, 200)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmFp16Store, RowColSmall, half_t, RowMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 210)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmFp16Store, ColRowSmall, half_t, ColumnMajor, RowMajor, specs::StoreD, Sm80SmallConfig, 220)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmFp16Store, ColColSmall, half_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 230)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmFp16Store, RowRowLarge, half_t, RowMajor, RowMajor, specs::StoreD, Sm80LargeConfig, 240)
TILEFUSE_GPU_GEMM_SMALL_TEST(Fp16StoreColRow, half_t, ColumnMajor, RowMajor, specs::StoreD, Sm80SmallConfig, 250)

}  // namespace
}  // namespace tilefuse::gpu_test
