// bf16 GEMM, D = acc, A column-major, B row-major: the shape sweep, strided batches and split-K on both tile
// configs, and the small cases the compute-sanitizer runs.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, ColRowLarge, bfloat16_t, ColumnMajor, RowMajor, specs::StoreD, Sm80LargeConfig, 120)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, ColRowSmall, bfloat16_t, ColumnMajor, RowMajor, specs::StoreD, Sm80SmallConfig, 121)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreColRow, bfloat16_t, ColumnMajor, RowMajor, specs::StoreD, Sm80LargeConfig, 122)

}  // namespace
}  // namespace tilefuse::gpu_test
