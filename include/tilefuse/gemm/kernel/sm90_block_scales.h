// FP8 block-wise scales of the Hopper GEMM (Config::kBlockScaled), the producer's side: scale_a[row, kb] =
// a[row * a_row + kb * a_kblock], scale_b[kb, nb] = b[kb * b_kblock + nb * b_nblock], kb a k-tile (128 of K),
// nb a tile column. The producer warp's 32 lanes copy each k-tile's TileM scales of A and its one scale of B
// into the stage's scale slot by cp.async, arriving on the stage's full barrier; the consumers read the slot
// when they promote (sm90_gemm.h), right after issuing the k-tile's wgmmas. A part of gemm::sm90::GemmKernel.
// NOTES: loaded by the consumers from global memory, the scales needed a register ring several k-tiles deep
// to hide their latency, and with two partial sets a ring of 4 spilled (docs/notes/gemm_fp8.md, the
// block-scaled mainloop's critical path).
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>

namespace tilefuse::gemm::sm90 {

template <int kTileM, bool kEnabled>
struct BlockScalesPart {
  static constexpr int kFloatsPerStage = kEnabled ? kTileM + 4 : 0;  // B's scale, then padding to 16 bytes
  static constexpr int kCopyThreads = kEnabled ? 32 : 0;

  // Shared storage: one slot per stage of the operand ring, a region the kernel's plan places
  // (sm90_shared_memory.h) on a 16-byte boundary (the copies are 16-byte cp.async).
  TILEFUSE_HOST_DEVICE static constexpr int bytes(int stages) {
    return stages * kFloatsPerStage * static_cast<int>(sizeof(float));
  }
  struct Pointers {
    float* scales;  // per stage TileM scales of A, then B's
  };
  TILEFUSE_DEVICE static Pointers carve(char* region) { return Pointers{reinterpret_cast<float*>(region)}; }

  struct Params {
    float const* a = nullptr;
    float const* b = nullptr;
    index_t a_row = 0, a_kblock = 0, b_kblock = 0, b_nblock = 0;
    // 1 where A's scales of a k-block are contiguous rows starting on 16-byte boundaries (a_row = 1,
    // a_kblock a multiple of 4, a 16-byte aligned: torch's layout when m % 4 = 0): each producer lane
    // copies its 4 rows in one 16-byte cp.async.
    int a_vector = 0;
  };

  // A producer lane's sources of one tile's block scales at the current k-tile: A's rows 4 lane ..
  // 4 lane + 3 (a_vector) or lane + 32 j (otherwise), B's scale of the tile column (lane 0 copies it).
  // NOTES: recomputing every address from the k-tile index (64-bit multiplies, parameters reloaded
  // from the constant bank) made the producer warp slower than the consumers: the full barriers were
  // late and block-wise ran at 744 TFLOP/s instead of 963 (ncu: consumers on the full wait;
  // docs/notes/gemm_fp8.md, the promotion overlapped).
  struct Sources {
    float const* a = nullptr;  // the lane's first row (row 0's scale where that row is past m)
    float const* b = nullptr;
    int a_rows = 0;            // how many of the lane's 4 rows lie inside m
  };
  TILEFUSE_DEVICE static Sources sources(Params const& bs, GemmCoord const& problem, Tile const& tile, int lane) {
    Sources src;
    if constexpr (kEnabled) {
      index_t const step = bs.a_vector ? 1 : 32;  // rows between the lane's rows
      index_t const first = index_t{tile.m} * kTileM + (bs.a_vector ? 4 * lane : lane);
      index_t const inside = (problem.m - first + step - 1) / step;
      src.a_rows = static_cast<int>(inside < 0 ? 0 : inside > 4 ? 4 : inside);
      src.a = bs.a + (first < problem.m ? first : 0) * bs.a_row;
      src.b = bs.b + index_t{tile.n} * bs.b_nblock;
    } else {
      (void)bs, (void)problem, (void)tile, (void)lane;
    }
    return src;
  }

  // One lane's share of a block-scaled k-tile's scales into the stage's slot (rows past m get zeros or
  // another row's scale, never used); its arrival on the stage's full barrier comes when they have
  // landed. Then steps the sources to the next k-tile.
  TILEFUSE_DEVICE static void copy(Params const& bs, float* slot, cuda::std::uint64_t* full, Sources& src, int lane) {
    if constexpr (kEnabled) {
      if (bs.a_vector) {
        arch::cp_async_16(slot + 4 * lane, src.a, 4 * src.a_rows);
      } else {
        index_t const row32 = 32 * bs.a_row;
#pragma unroll
        for (int j = 0; j < 4; ++j) arch::cp_async<4, true>(slot + lane + 32 * j, j < src.a_rows ? src.a + j * row32 : src.a);
      }
      if (lane == 0) arch::cp_async<4, true>(slot + kTileM, src.b);
      arch::cp_async_mbarrier_arrive_noinc(full);
      src.a += bs.a_kblock;
      src.b += bs.b_kblock;
    } else {
      (void)bs, (void)slot, (void)full, (void)src, (void)lane;
    }
  }
};

}  // namespace tilefuse::gemm::sm90
