// Step 1 of the Hopper ladder: one TMA load of a tile.
//
// The host describes the matrix once (a tensor map: base, extents, strides, box size, swizzle),
// encoded through tilefuse's host adapter. On the device one thread asks the TMA unit to copy a box
// (64 columns x 128 rows of bf16 = 16 KiB) into shared memory; an mbarrier counts the bytes as they
// land, and every thread waits on it. Boxes that stick out of the matrix arrive zero-filled, which is
// how the GEMM kernel handles edges without predicates. Here: two boxes, one inside and one hanging
// over the bottom-right corner; the block copies each back to global memory, and the host checks it.
#include "ladder_common.hpp"

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>

namespace {

constexpr int kRows = 200, kCols = 160;       // the matrix (row-major bf16)
constexpr int kBoxRows = 128, kBoxCols = 64;  // the box: 64 x 2 = 128 bytes per row
constexpr int kBoxBytes = kBoxRows * kBoxCols * 2;

__global__ void tma_load_tile(__grid_constant__ tilefuse::arch::TmaDescriptor const map, int row0, int col0,
                              tilefuse::bfloat16_t* out) {
  namespace arch = tilefuse::arch;
  __shared__ __align__(128) tilefuse::bfloat16_t tile[kBoxRows * kBoxCols];
  __shared__ cuda::std::uint64_t full;
  if (threadIdx.x == 0) {
    arch::mbarrier_init(&full, 1);  // one arrival: the thread that issues the copy
    arch::fence_barrier_init();     // make the initialised barrier visible to the TMA unit
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    arch::mbarrier_arrive_expect_tx(&full, kBoxBytes);                 // arrive, and expect this many bytes
    arch::tma_load_3d(tile, &map, &full, col0, row0, /*batch*/ 0);     // coordinates innermost first
  }
  arch::mbarrier_wait(&full, 0);  // phase 0 completes when the arrival and all the bytes are in
  for (int i = threadIdx.x; i < kBoxRows * kBoxCols; i += blockDim.x) out[i] = tile[i];
}

}  // namespace

int main() {
  char const* step = "01_tma_load";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(std::size_t{kRows} * kCols, 1);
  auto* d_a = ladder::to_device(a);
  tilefuse::bfloat16_t* d_out = nullptr;
  LADDER_CUDA(cudaMalloc(&d_out, kBoxBytes));
  auto const map = ladder::tensor_map(d_a, kRows, kCols, kBoxRows, kBoxCols, CU_TENSOR_MAP_SWIZZLE_NONE);

  int mismatches = 0;
  for (auto [row0, col0] : {std::pair{16, 32}, std::pair{128, 128}}) {  // inside; over the corner
    tma_load_tile<<<1, 128>>>(map, row0, col0, d_out);
    LADDER_CUDA(cudaGetLastError());
    auto const out = ladder::to_host(d_out, kBoxRows * kBoxCols);
    for (int r = 0; r < kBoxRows; ++r) {
      for (int c = 0; c < kBoxCols; ++c) {
        int const gr = row0 + r, gc = col0 + c;
        double const want = gr < kRows && gc < kCols ? ladder::to_double(a[gr * kCols + gc]) : 0.0;
        if (ladder::to_double(out[r * kBoxCols + c]) != want) ++mismatches;
      }
    }
  }
  std::printf("%s: two 128 x 64 boxes of a %d x %d bf16 matrix, one zero-filled past the edges\n", step, kRows, kCols);
  cudaFree(d_a);
  cudaFree(d_out);
  return ladder::report(step, mismatches);
}
