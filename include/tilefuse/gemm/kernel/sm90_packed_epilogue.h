// The packed epilogue of the Hopper kernel: for trees that store 16-bit values, each pair of accumulators is
// evaluated in registers (the residual from a staged chunk: a cp.async copy, or the TMA residual ring's slot;
// per-row values once per tile; the column vector staged per tile or carried with the ring's sub-tiles),
// converted, staged by stmatrix in a 16 x 64 chunk and copied out by 16-byte stores or one TMA store. A part
// of gemm::sm90::GemmKernel (sm90_gemm.h), which picks it by the EpiloguePath trait (sm90_epilogue_path.h).
#pragma once

#include <cuda/std/array>
#include <cuda/std/concepts>
#include <cuda/std/cstdint>
#include <cuda/std/cstring>
#include <cuda/std/tuple>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/stmatrix.h>
#include <tilefuse/arch/tma.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm90_persistent_scheduler.h>
#include <tilefuse/gemm/kernel/sm90_staged_aux.h>

namespace tilefuse::gemm::sm90 {

// What the packed epilogue reads of the kernel it runs in: its Params (the problem, the tree's parameters,
// the D tensor map), the TMA residual ring's storage and state, the epilogue path's facts, and the kernel's
// calls for D's store route and a skipped ring slot.
template <class K>
concept PackedEpilogueKernel = requires(typename K::Params const& p, typename K::SharedStorage const& s, int lane,
                                        typename K::AuxState& aux) {
  typename K::EpilogueTree;
  typename K::PackedTraits;
  typename K::RowValues;
  requires K::kTileN % kPackedStagingColumns == 0 || !K::kPackedEpilogue;
  { K::d_by_tma(p) } -> cuda::std::same_as<bool>;
  { K::d_row_offset(p, index_t{}) } -> cuda::std::same_as<index_t>;
  K::skip_aux_chunk(s, lane, aux);
  p.problem.m;
  p.epilogue.children;
  { s.aux } -> cuda::std::convertible_to<char const*>;
  { s.aux_full } -> cuda::std::convertible_to<cuda::std::uint64_t const*>;
};

template <PackedEpilogueKernel K>
struct PackedEpilogue {
  using Params = typename K::Params;
  using SharedStorage = typename K::SharedStorage;
  using AuxState = typename K::AuxState;
  using RowValues = typename K::RowValues;
  using Loaded = typename K::Loaded;
  using PackedTraits = typename K::PackedTraits;
  using Epilogue = typename K::EpilogueTree;
  static constexpr auto kAccumulators = K::kAccumulators;
  static constexpr auto kAuxChunks = K::kAuxChunks;
  static constexpr auto kAuxColumnBytes = K::kAuxColumnBytes;
  static constexpr auto kAuxSlices = K::kAuxSlices;
  static constexpr auto kAuxSlotBytes = K::kAuxSlotBytes;
  static constexpr auto kColumnElementBytes = K::kColumnElementBytes;
  static constexpr auto kPackedLoads = K::kPackedLoads;
  static constexpr auto kPackedPerElement = K::kPackedPerElement;
  static constexpr auto kStagedColumn = K::kStagedColumn;
  static constexpr auto kStagingFloatsPerSlice = K::kStagingFloatsPerSlice;
  static constexpr auto kTileM = K::kTileM;
  static constexpr auto kTileN = K::kTileN;
  static constexpr auto kTmaAux = K::kTmaAux;
  static constexpr auto kTmaColumn = K::kTmaColumn;
  static constexpr auto kTmaStore = K::kTmaStore;

  // The packed epilogue of this warp's 16 rows, output (row0, n0) on, in chunks of 64 columns: each
  // pair of accumulators evaluated, converted and staged (four stmatrix.x4), then copied out. Without
  // per-element loads the tree's loads (scalars, or nothing) are the same for every element: loaded
  // once, up front; with them, the residual comes from the staged chunk, per-row values once per tile
  // for the lane's two rows, and the rest per 8-column group.
  TILEFUSE_DEVICE static void tile(Params const& p, SharedStorage const& s, float const (&acc)[kAccumulators],
                                   float* staging, char const* column, int lane, index_t row0, index_t n0, int batch,
                                   int warp_row0, AuxState& aux, RowValues const& rows) {
    using Input = typename PackedTraits::InputNode;
    using T = typename Epilogue::Element;
    auto const& input = cuda::std::get<0>(p.epilogue.children);
    // Without per-element loads the tree loads the same values (scalars, or nothing) everywhere: once.
    auto const uniform = [&] {
      if constexpr (kPackedPerElement) {
        return 0;
      } else {
        return Input::load(input, epilogue::Fragment<2>{});
      }
    }();
    constexpr int kPackedChunks = kTileN / kPackedStagingColumns;
    // stmatrix addresses: lane gives row lane % 8 of tile lane / 8; tiles are (group g, rows 0-7),
    // (g, rows 8-15), (g + 1, rows 0-7), (g + 1, rows 8-15).
    int const store_row = (lane / 8 % 2) * 8 + lane % 8;
    int const store_group = lane / 16;
    T* const d = p.epilogue.data + batch * p.epilogue.batch_stride;
    // Packed loads: the column loads (bias, scalars) of a chunk's 8-column groups, issued at the chunk's
    // start so that they wait beside its residual. (Loaded a chunk ahead, both sets live at once spilled
    // the 128x256 tile.)
    using PairLoaded = typename Input::template Loaded<2>;
    using ColumnLoads = cuda::std::array<PairLoaded, kPackedGroups>;
    bool const by_tma = K::d_by_tma(p);
    if constexpr (kStagedColumn) {  // the tile's column vector (issued before its mainloop) has landed
      arch::cp_async_wait<0>();
      __syncwarp();
    }
    auto const load_columns = [&](index_t col0, StagedColumn const& staged_column) {
      ColumnLoads loaded{};
      if constexpr (kPackedPerElement) {
#pragma unroll
        for (int g = 0; g < kPackedGroups; ++g) {
          epilogue::Fragment<2> f;
          f.row = row0;
          f.col = col0 + 8 * g + 2 * (lane % 4);
          f.batch = batch;
          f.valid = pair_valid(p, f.col);
          loaded[g] = StagedColumnLoad<Input>::load(input, f, staged_column);
        }
      }
      return loaded;
    };
    [[maybe_unused]] int chunks_read = 0;  // kTmaAux: sub-tiles this warp has taken its turn at
#pragma unroll
    for (int chunk = 0; chunk < kPackedChunks; ++chunk) {
      index_t const col0 = n0 + chunk * kPackedStagingColumns;
      if (col0 >= p.problem.n) break;  // uniform per warp
      float* const slice = staging + (kPackedLoads ? chunk % kAuxSlices * kStagingFloatsPerSlice : 0);
      if (by_tma && lane == 0) arch::bulk_wait_group_read<0>();  // the previous chunk's TMA store read it
      __syncwarp();  // the previous chunk's copy-out has read its slice
      if constexpr (kTmaAux) {
        arch::mbarrier_wait(&s.aux_full[aux.stage], aux.phase);  // the sub-tile (and its column values) landed
      }
      StagedColumn const staged_column =
          kStagedColumn ? StagedColumn{column + (col0 - n0) * kColumnElementBytes, col0, true}
                        : StagedColumn{s.aux_columns + aux.stage * kAuxColumnBytes, col0, column_on(p)};
      ColumnLoads const columns = load_columns(col0, staged_column);
      if constexpr (kPackedLoads && !kTmaAux) {
        // This chunk's input (issued kAuxSlices chunks ago, or before the mainloop for the first
        // kAuxSlices) must have landed for every lane; the later chunks' may still be in flight.
        arch::cp_async_wait<kAuxSlices - 1>();
        __syncwarp();
      }
      StagedChunk const staged =
          kTmaAux ? StagedChunk{reinterpret_cast<float const*>(s.aux + aux.stage * kAuxSlotBytes + warp_row0 * 128), row0, col0, true}
                  : StagedChunk{slice, row0, col0, false};
#pragma unroll
      for (int g = 0; g < kPackedGroups; g += 2) {
        cuda::std::uint32_t packed[4];
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          int const j = chunk * kPackedGroups + g + t / 2;  // the accumulators' 8-column block
          int const h = t % 2;                        // rows lane / 4 (0) or lane / 4 + 8 (1)
          epilogue::Fragment<2> f;
          f.acc[0] = acc[4 * j + 2 * h];
          f.acc[1] = acc[4 * j + 2 * h + 1];
          f.row = row0 + lane / 4 + 8 * h;
          f.col = col0 + 8 * (g + t / 2) + 2 * (lane % 4);
          f.batch = batch;
          Array<float, 2> x;
          if constexpr (kPackedPerElement) {
            // Outside the output (valid 0) a pair reads nothing from memory; it is never copied out.
            f.valid = f.row >= p.problem.m ? 0 : pair_valid(p, f.col);
            x = Input::visit(input, f, StagedAuxLoad<Input>::load(input, f, staged, columns[g + t / 2], rows[h]));
          } else {
            x = Input::visit(input, f, uniform);
          }
          Array<T, 2> const out{{convert<T>(x[0]), convert<T>(x[1])}};
          cuda::std::memcpy(&packed[t], &out, sizeof(packed[t]));
        }
        // Packed loads: the results overwrite these 16 columns' staged inputs, which every lane has read.
        if constexpr (kPackedLoads && !kTmaAux) __syncwarp();
        int const at = by_tma ? tma_swizzled_group_offset(store_row, g + store_group)
                              : packed_group_offset(store_row, g + store_group);
        arch::stmatrix_x4(packed, slice + at);
      }
      if (by_tma) arch::fence_proxy_async_shared();  // this lane's results, before the TMA engine reads them
      __syncwarp();
      if constexpr (kTmaAux) {  // every lane has read its pairs of the sub-tile: release it
        if (lane == 0) arch::mbarrier_arrive(&s.aux_empty[aux.stage]);
        aux.advance();
        ++chunks_read;
      }
      if (by_tma) {
        if (lane == 0) store_chunk_by_tma(p, slice, row0, col0, batch);
      } else {
        for_each_packed_group(p, lane, row0, col0, [&](int r, int g, index_t row, index_t col) {
          uint4 const x = *reinterpret_cast<uint4 const*>(slice + packed_group_offset(r, g));
          index_t const at = K::d_row_offset(p, row);
          if (at < 0) return;  // a row the row map does not store
          T* const dst = d + at + col;
          if (p.problem.n - col >= 8 && epilogue::is_vector_aligned<T, 8>(dst)) {
            *reinterpret_cast<uint4*>(dst) = x;
          } else {
            T values[8];
            cuda::std::memcpy(values, &x, sizeof(values));
            for (int e = 0; e < 8 && e < p.problem.n - col; ++e) dst[e] = values[e];
          }
        });
      }
      if constexpr (kPackedLoads && !kTmaAux) {
        // Chunk + kAuxSlices's input goes into this slice, now copied out by every lane.
        __syncwarp();
        index_t const later = col0 + kAuxSlices * kPackedStagingColumns;
        if (chunk + kAuxSlices < kPackedChunks && later < p.problem.n) issue_staged_aux(p, slice, lane, row0, later, batch);
        arch::cp_async_commit();  // one group per chunk, empty or not
      }
    }
    if constexpr (kTmaAux) {
      for (; chunks_read < kAuxChunks; ++chunks_read) K::skip_aux_chunk(s, lane, aux);  // chunks past the output
    }
    (void)s, (void)warp_row0, (void)aux, (void)column, (void)rows;
  }

  // kPackedPerElement: the per-row values of this warp's rows of a tile's row block (warp_row0 on).
  TILEFUSE_DEVICE static RowValues load_row_values(Params const& p, int lane, Tile const& tile, int warp_row0) {
    RowValues rows{};
    if constexpr (kPackedPerElement) {
      using Input = typename PackedTraits::InputNode;
      auto const& input = cuda::std::get<0>(p.epilogue.children);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        epilogue::Fragment<2> f;
        f.row = index_t{tile.m} * kTileM + warp_row0 + lane / 4 + 8 * h;
        f.batch = tile.batch;
        f.valid = f.row < p.problem.m ? 2 : 0;  // rows past the output read nothing
        rows[h] = RowLoad<Input>::load(input, f);
      }
    } else {
      (void)p, (void)lane, (void)tile, (void)warp_row0;
    }
    return rows;
  }

  // kStagedColumn: copies the tile's columns of the column vector into this warp's buffer and commits
  // them as one cp.async group: 16-byte pieces by cp.async where whole and aligned, the rest element by
  // element (load_row_async; past the output zeros, read only by pairs that are never stored).
  TILEFUSE_DEVICE static void issue_column_copy(Params const& p, char* buffer, int lane, Tile const& tile) {
    if constexpr (kStagedColumn) {
      using T = typename StagedColumnNodes<typename PackedTraits::InputNode>::Type::Element;
      constexpr int kPerPiece = 16 / static_cast<int>(sizeof(T));
      using Piece = Array<T, kPerPiece>;
      auto const* column = K::staged_column(p.epilogue);
      index_t const n0 = index_t{tile.n} * kTileN;
      T const* const src = column->data + tile.batch * column->batch_stride + n0;
      __syncwarp();  // every lane has read the previous tile's values
#pragma unroll
      for (int piece = lane; piece < kTileN / kPerPiece; piece += 32) {
        index_t const left = p.problem.n - n0 - piece * kPerPiece;
        int const valid = left <= 0 ? 0 : left < kPerPiece ? static_cast<int>(left) : kPerPiece;
        epilogue::load_row_async<kPerPiece, true>(reinterpret_cast<Piece*>(buffer) + piece, src + piece * kPerPiece, valid);
      }
      arch::cp_async_commit();
    } else {
      (void)p, (void)buffer, (void)lane, (void)tile;
    }
  }

  // kTmaStore: one lane's TMA store of the warp's 16 x 64 chunk at output (row0, col0) from `slice`, in
  // a bulk group of its own. Rows past the output are not written; columns past n would be, up to the
  // end of the 16-byte piece holding the last one, so the device API enables this only where n % 8 == 0.
  TILEFUSE_DEVICE static void store_chunk_by_tma(Params const& p, float const* slice, index_t row0, index_t col0,
                                                 int batch) {
    if constexpr (kTmaStore) {
      arch::tma_store_3d(&p.tma_d, slice, static_cast<int>(col0), static_cast<int>(row0), batch);
      arch::bulk_commit_group();
    } else {
      (void)p, (void)slice, (void)row0, (void)col0, (void)batch;
    }
  }

  // Whether the column vector came with the sub-tiles (kTmaColumn and the device API's check).
  TILEFUSE_DEVICE static bool column_on(Params const& p) {
    if constexpr (kTmaColumn) {
      return p.column_by_tma != 0;
    } else {
      (void)p;
      return false;
    }
  }

  // How many of the pair of columns (col, col + 1) lie inside the output: 0, 1 or 2.
  TILEFUSE_DEVICE static int pair_valid(Params const& p, index_t col) {
    index_t const left = p.problem.n - col;
    return left <= 0 ? 0 : left < 2 ? static_cast<int>(left) : 2;
  }

  // The 16-byte groups (8 columns) of a warp's 16 x 64 packed chunk whose element (0, 0) is output
  // (row0, col0): lane takes groups v = lane, lane + 32, ... (row v / 8, group v % 8), those inside the
  // output; visit(r, g, row, col) gets the chunk's row and group and the output's row and column.
  static constexpr int kPackedGroups = kPackedStagingColumns / 8;  // 16-byte groups of a staged row
  template <class Visit>
  TILEFUSE_DEVICE static void for_each_packed_group(Params const& p, int lane, index_t row0, index_t col0,
                                                    Visit&& visit) {
#pragma unroll
    for (int i = 0; i < 16 * kPackedGroups / 32; ++i) {
      int const v = lane + 32 * i;
      int const r = v / kPackedGroups, g = v % kPackedGroups;
      index_t const row = row0 + r;
      index_t const col = col0 + 8 * g;
      if (row >= p.problem.m || col >= p.problem.n) continue;
      visit(r, g, row, col);
    }
  }

  // Packed loads: issues (without committing) the copies of the tree's AuxLoad for this warp's 16 rows,
  // 64 columns from output (row0, col0), into `slice` in the packed staging layout: 16-byte pieces by
  // cp.async, partial or misaligned ones loaded here. Pieces outside the output are left as they are
  // (their pairs are never copied out).
  TILEFUSE_DEVICE static void issue_staged_aux(Params const& p, float* slice, int lane, index_t row0, index_t col0,
                                               int batch) {
    if constexpr (kPackedLoads) {
      using Input = typename PackedTraits::InputNode;
      using T = typename StagedAux<Input>::Type::Element;
      auto const* aux = staged_aux_params<Input>(cuda::std::get<0>(p.epilogue.children));
      T const* const base = aux->data + batch * aux->batch_stride;
      for_each_packed_group(p, lane, row0, col0, [&](int r, int g, index_t row, index_t col) {
        T const* const src = base + row * aux->ld + col;
        float* const dst = slice + packed_group_offset(r, g);
        int const valid = p.problem.n - col < 8 ? static_cast<int>(p.problem.n - col) : 8;
        if (valid == 8 && epilogue::is_vector_aligned<T, 8>(src)) {
          arch::cp_async<16, false>(dst, src);
        } else {
          *reinterpret_cast<epilogue::StoredRow<T, 8>*>(dst) = epilogue::load_row<8>(src, valid);
        }
      });
    } else {
      (void)p, (void)slice, (void)lane, (void)row0, (void)col0, (void)batch;
    }
  }
};

}  // namespace tilefuse::gemm::sm90
