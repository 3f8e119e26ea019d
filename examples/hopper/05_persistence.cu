// Step 5 of the Hopper ladder: persistence (a tile scheduler).
//
// Step 4 launched one block per tile. Here a few blocks stay resident and walk the tiles: block b
// takes tiles b, b + gridDim.x, ... (the library launches min(#SMs, tiles) blocks, one per SM), and a
// tile index becomes (tile row, tile column) through gemm::GroupedRasterization from
// gemm/kernel/tile_scheduler.h: groups of kGroupRows tile rows are walked column by column, so tiles
// that run at the same time share A rows and B columns in L2. The producer and the consumer walk the
// same (tile, k-tile) sequence and keep their ring positions across tiles, so the producer already
// loads the next tile while the consumer finishes (and stores) this one. Here 3 blocks walk 4 x 4
// tiles; the host checks D and that every tile was computed exactly once.
#include "ladder_common.hpp"

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/gemm/kernel/tile_scheduler.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace {

constexpr int kTileM = 64, kTileN = 128, kTileK = 64, kStages = 4;
constexpr int kM = 256, kN = 512, kK = 512, kGroupRows = 2, kBlocks = 3;
constexpr int kTilesM = kM / kTileM, kTilesN = kN / kTileN, kTiles = kTilesM * kTilesN;
constexpr int kABytes = kTileM * kTileK * 2, kBBytes = kTileN * kTileK * 2;
constexpr int kSmemBytes = kStages * (kABytes + kBBytes) + 1024;

struct Params {
  tilefuse::arch::TmaDescriptor map_a, map_b;
  float* d;
  int* owner;  // per tile (row-major): 16 x the block that computed it + 1 per visit (each must be visited once)
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

__device__ tilefuse::gemm::TileCoord tile_of(int index) {
  return tilefuse::gemm::GroupedRasterization<kGroupRows>::tile_of(index, kTilesM, kTilesN);
}

__device__ void producer(Params const& p, Ring const& r) {
  namespace arch = tilefuse::arch;
  PipelineState st;  // kept across tiles
  for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x) {
    int const m0 = tile_of(tile).m * kTileM, n0 = tile_of(tile).n * kTileN;
    for (int kt = 0; kt < kK / kTileK; ++kt) {
      arch::mbarrier_wait(&r.empty[st.stage], st.phase ^ 1u);  // first pass: a fresh barrier's "previous" phase
      arch::mbarrier_arrive_expect_tx(&r.full[st.stage], kABytes + kBBytes);
      arch::tma_load_3d(r.a + st.stage * kABytes, &p.map_a, &r.full[st.stage], kt * kTileK, m0, 0);
      arch::tma_load_3d(r.b + st.stage * kBBytes, &p.map_b, &r.full[st.stage], kt * kTileK, n0, 0);
      st.advance();
    }
  }
}

__device__ void consumer(Params const& p, Ring const& r) {
  namespace arch = tilefuse::arch;
  int const t = threadIdx.x % 128, lane = t % 32;
  float acc[kTileN / 2];
  for (float& x : acc) x = 0.0f;
  PipelineState st, previous;  // kept across tiles
  for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x) {
    int const m0 = tile_of(tile).m * kTileM, n0 = tile_of(tile).n * kTileN;
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
    if (t == 0) atomicAdd(&p.owner[tile_of(tile).m * kTilesN + tile_of(tile).n], 1 + 16 * static_cast<int>(blockIdx.x));
  }
}

__global__ void __launch_bounds__(256, 1) persistent_gemm(__grid_constant__ Params const p) {
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
  if (threadIdx.x / 128 == 0) {
    arch::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) producer(p, r);
  } else {
    arch::setmaxnreg_inc<232>();
    consumer(p, r);
  }
}

}  // namespace

int main() {
  char const* step = "05_persistence";
  if (!ladder::hopper_or_explain(step)) return 0;
  auto const a = ladder::small_integers(std::size_t{kM} * kK, 6);
  auto const b = ladder::small_integers(std::size_t{kN} * kK, 7);
  auto* d_a = ladder::to_device(a);
  auto* d_b = ladder::to_device(b);
  Params p;
  LADDER_CUDA(cudaMalloc(&p.d, kM * kN * sizeof(float)));
  LADDER_CUDA(cudaMalloc(&p.owner, kTiles * sizeof(int)));
  LADDER_CUDA(cudaMemset(p.owner, 0, kTiles * sizeof(int)));
  p.map_a = ladder::tensor_map(d_a, kM, kK, kTileM, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  p.map_b = ladder::tensor_map(d_b, kN, kK, kTileN, kTileK, CU_TENSOR_MAP_SWIZZLE_128B);
  tilefuse::LaunchConfig config;
  config.grid = dim3(kBlocks);
  config.block = dim3(256);
  config.dynamic_smem_bytes = kSmemBytes;
  void* args[] = {&p};
  tilefuse::Status const s = tilefuse::host_adapter().launch(config, reinterpret_cast<void const*>(&persistent_gemm), args);
  if (!s.ok()) {
    std::printf("FAIL: launch: %s\n", s.to_string().c_str());
    return 1;
  }
  auto const d = ladder::to_host(p.d, kM * kN);
  auto const owner = ladder::to_host(p.owner, kTiles);
  std::printf("%s: %d x %d x %d = %d tiles of 64 x 128 on %d persistent blocks; tile (row, col) -> block:\n", step,
              kM, kN, kK, kTiles, kBlocks);
  int bad = 0;
  for (int tm = 0; tm < kTilesM; ++tm) {
    std::printf("   ");
    for (int tn = 0; tn < kTilesN; ++tn) {
      int const o = owner[tm * kTilesN + tn];
      std::printf(" %d", (o - 1) / 16);
      if (o % 16 != 1) ++bad;  // visited other than once
    }
    std::printf("\n");
  }
  bad += ladder::count_gemm_mismatches(d, a, b, kM, kN, kK);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(p.d);
  cudaFree(p.owner);
  return ladder::report(step, bad);
}
