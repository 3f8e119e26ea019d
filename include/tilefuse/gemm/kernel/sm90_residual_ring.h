// The Hopper kernel's residual ring (Config::kTmaAux): the tree's staged matrix input (the residual) comes
// by TMA, each tile's 64-column sub-tiles (TileM x 64, 128-byte swizzle) into a ring of slots as far ahead as
// the slots allow, with the column vector (the bias) of each chunk beside it by a bulk copy where aligned.
// The producer (or, under ping-pong, an aux warp per ring) issues them; the consumer warps read and release
// them in the same (tile, chunk) order. A part of gemm::sm90::GemmKernel (sm90_gemm.h); its shared storage
// (Pointers) holds the slots (aux, aux_columns) and their barriers (aux_full, aux_empty) of kRings rings.
// NOTES (fused ResNet-50, same run): without the aux warps the 64x256 ping-pong layers ran up to 1.55x their
// time; on the cooperative tiles an aux warp gained nothing and slowed the one-k-tile layer. So ping-pong only
// (docs/notes/conv_sm90.md, the TMA residual on 64x256).
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>
#include <tilefuse/gemm/kernel/sm90_ring_state.h>

namespace tilefuse::gemm::sm90 {

template <int kTileM, int kTileN, int kRings, int kRingSlots, bool kEnabled, bool kColumn>
struct ResidualRingPart {
  static constexpr int kSlotBytes = kTileM * kPackedStagingColumns * 2;  // TileM rows of 128 bytes
  static constexpr int kColumnBytes = kColumn ? 256 : 0;                 // per slot: 64 values of up to 4 bytes
  static constexpr int kChunks = kTileN / kPackedStagingColumns;
  using State = RingState<kRingSlots>;

  // ---- shared storage: three regions the kernel's plan places (sm90_shared_memory.h) ----
  static constexpr int kSlots = kEnabled ? kRings * kRingSlots : 0;  // every ring's
  static constexpr int kSlotRegionBytes = kSlots * kSlotBytes;          // whole KiB: 128-byte rows x TileM
  static constexpr int kColumnRegionBytes = kSlots * kColumnBytes;
  static constexpr int kBarrierBytes = 2 * kSlots * static_cast<int>(sizeof(cuda::std::uint64_t));
  struct Pointers {
    char* aux;                       // kSlots slots of TileM x 64 16-bit values
    char* aux_columns;               // kColumn: per slot the chunk's 64 column-vector values
    cuda::std::uint64_t* aux_full;   // kSlots barriers: the slot holds its sub-tile
    cuda::std::uint64_t* aux_empty;  // kSlots barriers: every reading consumer warp is done with it
  };
  TILEFUSE_DEVICE static Pointers carve(char* slots, char* columns, cuda::std::uint64_t* barriers) {
    return Pointers{slots, columns, barriers, barriers + kSlots};
  }

  struct NoMap {};
  struct Map {
    arch::TmaDescriptor tma_aux;  // the residual as (n, m, batch), box 64 x TileM, 128-byte swizzle
    int batch_mask_aux = -1;      // 0 where one residual serves the whole batch
    int column_by_tma = 0;        // kColumn: 1 where the column vector is copied beside each sub-tile
  };
  using Params = cuda::std::conditional_t<kEnabled, Map, NoMap>;  // a base of the kernel's Params

  // The storage as ring `ring` sees it: its slots, their column values and barriers first.
  template <class Storage>
  TILEFUSE_DEVICE static Storage view(Storage s, int ring) {
    int const first = ring * kRingSlots;
    s.aux += first * kSlotBytes;
    s.aux_columns += first * kColumnBytes;
    s.aux_full += first;
    s.aux_empty += first;
    return s;
  }

  // Every 64-column sub-tile of the tile, past the output too (TMA fills those with zeros, and the
  // consumers' walk stays the same for every tile).
  // p: the kernel's Params (this part's Params as a base; the problem, the epilogue's); with kColumn,
  // Kernel::staged_column(epilogue params) gives the tree's column vector's Params.
  template <class Kernel, class KernelParams, class Storage>
  TILEFUSE_DEVICE static void issue_tile(KernelParams const& p, Storage const& s, Tile const& tile, State& aux) {
    if constexpr (kEnabled) {
      for (int chunk = 0; chunk < kChunks; ++chunk) {
        int const col0 = tile.n * kTileN + chunk * kPackedStagingColumns;
        // The column vector's values of this chunk inside the output (whole 16-byte pieces: the device
        // API turned column_by_tma on only for n a multiple of 16 bytes' worth).
        cuda::std::uint32_t column_bytes = 0;
        [[maybe_unused]] void const* column_src = nullptr;
        if constexpr (kColumn) {
          if (p.column_by_tma) {
            auto const* c = Kernel::staged_column(p.epilogue);
            index_t const left = p.problem.n - col0;
            index_t const values = left < 0 ? 0 : left < kPackedStagingColumns ? left : kPackedStagingColumns;
            column_bytes = static_cast<cuda::std::uint32_t>(values * sizeof(*c->data));
            column_src = c->data + tile.batch * c->batch_stride + col0;
          }
        }
        arch::mbarrier_wait(&s.aux_empty[aux.stage], aux.phase ^ 1u);
        arch::mbarrier_arrive_expect_tx(&s.aux_full[aux.stage], kSlotBytes + column_bytes);
        arch::tma_load_3d(s.aux + aux.stage * kSlotBytes, &p.tma_aux, &s.aux_full[aux.stage], col0, tile.m * kTileM,
                          tile.batch & p.batch_mask_aux);
        if constexpr (kColumn) {
          if (column_bytes > 0) {
            arch::bulk_load(s.aux_columns + aux.stage * kColumnBytes, column_src, column_bytes, &s.aux_full[aux.stage]);
          }
        }
        aux.advance();
      }
    } else {
      (void)p, (void)s, (void)tile, (void)aux;
    }
  }

  // A consumer warp's turn at one sub-tile it does not read (its rows or the chunk lie outside the
  // output): wait for it to land, then release it, so the slots' phases stay in step.
  template <class Storage>
  TILEFUSE_DEVICE static void skip_chunk(Storage const& s, int lane, State& aux) {
    arch::mbarrier_wait(&s.aux_full[aux.stage], aux.phase);
    __syncwarp();
    if (lane == 0) arch::mbarrier_arrive(&s.aux_empty[aux.stage]);
    aux.advance();
  }
};

}  // namespace tilefuse::gemm::sm90
