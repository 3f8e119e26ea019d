// Step 4 of the Hopper ladder: warp specialization (a producer warpgroup and a consumer warpgroup).
//
// The pipeline of step 3, with the roles split: warpgroup 0 is the producer (one thread issues every
// TMA load; the warpgroup gives registers back with setmaxnreg.dec), warpgroup 1 is the consumer (it
// takes them with setmaxnreg.inc for its accumulators and only waits, multiplies and releases). Both
// walk the same k-tile sequence, so they agree on (stage, phase) without talking. The consumer keeps
// one k-tile of wgmmas in flight (wait_group 1) and releases the stage of the previous k-tile, as the
// library kernel does. One 64 x 128 tile per block, a grid of 4 x 2 tiles.
#include "ladder_common.hpp"

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace {

constexpr int kTileM = 64, kTileN = 128, kTileK = 64, kStages = 4;
constexpr int kM = 256, kN = 256, kK = 768;
constexpr int kABytes = kTileM * kTileK * 2, kBBytes = kTileN * kTileK * 2;
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 1024;

struct Params {
  tilefuse::arch::TmaDescriptor map_a, map_b;
  float* d;
};

struct Ring {
  char* a;
  char* b;
  cuda::std::uint64_t* full;
  cuda::std::uint64_t* empty;
};

struct PipelineState {  // where a role is in the ring
  int stage = 0;
  std::uint32_t phase = 0;
  __device__ void advance() {
    if (++stage == kStages) stage = 0, phase ^= 1u;
  }
};

__device__ void producer(Params const& p, Ring const& r, int m0, int n0) {
  namespace arch = tilefuse::arch;
  PipelineState st;
  for (int kt = 0; kt < kK / kTileK; ++kt) {
    arch::mbarrier_wait(&r.empty[st.stage], st.phase ^ 1u);  // first pass: a fresh barrier's "previous" phase
    arch::mbarrier_arrive_expect_tx(&r.full[st.stage], kABytes + kBBytes);
    arch::tma_load_3d(r.a + st.stage * kABytes, &p.map_a, &r.full[st.stage], kt * kTileK, m0, 0);
    arch::tma_load_3d(r.b + st.stage * kBBytes, &p.map_b, &r.full[st.stage], kt * kTileK, n0, 0);
    st.advance();
  }
}

__device__ void consumer(Params const& p, Ring const& r, int m0, int n0) {
  namespace arch = tilefuse::arch;
  int const t = threadIdx.x % 128, lane = t % 32;
  float acc[kTileN / 2];
  for (float& x : acc) x = 0.0f;
  PipelineState st, previous;
  for (int kt = 0; kt < kK / kTileK; ++kt) {
    arch::mbarrier_wait(&r.full[st.stage], st.phase);
    __syncwarp();
    std::uint64_t const desc_a = arch::smem_descriptor_k_major_sw128(r.a + st.stage * kABytes);
    std::uint64_t const desc_b = arch::smem_descriptor_k_major_sw128(r.b + st.stage * kBBytes);
    arch::fence_operands(acc);
    arch::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      arch::wgmma_m64k16<tilefuse::bfloat16_t, kTileN>(acc, desc_a + 2 * kk, desc_b + 2 * kk, kt > 0 || kk > 0 ? 1 : 0);
    }
    arch::wgmma_commit();
    arch::wgmma_wait<1>();  // this k-tile's wgmmas may still run; the previous k-tile's are done
    arch::fence_operands(acc);
    if (kt > 0 && lane == 0) arch::mbarrier_arrive(&r.empty[previous.stage]);
    previous = st;
    st.advance();
  }
  arch::wgmma_wait<0>();
  arch::fence_operands(acc);
  if (lane == 0) arch::mbarrier_arrive(&r.empty[previous.stage]);
  int const row = m0 + 16 * (t / 32) + lane / 4, col = n0 + 2 * (t % 4);
  for (int j = 0; j < kTileN / 8; ++j) {
    p.d[row * kN + 8 * j + col] = acc[4 * j];
    p.d[row * kN + 8 * j + col + 1] = acc[4 * j + 1];
    p.d[(row + 8) * kN + 8 * j + col] = acc[4 * j + 2];
    p.d[(row + 8) * kN + 8 * j + col + 1] = acc[4 * j + 3];
  }
}

__global__ void __launch_bounds__(256, 1) specialized_gemm(__grid_constant__ Params const p) {
  namespace arch = tilefuse::arch;
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + (1024 - reinterpret_cast<std::uintptr_t>(smem_raw) % 1024) % 1024;
  __shared__ cuda::std::uint64_t full[kStages], empty[kStages];
  Ring const r{smem, smem + kStages * kABytes, full, empty};
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      arch::mbarrier_init(&full[s], 1);   // the producer's arrive.expect_tx
      arch::mbarrier_init(&empty[s], 4);  // one per consumer warp
    }
    arch::fence_barrier_init();
  }
  __syncthreads();
  int const m0 = blockIdx.y * kTileM, n0 = blockIdx.x * kTileN;
  if (threadIdx.x / 128 == 0) {
    arch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) producer(p, r, m0, n0);
  } else {
    arch::setmaxnreg_inc<232>();
    consumer(p, r, m0, n0);
  }
}

}  // namespace

int main() {
  char const* step = "04_warp_specialization";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(std::size_t{kM} * kK, 6);
  auto const b = ladder::small_integers(std::size_t{kN} * kK, 7);
  auto* d_a = ladder::to_device(a);
  auto* d_b = ladder::to_device(b);
  Params p;
  LADDER_CUDA(cudaMalloc(&p.d, kM * kN * sizeof(float)));
  p.map_a = ladder::tensor_map(d_a, kM, kK, kTileM, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  p.map_b = ladder::tensor_map(d_b, kN, kK, kTileN, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  tilefuse::LaunchConfig config;
  config.grid = dim3(kN / kTileN, kM / kTileM);
  config.block = dim3(256);
  config.dynamic_smem_bytes = kSmemBytes;
  void* args[] = {&p};
  tilefuse::Status const s = tilefuse::host_adapter().launch(config, reinterpret_cast<void const*>(&specialized_gemm), args);
  if (!s.ok()) {
    std::printf("FAIL: launch: %s\n", s.to_string().c_str());
    return 1;
  }
  auto const d = ladder::to_host(p.d, kM * kN);
  std::printf("%s: %d x %d x %d, producer warpgroup (TMA) + consumer warpgroup (wgmma), 8 blocks\n", step, kM, kN, kK);
  int const bad = ladder::count_gemm_mismatches(d, a, b, kM, kN, kK);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(p.d);
  return ladder::report(step, bad);
}
