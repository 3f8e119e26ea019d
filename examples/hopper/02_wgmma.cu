// Step 2 of the Hopper ladder: one warpgroup multiplies a tile with WGMMA.
//
// TMA brings A (64 x 64, K-major) and B (64 x 64, stored N x K: also K-major) into shared memory with
// the 128-byte swizzle, the layout wgmma reads through a matrix descriptor (arch::
// smem_descriptor_k_major_sw128). A whole warpgroup (128 threads) then issues four
// wgmma.mma_async.m64n64k16, one per 16 of K, stepping the descriptors 32 bytes along the swizzled
// rows; commit + wait make the asynchronous result visible in the registers. Each thread holds 32
// floats of the 64 x 64 accumulator in the layout documented in arch/wgmma.h; it writes them out and
// the host checks D = A * B exactly (small integers).
#include "ladder_common.hpp"

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/wgmma.h>

namespace {

constexpr int kM = 64, kN = 64, kK = 64;

__global__ void __launch_bounds__(128, 1)
    one_wgmma_tile(__grid_constant__ tilefuse::arch::TmaDescriptor const map_a,
                   __grid_constant__ tilefuse::arch::TmaDescriptor const map_b, float* d) {
  namespace arch = tilefuse::arch;
  // Swizzled TMA destinations (and wgmma's descriptors) want 1024-byte-aligned tiles.
  __shared__ __align__(1024) tilefuse::bfloat16_t a[kM * kK];
  __shared__ __align__(1024) tilefuse::bfloat16_t b[kN * kK];
  __shared__ cuda::std::uint64_t full;
  int const t = threadIdx.x;
  if (t == 0) {
    arch::mbarrier_init(&full, 1);
    arch::fence_barrier_init();
  }
  __syncthreads();
  if (t == 0) {
    arch::mbarrier_arrive_expect_tx(&full, sizeof(a) + sizeof(b));
    arch::tma_load_3d(a, &map_a, &full, 0, 0, 0);
    arch::tma_load_3d(b, &map_b, &full, 0, 0, 0);
  }
  arch::mbarrier_wait(&full, 0);
  __syncwarp();  // wgmma is .aligned: converge after the spin

  float acc[kN / 2];
  for (float& x : acc) x = 0.0f;
  std::uint64_t const desc_a = arch::smem_descriptor_k_major_sw128(a);
  std::uint64_t const desc_b = arch::smem_descriptor_k_major_sw128(b);
  arch::fence_operands(acc);
  arch::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    std::uint64_t const step = (kk * 16 * 2) >> 4;  // 32 bytes along K, in the descriptor's 16-byte units
    arch::wgmma_m64k16<tilefuse::bfloat16_t, kN>(acc, desc_a + step, desc_b + step, kk > 0 ? 1 : 0);
  }
  arch::wgmma_commit();
  arch::wgmma_wait<0>();
  arch::fence_operands(acc);

  // Thread t holds rows 16 (t / 32) + (t % 32) / 4 (+ 8), columns 8j + 2 (t % 4) + {0, 1}.
  int const row = 16 * (t / 32) + (t % 32) / 4;
  int const col = 2 * (t % 4);
#pragma unroll
  for (int j = 0; j < kN / 8; ++j) {
    d[row * kN + 8 * j + col] = acc[4 * j];
    d[row * kN + 8 * j + col + 1] = acc[4 * j + 1];
    d[(row + 8) * kN + 8 * j + col] = acc[4 * j + 2];
    d[(row + 8) * kN + 8 * j + col + 1] = acc[4 * j + 3];
  }
}

}  // namespace

int main() {
  char const* step = "02_wgmma";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(kM * kK, 2);
  auto const b = ladder::small_integers(kN * kK, 3);  // B stored N x K (K-major)
  auto* d_a = ladder::to_device(a);
  auto* d_b = ladder::to_device(b);
  float* d_d = nullptr;
  LADDER_CUDA(cudaMalloc(&d_d, kM * kN * sizeof(float)));
  auto const map_a = ladder::tensor_map(d_a, kM, kK, kM, kK, CU_TENSOR_MAP_SWIZZLE_128B);
  auto const map_b = ladder::tensor_map(d_b, kN, kK, kN, kK, CU_TENSOR_MAP_SWIZZLE_128B);
  one_wgmma_tile<<<1, 128>>>(map_a, map_b, d_d);
  LADDER_CUDA(cudaGetLastError());
  auto const d = ladder::to_host(d_d, kM * kN);
  std::printf("%s: D (64 x 64) = A (64 x 64) * B (64 x 64), four wgmma.m64n64k16 from swizzled shared memory\n", step);
  int const bad = ladder::count_gemm_mismatches(d, a, b, kM, kN, kK);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_d);
  return ladder::report(step, bad);
}
