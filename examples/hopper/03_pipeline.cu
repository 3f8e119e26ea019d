// Step 3 of the Hopper ladder: a multistage pipeline guarded by mbarriers.
//
// A long K (1024 = 16 k-tiles of 64) no longer fits in shared memory at once, so the tiles stream
// through a ring of kStages stages. Every stage has two barriers:
//   full[s]   completes when the stage's TMA bytes have landed (1 arrival: arrive.expect_tx);
//   empty[s]  completes when the 4 warps of the warpgroup are done reading it (4 arrivals).
// A barrier's phases alternate, so a waiter names the parity of the phase it needs: the use number of
// the stage, (k-tile / kStages), modulo 2. Thread 0 fills every stage up front, then refills a stage
// as soon as its empty barrier says the wgmmas that read it are done, while the warpgroup computes
// on the other stages: loads overlap math. (Thread 0 is both producer and consumer here; step 4
// gives the producer its own warpgroup.)
#include "ladder_common.hpp"

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace {

constexpr int kM = 64, kN = 128, kK = 1024, kTileK = 64, kStages = 4;
constexpr int kABytes = kM * kTileK * 2, kBBytes = kN * kTileK * 2;
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 1024;  // + slack for 1024-byte alignment

struct Params {
  tilefuse::arch::TmaDescriptor map_a, map_b;
  float* d;
};

__global__ void __launch_bounds__(128, 1) pipelined_tile(__grid_constant__ Params const p) {
  namespace arch = tilefuse::arch;
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + (1024 - reinterpret_cast<std::uintptr_t>(smem_raw) % 1024) % 1024;
  char* a = smem;                       // kStages tiles of 64 x 64
  char* b = smem + kStages * kABytes;   // kStages tiles of 128 x 64
  __shared__ cuda::std::uint64_t full[kStages], empty[kStages];
  int const t = threadIdx.x, lane = t % 32;
  constexpr int kTiles = kK / kTileK;
  auto load = [&](int kt) {  // thread 0: k-tile kt into stage kt % kStages
    int const s = kt % kStages;
    arch::mbarrier_arrive_expect_tx(&full[s], kABytes + kBBytes);
    arch::tma_load_3d(a + s * kABytes, &p.map_a, &full[s], kt * kTileK, 0, 0);
    arch::tma_load_3d(b + s * kBBytes, &p.map_b, &full[s], kt * kTileK, 0, 0);
  };
  if (t == 0) {
    for (int s = 0; s < kStages; ++s) {
      arch::mbarrier_init(&full[s], 1);
      arch::mbarrier_init(&empty[s], 4);
    }
    arch::fence_barrier_init();
    for (int kt = 0; kt < kStages && kt < kTiles; ++kt) load(kt);  // prologue: fill the ring
  }
  __syncthreads();

  float acc[kN / 2];
  for (float& x : acc) x = 0.0f;
  for (int kt = 0; kt < kTiles; ++kt) {
    int const s = kt % kStages;
    std::uint32_t const parity = (kt / kStages) & 1;
    arch::mbarrier_wait(&full[s], parity);  // the stage holds k-tile kt
    __syncwarp();
    std::uint64_t const desc_a = arch::smem_descriptor_k_major_sw128(a + s * kABytes);
    std::uint64_t const desc_b = arch::smem_descriptor_k_major_sw128(b + s * kBBytes);
    arch::fence_operands(acc);
    arch::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      arch::wgmma_m64k16<tilefuse::bfloat16_t, kN>(acc, desc_a + 2 * kk, desc_b + 2 * kk, kt > 0 || kk > 0 ? 1 : 0);
    }
    arch::wgmma_commit();
    arch::wgmma_wait<0>();  // (step 4 keeps one k-tile in flight instead)
    arch::fence_operands(acc);
    if (lane == 0) arch::mbarrier_arrive(&empty[s]);  // this warp is done with the stage
    if (t == 0 && kt + kStages < kTiles) {
      arch::mbarrier_wait(&empty[s], parity);  // all 4 warps are done: refill it
      load(kt + kStages);
    }
  }
  int const row = 16 * (t / 32) + lane / 4, col = 2 * (t % 4);
  for (int j = 0; j < kN / 8; ++j) {
    p.d[row * kN + 8 * j + col] = acc[4 * j];
    p.d[row * kN + 8 * j + col + 1] = acc[4 * j + 1];
    p.d[(row + 8) * kN + 8 * j + col] = acc[4 * j + 2];
    p.d[(row + 8) * kN + 8 * j + col + 1] = acc[4 * j + 3];
  }
}

}  // namespace

int main() {
  char const* step = "03_pipeline";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(std::size_t{kM} * kK, 4);
  auto const b = ladder::small_integers(std::size_t{kN} * kK, 5);
  auto* d_a = ladder::to_device(a);
  auto* d_b = ladder::to_device(b);
  Params p;
  LADDER_CUDA(cudaMalloc(&p.d, kM * kN * sizeof(float)));
  p.map_a = ladder::tensor_map(d_a, kM, kK, kM, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  p.map_b = ladder::tensor_map(d_b, kN, kK, kN, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  // The library's launch path: the host adapter (sets the dynamic shared memory limit, launches).
  tilefuse::LaunchConfig config;
  config.grid = dim3(1);
  config.block = dim3(128);
  config.dynamic_smem_bytes = kSmemBytes;
  void* args[] = {&p};
  tilefuse::Status const s = tilefuse::host_adapter().launch(config, reinterpret_cast<void const*>(&pipelined_tile), args);
  if (!s.ok()) {
    std::printf("FAIL: launch: %s\n", s.to_string().c_str());
    return 1;
  }
  auto const d = ladder::to_host(p.d, kM * kN);
  std::printf("%s: D (64 x 128) over K = 1024 through a %d-stage TMA ring (full / empty mbarriers)\n", step, kStages);
  int const bad = ladder::count_gemm_mismatches(d, a, b, kM, kN, kK);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(p.d);
  return ladder::report(step, bad);
}
