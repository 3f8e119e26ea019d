// Split-K reduced inside the Hopper kernel (Config::kReduceSplits, Sm90SplitReduce): batch index b is split b
// of one output (the operand source reads its part of K), and each consumer warp adds its 16 rows of the
// tile's fp32 accumulators into Params::split_sums (zeroed by the device API before the launch) by vector
// reductions at L2, then counts itself on the ticket of its 16-row slice; the warp that counts last reads
// the sums back and runs the epilogue on them, for batch 0. One kernel and one fp32 matrix in L2 in place of
// split-many partials and a second pass that reads them back; the fp32 additions happen in arrival order,
// so the last bits of the result vary from run to run. A part of gemm::sm90::GemmKernel (sm90_gemm.h).
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/arch/global_reduce.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>

namespace tilefuse::gemm::sm90 {

// Whether Config asks for the split reduced in the kernel (Config::kReduceSplits).
template <class Config>
TILEFUSE_HOST_DEVICE constexpr bool reduces_splits() {
  if constexpr (requires { Config::kReduceSplits; }) {
    return Config::kReduceSplits;
  } else {
    return false;
  }
}

template <int kTileM, int kTileN, bool kEnabled>
struct SplitReductionPart {
  static constexpr int kAccumulators = kTileN / 2;  // fp32 per consumer thread and row block
  struct NoSums {};
  struct Sums {
    float* split_sums = nullptr;   // problem.m x sums_stride(problem.n) fp32, row-major, zero at launch
    int* split_tickets = nullptr;  // ticket_count() counters, zero at launch
  };
  using Params = cuda::std::conditional_t<kEnabled, Sums, NoSums>;  // a base of the kernel's Params

  // The sums' row stride: n rounded up to whole 16-byte vectors (each lane adds 4 columns at a time).
  TILEFUSE_HOST_DEVICE static constexpr index_t sums_stride(index_t n) { return (n + 3) / 4 * 4; }

  // The tickets of a grid of tiles_m x tiles_n tiles: one per 16-row slice of each tile.
  TILEFUSE_HOST_DEVICE static constexpr index_t ticket_count(index_t tiles_m, index_t tiles_n) {
    return tiles_m * (kTileM / 16) * tiles_n;
  }

  // Adds this warp's 16 rows of the tile (split tile.batch) into the sums, and returns
  // whether the warp was the last of the tile's splits to do so; acc then holds the sums of every split.
  // Rows past the output return true (TileEpilogue::run skips them).
  // p: the kernel's Params (this part's Params as a base, beside the problem and the tile grid).
  template <class KernelParams>
    requires requires(KernelParams const& k) { k.problem.m; k.tiles_n; }
  TILEFUSE_DEVICE static bool add(KernelParams const& p, float (&acc)[kAccumulators], int lane, Tile const& tile,
                                  int warp_row0) {
    if constexpr (kEnabled) {
      index_t const m = p.problem.m;
      index_t const n = p.problem.n;
      index_t const stride = sums_stride(n);  // split_sums 16-byte aligned (the device API's check)
      index_t const row0 = index_t{tile.m} * kTileM + warp_row0;
      if (row0 >= m) return true;
      index_t const n0 = index_t{tile.n} * kTileN;
      // In the wgmma layout lanes 2i and 2i + 1 hold columns c .. c + 1 and c + 2 .. c + 3 (c = 0 or 4 in
      // each 8-column group) of rows lane / 4 and lane / 4 + 8. One exchange gives the even lane four
      // columns of the first row and the odd lane four of the second: one 16-byte reduction each.
      bool const odd = lane % 2 == 1;
      index_t const row = row0 + lane / 4 + (odd ? 8 : 0);
      index_t const col = n0 + 2 * (lane % 4) - (odd ? 2 : 0);
      float* const sums = p.split_sums + row * stride + col;  // col % 4 == 0: a vector ends inside the row
      // NOTES: shuffled straight from acc (a select between two accumulators per lane), ptxas serialized
      // every wgmma of the kernel (C7514) and spilled the 128x256 tile; from a copy it does neither.
      float v[kAccumulators];
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) v[i] = acc[i];
#pragma unroll
      for (int j = 0; j < kTileN / 8; ++j) {
        float const other0 = __shfl_xor_sync(0xffffffffu, odd ? v[4 * j] : v[4 * j + 2], 1);
        float const other1 = __shfl_xor_sync(0xffffffffu, odd ? v[4 * j + 1] : v[4 * j + 3], 1);
        if (row < m && col + 8 * j < n) {
          if (odd) {
            arch::red_add_v4(sums + 8 * j, other0, other1, v[4 * j + 2], v[4 * j + 3]);
          } else {
            arch::red_add_v4(sums + 8 * j, v[4 * j], v[4 * j + 1], other0, other1);
          }
        }
      }
      // Every lane's reductions are ordered before lane 0's count; the last count sees every split's.
      __threadfence();
      __syncwarp();
      index_t const slice = (index_t{tile.m} * (kTileM / 16) + warp_row0 / 16) * p.tiles_n + tile.n;
      int ticket = 0;
      if (lane == 0) ticket = arch::fetch_add_acq_rel(p.split_tickets + slice);
      ticket = __shfl_sync(0xffffffffu, ticket, 0);
      if (ticket != p.problem.batch - 1) return false;
      __syncwarp();  // lane 0's acquire orders the other splits' sums before every lane's reads
      __threadfence();
      // The sums, from L2 (ld.global.cg: never a stale L1 line), into the accumulator layout.
      index_t const r = row0 + lane / 4;
      index_t const c = n0 + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < kTileN / 8; ++j) {
        if (c + 8 * j >= n) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (r + 8 * h < m) {
            float2 const sum = __ldcg(reinterpret_cast<float2 const*>(p.split_sums + (r + 8 * h) * stride + c + 8 * j));
            acc[4 * j + 2 * h] = sum.x;
            acc[4 * j + 2 * h + 1] = sum.y;
          }
        }
      }
      return true;
    } else {
      (void)p, (void)acc, (void)lane, (void)tile, (void)warp_row0;
      return true;
    }
  }
};

}  // namespace tilefuse::gemm::sm90
