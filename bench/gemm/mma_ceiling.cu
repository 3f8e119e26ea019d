// The ceilings of the sm_80 GEMM on this GPU (docs/notes/gemm_sm80.md), which it is judged against
// besides cuBLAS (which uses WGMMA on Hopper):
// - mma: how many bf16 TFLOP/s mma.sync.m16n8k16 (fp32 accumulation) reaches when nothing else limits
//   it, and when each warp also reads its fragments with ldmatrix at the GEMM's ratio (a 64x64 warp
//   tile: 8 ldmatrix.x4 per 32 mmas);
// - copies: how fast 16-byte cp.asyncs fill a 3-stage ring of 48 KiB k-tiles (the 128x256x64 tile's
//   copy pattern, without its math) from an L2-resident buffer and from one far larger than L2.
//
//   tilefuse_mma_ceiling            prints one table per ceiling
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/ldmatrix.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/arch/mma_sm80.h>

namespace {

using tilefuse::bfloat16_t;
using std::uint32_t;

constexpr int kMmaN = 8;  // n-tiles per warp: 64 columns

// One k-step of a (16 MmaM) x 64 warp tile: MmaM x 8 mmas on (a, b); with kLdmatrix, the next step's
// fragments are loaded from shared memory into (a_next, b_next) meanwhile (MmaM + 4 ldmatrix.x4, as the
// GEMM's double-buffered fragments).
template <int MmaM, bool kLdmatrix>
__device__ void k_step(float (&acc)[MmaM][kMmaN][4], uint32_t const (&a)[MmaM][4], uint32_t const (&b)[kMmaN][2],
                       uint32_t (&a_next)[MmaM][4], uint32_t (&b_next)[kMmaN][2], uint32_t const* smem) {
  if constexpr (kLdmatrix) {
#pragma unroll
    for (int i = 0; i < MmaM; ++i) tilefuse::arch::ldmatrix_x4(a_next[i], smem + i * 128);
#pragma unroll
    for (int j = 0; j < kMmaN; j += 2) {
      uint32_t pair[4];
      tilefuse::arch::ldmatrix_x4(pair, smem + (MmaM + j / 2) * 128);
      b_next[j][0] = pair[0], b_next[j][1] = pair[1];
      b_next[j + 1][0] = pair[2], b_next[j + 1][1] = pair[3];
    }
  }
#pragma unroll
  for (int i = 0; i < MmaM; ++i)
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) tilefuse::arch::mma_m16n8k16<bfloat16_t>(acc[i][j], a[i], b[j]);
}

// Each warp runs 2 x `pairs` k-steps. Every lane addresses one 16-byte row of a 512-byte tile: the 32
// rows are consecutive, so each ldmatrix.x4 reads 512 contiguous bytes without bank conflicts.
template <int MmaM, bool kLdmatrix>
__global__ void mma_loop(int pairs, float* sink) {
  __shared__ __align__(128) uint32_t smem[2][(MmaM + 4) * 128];  // per buffer: MmaM + 4 tiles of 512 bytes
  int const lane = static_cast<int>(threadIdx.x % 32);
  for (int i = static_cast<int>(threadIdx.x); i < 2 * (MmaM + 4) * 128; i += static_cast<int>(blockDim.x)) {
    (&smem[0][0])[i] = 0x3c003c00u ^ (static_cast<uint32_t>(i) * 2654435761u & 0x00ff00ffu);
  }
  __syncthreads();
  float acc[MmaM][kMmaN][4] = {};
  uint32_t a0[MmaM][4], a1[MmaM][4];
  uint32_t b0[kMmaN][2], b1[kMmaN][2];
  for (int i = 0; i < MmaM; ++i)
    for (int e = 0; e < 4; ++e) a0[i][e] = a1[i][e] = 0x3c003c00u ^ static_cast<uint32_t>(lane + i + e);
  for (int j = 0; j < kMmaN; ++j)
    for (int e = 0; e < 2; ++e) b0[j][e] = b1[j][e] = 0x3c003c00u ^ static_cast<uint32_t>(lane * 3 + j + e);
  for (int it = 0; it < pairs; ++it) {
    k_step<MmaM, kLdmatrix>(acc, a0, b0, a1, b1, smem[1] + lane * 4);
    k_step<MmaM, kLdmatrix>(acc, a1, b1, a0, b0, smem[0] + lane * 4);
  }
  float total = 0;
  for (int i = 0; i < MmaM; ++i)
    for (int j = 0; j < kMmaN; ++j)
      for (int e = 0; e < 4; ++e) total += acc[i][j][e];
  if (total == 1234.5f) *sink = total;  // never true in practice; keeps the mmas alive
}

// Each block copies `tiles` k-tiles of 48 KiB (12 chunks of 16 bytes per thread, 256 threads) into a
// kStages ring, waiting and syncing per k-tile as the GEMM does. Blocks start at different offsets of
// `src` and wrap around it.
template <int kStages>
__global__ void __launch_bounds__(256) copy_loop(uint4 const* src, long long src_chunks, int tiles, float* sink) {
  extern __shared__ __align__(128) uint4 ring[];
  constexpr int kChunksPerTile = 48 * 1024 / 16;
  int const thread = static_cast<int>(threadIdx.x);
  long long offset = static_cast<long long>(blockIdx.x) * 7 * kChunksPerTile;
  for (int t = 0; t < tiles + kStages - 1; ++t) {
    if (t < tiles) {
      uint4* stage = ring + (t % kStages) * kChunksPerTile;
#pragma unroll
      for (int i = 0; i < kChunksPerTile / 256; ++i) {
        long long const chunk = (offset + i * 256 + thread) % src_chunks;
        tilefuse::arch::cp_async_16(stage + i * 256 + thread, src + chunk, 16);
      }
      offset += kChunksPerTile;
    }
    tilefuse::arch::cp_async_commit();
    if (t >= kStages - 1) {
      tilefuse::arch::cp_async_wait<kStages - 1>();
      __syncthreads();
    }
  }
  tilefuse::arch::cp_async_wait<0>();
  __syncthreads();
  if (ring[thread].x == 0x12345678u && ring[thread].y == 0x9abcdef0u) *sink = 1.0f;
}

// The same ring filled by bulk copies (the TMA engine, sm_90): one thread arms the stage's mbarrier and
// issues three 16 KiB copies; every thread waits on the mbarrier, then the block syncs before the
// stage is reused, as a TMA-fed mma.sync mainloop would.
template <int kStages>
__global__ void __launch_bounds__(256) bulk_copy_loop(uint4 const* src, long long src_chunks, int tiles, float* sink) {
  extern __shared__ __align__(1024) uint4 ring[];
  __shared__ std::uint64_t full[kStages];
  constexpr int kChunksPerTile = 48 * 1024 / 16;
  constexpr int kPieceChunks = 16 * 1024 / 16;
  int const thread = static_cast<int>(threadIdx.x);
  if (thread == 0) {
    for (int s = 0; s < kStages; ++s) tilefuse::arch::mbarrier_init(&full[s], 1);
    tilefuse::arch::fence_barrier_init();
  }
  __syncthreads();
  long long const first = static_cast<long long>(blockIdx.x) * 7 * kChunksPerTile;
  auto issue = [&](int t) {
    if (thread != 0 || t >= tiles) return;
    int const s = t % kStages;
    tilefuse::arch::mbarrier_arrive_expect_tx(&full[s], 48 * 1024);
    for (int piece = 0; piece < 3; ++piece) {
      long long const chunk = (first + static_cast<long long>(t) * kChunksPerTile + piece * kPieceChunks) %
                              (src_chunks - kPieceChunks);
      tilefuse::arch::bulk_load(ring + s * kChunksPerTile + piece * kPieceChunks, src + chunk, 16 * 1024, &full[s]);
    }
  };
  for (int t = 0; t < kStages - 1; ++t) issue(t);
  for (int t = 0; t < tiles; ++t) {
    issue(t + kStages - 1);
    tilefuse::arch::mbarrier_wait(&full[t % kStages], static_cast<std::uint32_t>((t / kStages) & 1));
    __syncthreads();
  }
  if (ring[thread].x == 0x12345678u && ring[thread].y == 0x9abcdef0u) *sink = 1.0f;
}

// GB/s of copy_loop (or bulk_copy_loop) over a buffer of `bytes`, one block per SM.
template <int kStages, bool kBulk>
double copy_rate(std::size_t bytes, int sms, float* sink) {
  int const tiles = 2048;
  int const smem = kStages * 48 * 1024;
  auto const kernel = kBulk ? bulk_copy_loop<kStages> : copy_loop<kStages>;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  uint4* src = nullptr;
  cudaMalloc(&src, bytes);
  cudaMemset(src, 0x3c, bytes);
  long long const chunks = static_cast<long long>(bytes / 16);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(start);
    kernel<<<sms, 256, smem>>>(src, chunks, tiles, sink);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 3) ms.push_back(t);  // the first launches warm up
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start), cudaEventDestroy(stop);
  cudaFree(src);
  return double(sms) * tiles * 48 * 1024 / (ms[ms.size() / 2] * 1e-3) * 1e-9;
}

struct Row {
  char const* kernel;
  int warps_per_block;
  int blocks_per_sm;
  double tflops;
};

template <int MmaM, bool kLdmatrix>
Row measure(char const* name, int warps_per_block, int blocks_per_sm, int sms, float* sink) {
  int const pairs = 1 << 15;
  int const blocks = sms * blocks_per_sm;
  int const threads = 32 * warps_per_block;
  auto const launch = [&] { mma_loop<MmaM, kLdmatrix><<<blocks, threads>>>(pairs, sink); };
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) launch();  // warm-up: clocks settle
  std::vector<float> ms;
  for (int i = 0; i < 9; ++i) {
    cudaEventRecord(start);
    launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start), cudaEventDestroy(stop);
  double const flops = 4096.0 * MmaM * kMmaN * 2.0 * pairs * (double(blocks) * warps_per_block);
  return {name, warps_per_block, blocks_per_sm, flops / (ms[ms.size() / 2] * 1e-3) * 1e-12};
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  float* sink = nullptr;
  cudaMalloc(&sink, sizeof(float));
  int const sms = prop.multiProcessorCount;
  std::printf("# mma.sync ceiling on %s (%d SMs), bf16 m16n8k16, fp32 accumulation\n\n", prop.name, sms);
  std::printf("| kernel | warps/block | blocks/SM | warps/SM | TFLOP/s |\n|---|---|---|---|---|\n");
  Row const rows[] = {
      measure<4, false>("mma only, 64x64 warp tile", 4, 1, sms, sink),
      measure<4, false>("mma only, 64x64 warp tile", 8, 1, sms, sink),
      measure<2, false>("mma only, 32x64 warp tile", 8, 2, sms, sink),
      measure<4, true>("mma + ldmatrix, 64x64 warp tile", 8, 1, sms, sink),
      measure<2, true>("mma + ldmatrix, 32x64 warp tile", 8, 2, sms, sink),
  };
  for (Row const& r : rows) {
    std::printf("| %s | %d | %d | %d | %.1f |\n", r.kernel, r.warps_per_block, r.blocks_per_sm,
                r.warps_per_block * r.blocks_per_sm, r.tflops);
  }
  // The 128x256x64 tile needs 48 KiB per 2 x 128 x 256 x 64 FLOPs: the copy rate caps its TFLOP/s.
  double const flops_per_byte = 2.0 * 128 * 256 * 64 / (48.0 * 1024);
  std::printf("\n| ring of 48 KiB k-tiles, 1 block/SM | source buffer | GB/s | TFLOP/s it feeds at 128x256x64 |\n"
              "|---|---|---|---|\n");
  auto row = [&](char const* name, double gbs, std::size_t mib) {
    std::printf("| %s | %zu MiB | %.0f | %.1f |\n", name, mib, gbs, gbs * flops_per_byte * 1e-3);
  };
  for (std::size_t mib : {32, 4096}) {
    row("cp.async, 3 stages", copy_rate<3, false>(mib << 20, sms, sink), mib);
    row("cp.async, 4 stages", copy_rate<4, false>(mib << 20, sms, sink), mib);
    if (prop.major >= 9) {
      row("bulk copy (TMA), 3 stages", copy_rate<3, true>(mib << 20, sms, sink), mib);
      row("bulk copy (TMA), 4 stages", copy_rate<4, true>(mib << 20, sms, sink), mib);
    }
  }
  // NOTES: blocks start 7 k-tiles apart and each reads 96 MiB, so even the 4 GiB buffer is mostly read
  // from L2 (its rate can exceed DRAM's): these are L2 -> shared memory rates.
  cudaError_t const e = cudaDeviceSynchronize();
  cudaFree(sink);
  if (e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
