// bf16 GEMM, D = acc, A row-major, B row-major: the shape sweep, strided batches and split-K on both tile
// configs, and the small cases the compute-sanitizer runs.
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, RowRowLarge, bfloat16_t, RowMajor, RowMajor, specs::StoreD, Sm80LargeConfig, 100)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmBf16Store, RowRowSmall, bfloat16_t, RowMajor, RowMajor, specs::StoreD, Sm80SmallConfig, 101)
TILEFUSE_GPU_GEMM_SMALL_TEST(Bf16StoreRowRow, bfloat16_t, RowMajor, RowMajor, specs::StoreD, Sm80LargeConfig, 102)

}  // namespace
}  // namespace tilefuse::gpu_test
