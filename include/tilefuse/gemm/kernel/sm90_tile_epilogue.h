// One warp's epilogue of one tile of the Hopper kernel: the path the EpiloguePath trait picked
// (sm90_epilogue_path.h), packed (sm90_packed_epilogue.h) or fp32-staged (sm90_staged_epilogue.h), and the
// epilogue loads a warp issues before the tile's last k-tile (or, with packed loads, before its mainloop).
// A part of gemm::sm90::GemmKernel (sm90_gemm.h).
#pragma once

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/sm90_packed_epilogue.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>
#include <tilefuse/gemm/kernel/sm90_staged_epilogue.h>

namespace tilefuse::gemm::sm90 {

// What the tile's epilogue reads of the kernel beside what its two paths read: which path, the chunking of
// the tile's columns, and the staging slices the packed loads use.
template <class K>
concept TileEpilogueKernel = PackedEpilogueKernel<K> && StagedEpilogueKernel<K> && requires {
  K::kChunks;
  K::kAuxChunks;
  K::kAuxSlices;
  K::kStagingFloatsPerSlice;
  { K::kPackedEpilogue } -> cuda::std::convertible_to<bool>;
  { K::kPackedLoads } -> cuda::std::convertible_to<bool>;
  { K::kStagedLoads } -> cuda::std::convertible_to<bool>;
};

template <TileEpilogueKernel K>
struct TileEpilogue {
  using Params = typename K::Params;
  using SharedStorage = typename K::SharedStorage;
  using Packed = PackedEpilogue<K>;
  using Staged = StagedEpilogue<K>;

  // This warp's 16 rows of the tile (for staged loads, first_loads has issued chunks 0 .. kLoadChunks - 2).
  TILEFUSE_DEVICE static void run(Params const& p, SharedStorage const& s, float const (&acc)[K::kAccumulators],
                                  float* staging, char* loads, int lane, Tile const& tile, int warp_row0,
                                  typename K::AuxState& aux, typename K::RowValues const& rows) {
    index_t const row0 = index_t{tile.m} * K::kTileM + warp_row0;
    index_t const n0 = index_t{tile.n} * K::kTileN;
    if (row0 >= p.problem.m) {  // the whole warp is below the output (uniform per warp)
      if constexpr (K::kTmaAux) {
        for (int chunk = 0; chunk < K::kAuxChunks; ++chunk) K::skip_aux_chunk(s, lane, aux);
      }
      return;
    }
    if constexpr (K::kPackedEpilogue) {
      Packed::tile(p, s, acc, staging, loads, lane, row0, n0, tile.batch, warp_row0, aux, rows);
    } else {
#pragma unroll
      for (int chunk = 0; chunk < K::kChunks; ++chunk) {
        index_t const col0 = n0 + chunk * K::kEpilogueColumns;
        if (col0 >= p.problem.n) break;  // uniform per warp (later chunks issued no loads: all outside)
        if constexpr (K::kStagedLoads) {
          // One group per chunk, empty past the tile, so that `kLoadChunks - 1 pending` always means
          // this chunk's group has landed.
          if (chunk + K::kLoadChunks - 1 < K::kChunks) {
            Staged::issue_loads(p, loads, lane, row0, n0, tile.batch, chunk + K::kLoadChunks - 1);
          }
          arch::cp_async_commit();
          arch::cp_async_wait<K::kLoadChunks - 1>();
        }
        Staged::stage_chunk(acc, staging, lane, chunk);
        Staged::visit_chunk(p, staging, loads, lane, row0, col0, tile.batch, chunk);
      }
    }
  }

  // Issues and commits chunks 0 .. kLoadChunks - 2 of this warp's rows of a tile (one group each), or,
  // with packed loads, the first kAuxSlices chunks' staged AuxLoad (one group each, one slice each).
  TILEFUSE_DEVICE static void first_loads(Params const& p, float* staging, char* loads, int lane, Tile const& tile,
                                          int warp_row0) {
    index_t const row0 = index_t{tile.m} * K::kTileM + warp_row0;
    index_t const n0 = index_t{tile.n} * K::kTileN;
    if constexpr (K::kPackedLoads && !K::kTmaAux) {
      __syncwarp();  // the previous tile's copy-outs have read every slice
#pragma unroll
      for (int chunk = 0; chunk < K::kAuxSlices; ++chunk) {
        index_t const col0 = n0 + chunk * kPackedStagingColumns;
        if (row0 < p.problem.m && chunk < K::kTileN / kPackedStagingColumns && col0 < p.problem.n) {
          Packed::issue_staged_aux(p, staging + chunk * K::kStagingFloatsPerSlice, lane, row0, col0, tile.batch);
        }
        arch::cp_async_commit();  // one group per chunk, empty or not
      }
    } else if constexpr (K::kStagedLoads) {
#pragma unroll
      for (int chunk = 0; chunk + 1 < K::kLoadChunks; ++chunk) {
        if (row0 < p.problem.m) Staged::issue_loads(p, loads, lane, row0, n0, tile.batch, chunk);
        arch::cp_async_commit();
      }
    }
    (void)staging, (void)loads, (void)lane, (void)row0, (void)n0;
  }
};

}  // namespace tilefuse::gemm::sm90
