// bf16 GEMM, D = acc, A column-major, B column-major: the shape sweep, strided batches and split-K on both tile
// configs, and the small cases the compute-sanitizer runs.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, ColColLarge, bfloat16_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80LargeConfig, 130)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, ColColSmall, bfloat16_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 131)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreColCol, bfloat16_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80SmallConfig, 132)

}  // namespace
}  // namespace tilefuse::gpu_test
