// Rows of A that arrive while the Hopper kernel runs (Config::kRowGate, Sm90RowGate): A's rows come in pieces
// of rows_per_flag rows, each with a flag in global memory that turns nonzero once the piece is in place (an
// all-gather's copies, each followed by a stream write of its flag). Before a tile's first load the producer
// waits for the flags of the pieces its rows touch, and the blocks walk the tile rows from first_tile_row on
// (the rows in place at launch first), wrapping around. One GEMM over every rank's rows instead of one per
// block of rows (docs/notes/parallel.md, the gated all-gather GEMM). Optionally the tile rows
// [own_tile_begin, own_tile_end) (this rank's own block) are read through a second tensor map from where they
// already lie, never waited for: the all-gather need not copy them in before the GEMM starts. A part of
// gemm::sm90::GemmKernel.
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/arch/tma.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

// Whether Config asks for the row gate (Config::kRowGate).
template <class Config>
TILEFUSE_HOST_DEVICE constexpr bool gates_rows() {
  if constexpr (requires { Config::kRowGate; }) {
    return Config::kRowGate;
  } else {
    return false;
  }
}

template <int kTileM, bool kEnabled>
struct RowGatePart {
  struct NoGate {};
  struct Gate {
    arch::TmaDescriptor tma_own;          // the own rows as (k, rows, 1), box (TileK, TileM, 1), as tma_a
    unsigned const* row_flags = nullptr;  // ceil(m / rows_per_flag) flags; nonzero: that piece of A is in place
    int rows_per_flag = 0;                // > 0
    int first_tile_row = 0;               // the tile row the walk starts from, in [0, tiles_m)
    int own_tile_begin = 0;               // tile rows [own_tile_begin, own_tile_end) load through tma_own
    int own_tile_end = 0;                 // (an empty range: every row through tma_a, gated)
  };
  using Params = cuda::std::conditional_t<kEnabled, Gate, NoGate>;  // a base of the kernel's Params

  // The tile row the scheduler's row `m` stands for: rows from first_tile_row on, wrapping around.
  template <class KernelParams>
  TILEFUSE_HOST_DEVICE static int rotated(KernelParams const& p, int m) {
    if constexpr (kEnabled) {
      int const r = m + p.first_tile_row;
      return r >= p.tiles_m ? r - p.tiles_m : r;
    } else {
      (void)p;
      return m;
    }
  }

  // Whether tile row `m` is one of the own rows, read through tma_own and never waited for.
  template <class KernelParams>
  TILEFUSE_HOST_DEVICE static bool own(KernelParams const& p, int m) {
    if constexpr (kEnabled) {
      return m >= p.own_tile_begin && m < p.own_tile_end;
    } else {
      (void)p, (void)m;
      return false;
    }
  }

  static constexpr unsigned long long kSpinLimitNs = 10'000'000'000ull;  // 10 s

  TILEFUSE_DEVICE static unsigned long long global_ns() {
    unsigned long long now = 0;
#if defined(__CUDA_ARCH__)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
#endif
    return now;
  }

  TILEFUSE_DEVICE static unsigned load_acquire(unsigned const* flag) {
    unsigned value = 0;
#if defined(__CUDA_ARCH__)
    // System scope: the flag and the rows it publishes may be written by another GPU (an all-gather's push).
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
#else
    (void)flag;
#endif
    return value;
  }

  // The loading thread waits until every piece that tile row `m` reads is in place, then orders its later
  // TMA loads (the async proxy) after what the flags published (the copies' writes).
  template <class KernelParams>
  TILEFUSE_DEVICE static void wait(KernelParams const& p, int m) {
    if constexpr (kEnabled) {
      long long const row0 = static_cast<long long>(m) * kTileM;
      long long const last = row0 + kTileM < p.problem.m ? row0 + kTileM - 1 : p.problem.m - 1;
      for (long long f = row0 / p.rows_per_flag; f <= last / p.rows_per_flag; ++f) {
        unsigned long long const start = global_ns();
        while (load_acquire(p.row_flags + f) == 0u) {
          __nanosleep(64);
          // A flag that never turns (its writer waits for an SM this kernel holds, or was never enqueued) traps
          // after kSpinLimitNs instead of hanging the device: the launch then fails with an error.
          if (global_ns() - start > kSpinLimitNs) __trap();
        }
      }
      arch::fence_proxy_async_global();
    } else {
      (void)p, (void)m;
    }
  }
};

}  // namespace tilefuse::gemm::sm90
