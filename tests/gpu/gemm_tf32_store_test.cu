// The tf32 path (mma.m16n8k8.tf32, fp32 accumulation), D = acc: float inputs (rounded to tf32 by the
// kernel) in all four layouts on the small tf32 config and two layouts on the large one, tfloat32_t
// inputs in two layouts; over the shape sweep (16-byte path with 4-float chunks and element-wise
// path, edges in m, n and k), strided batches and split-K. Integer inputs are exact in tf32, so every
// element is compared bit for bit. Also the small cases for the compute-sanitizer (GemmSmall.Tf32*).
#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32RowRowSmall, float, RowMajor, RowMajor, specs::StoreD, Sm80Tf32SmallConfig, 700)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32RowColSmall, float, RowMajor, ColumnMajor, specs::StoreD, Sm80Tf32SmallConfig, 710)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32ColRowSmall, float, ColumnMajor, RowMajor, specs::StoreD, Sm80Tf32SmallConfig, 720)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32ColColSmall, float, ColumnMajor, ColumnMajor, specs::StoreD, Sm80Tf32SmallConfig, 730)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32RowColLarge, float, RowMajor, ColumnMajor, specs::StoreD, Sm80Tf32LargeConfig, 740)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Fp32ColRowLarge, float, ColumnMajor, RowMajor, specs::StoreD, Sm80Tf32LargeConfig, 750)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Tf32RowRowLarge, tfloat32_t, RowMajor, RowMajor, specs::StoreD, Sm80Tf32LargeConfig, 760)
TILEFUSE_GPU_GEMM_SWEEP_TESTS(GemmTf32Store, Tf32ColColSmall, tfloat32_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80Tf32SmallConfig, 770)
TILEFUSE_GPU_GEMM_SMALL_TEST(Tf32Fp32StoreRowCol, float, RowMajor, ColumnMajor, specs::StoreD, Sm80Tf32SmallConfig, 780)
TILEFUSE_GPU_GEMM_SMALL_TEST(Tf32Fp32StoreColRow, float, ColumnMajor, RowMajor, specs::StoreD, Sm80Tf32LargeConfig, 781)
TILEFUSE_GPU_GEMM_SMALL_TEST(Tf32StoreColCol, tfloat32_t, ColumnMajor, ColumnMajor, specs::StoreD, Sm80Tf32SmallConfig, 782)

}  // namespace
}  // namespace tilefuse::gpu_test
