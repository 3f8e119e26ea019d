// Which epilogue the Hopper kernel runs for a tree and a config, decided in one place: the fp32-staged
// epilogue (visits of 8 or 16 columns, loads staged in shared memory), the packed epilogue (16-bit results
// by stmatrix; with per-element loads: packed loads by cp.async, or the residual by TMA into a ring beside
// its column vector), and D's copy-out by TMA stores. gemm::sm90::GemmKernel (sm90_gemm.h) reads these
// facts; the shared-memory sizes follow from them there.
#pragma once

#include <cuda/std/array>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/epilogue/tree_traits.h>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm90_staged_aux.h>

namespace tilefuse::gemm::sm90 {

template <class Epilogue, class Config>
struct EpiloguePath {
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kClusterM = Config::kClusterM;
  static constexpr bool kPingPong = Config::kSchedule == Sm90Schedule::kPingPong;

  // The epilogue's shape: chunks of kEpilogueColumns, visits of kVisitWidth columns.
  static constexpr int kEpilogueColumns = Config::kEpilogueColumns;
  static constexpr int kChunks = kTileN / kEpilogueColumns;
  // NOTES: for trees that read a residual, 16 columns per visit halve the visits per lane, and with
  // them the serialized round trips of the tree's loads (a visit's loads wait for the previous visit's
  // stores: the compiler cannot prove the residual and D apart). Trees without loads keep 8: at 16 the
  // plain GEMM lost 4-14% on short-K shapes. Issuing the next chunk's loads before this chunk's stores
  // (Epilogue::load, then ::visit) with 16-column chunks, to stay clear of spills, was slower on every
  // shape (docs/notes/conv_sm90.md, wider epilogue visits; docs/notes/gemm_sm90.md).
  static constexpr int kVisitWidth = epilogue::loads_auxiliary<Epilogue> && kEpilogueColumns % 16 == 0 ? 16 : 8;
  static constexpr int kVisitsPerChunkRow = kEpilogueColumns / kVisitWidth;
  static constexpr int kVisitsPerLane = 16 * kVisitsPerChunkRow / 32;  // per chunk
  static_assert(16 * kVisitsPerChunkRow % 32 == 0, "every lane visits the same number of vectors per chunk");
  // Trees that read memory (residual, bias) stage each chunk's loads in shared memory by cp.async,
  // kLoadChunks - 1 chunks ahead of its visits (load_async): the loads of later chunks are in flight
  // while a chunk is visited, and hold no registers. Each lane's visit has its own slot.
  // Ping-pong keeps loading in line: its epilogue already runs under the other warpgroup's mainloop,
  // and the ring depth the slots would take cost it more than the waits (docs/notes/gemm_sm90.md, the
  // epilogue's loads staged in shared memory).
  // NOTES: loading a 128x64 tile's inputs (4 visits of 16 columns per lane) into registers after its
  // wgmmas were issued, or before the turn, made the fused 1x1 and 3x3 ResNet-50 layers on that tile
  // 20% slower; ptxas, which allocates 168 registers per thread here (the launch allocation, whatever
  // setmaxnreg later gives), reported 64-148 bytes of spills with them (docs/notes/conv_sm90.md,
  // preloaded inputs).
  using Loaded = typename Epilogue::template Loaded<kVisitWidth>;
  // Trees that store 16-bit D from the accumulator and per-tree scalars (a bare GEMM or convolution,
  // `relu(acc)`, a coordinate-dependent activation, FP8's per-tensor `acc * scale_a * scale_b`) take the
  // packed epilogue: evaluated on the accumulator registers (scalars loaded once per tile), only the
  // 16-bit results are staged (by stmatrix: half the bytes of the fp32 staging, a quarter of the store
  // instructions), then copied out in 16-byte vectors.
  // NOTES: bare GEMMs and convolutions got faster with it (the short-K 1x1 layers most). Trees whose
  // loads depend on the element (a bias, a residual) stay on the fp32 staging: evaluated per accumulator
  // pair, their 4-byte loads made the fused convolutions and GEMMs much slower (docs/notes/gemm_sm90.md,
  // the packed epilogue).
  using PackedTraits = epilogue::Stores16BitOfElementwise<Epilogue>;
  // Opt-in (correct, not faster than the default path: docs/notes/gemm_sm90.md, packed loads): trees with
  // per-element loads whose one matrix input is a 16-bit row-major AuxLoad (relu(acc + bias) + residual)
  // take the packed epilogue too, the AuxLoad staged by cp.async into the staging layout (kAuxSlices
  // slices per warp, the first issued before the tile's mainloop, each chunk's results written over its
  // own inputs), bias and scalars loaded once per 8-column group. Asked for by Config::kPackedLoads = true
  // (cooperative only); the TMA residual (kTmaAux below) builds on it.
  TILEFUSE_HOST_DEVICE static constexpr bool packed_loads_possible() {
    bool asked = false;
    if constexpr (requires { Config::kPackedLoads; }) asked = Config::kPackedLoads;
    if constexpr (PackedTraits::value) {
      return asked && PackedTraits::kLoadsPerElement && has_stageable_aux<typename PackedTraits::InputNode>();
    } else {
      return false;
    }
  }
  // Trees whose per-element loads are vectors only (a bias, FP8's row-wise scales; no matrix input)
  // take the packed epilogue too: each lane loads its two rows' values once per tile (RowLoad) and
  // each chunk's column values once per 8-column group (ColumnLoad), the one column vector from the
  // warp's staged copy (kStagedColumn below), others from global memory. NOTES: it brought FP8 row-wise
  // scales closer to cuBLASLt (docs/notes/gemm_fp8.md, row-wise scales on the packed epilogue).
  TILEFUSE_HOST_DEVICE static constexpr bool loads_vectors_only() {
    if constexpr (PackedTraits::value) {
      return PackedTraits::kLoadsPerElement && StagedAux<typename PackedTraits::InputNode>::kCount == 0;
    } else {
      return false;
    }
  }
  // On top of packed loads (Config::kTmaAux, with Config::kAuxStages slots, default 4; gemm_config.h's
  // Sm90TmaResidual, which the GEMM planner picks for aligned residuals): the staged matrix input (the
  // residual) comes by TMA, each tile's 64-column sub-tiles (TileM x 64, 128-byte swizzle) into a ring of
  // slots as far ahead as the slots allow (after the tile's k-tiles by the producer, or by aux warps:
  // kAuxWarp below), instead of by each consumer lane's cp.async. The device API encodes Params::tma_aux
  // (the residual as (n, m, batch), box 64 x TileM). NOTES: docs/notes/gemm_sm90.md, the residual by TMA
  // and the TMA residual as the GEMM default; docs/notes/conv_sm90.md.
  TILEFUSE_HOST_DEVICE static constexpr bool tma_aux_asked() {
    if constexpr (requires { Config::kTmaAux; }) {
      return Config::kTmaAux;
    } else {
      return false;
    }
  }
  TILEFUSE_HOST_DEVICE static constexpr int tma_aux_stages() {
    if constexpr (requires { Config::kAuxStages; }) {
      return Config::kAuxStages;
    } else {
      return 4;
    }
  }
  // Ping-pong takes the TMA residual on 64-row tiles only (one row block per warp: each warp reads its
  // 16 rows of a sub-tile once); the packed loads under it are the TMA residual's, not cp.async's.
  static constexpr bool kPingPongTmaAux = kPingPong && kTileM == 64 && kClusterM == 1 && tma_aux_asked();
  static constexpr bool kPackableTile = kTileN % kPackedStagingColumns == 0;
  static constexpr bool kPackedLoads = kPackableTile && packed_loads_possible() && (!kPingPong || kPingPongTmaAux);
  static constexpr bool kPackedVectors = kPackableTile && loads_vectors_only();
  // Whether the packed epilogue loads per element (by the staged chunk, the row and column loads).
  static constexpr bool kPackedPerElement = kPackedLoads || kPackedVectors;
  static constexpr bool kPackedEpilogue = kPackableTile && PackedTraits::value &&
                                          (!PackedTraits::kLoadsPerElement || kPackedPerElement);
  // Packed vectors with one column vector (FP8 row-wise's scale_b, or a bias): each consumer warp
  // copies the tile's TileN values into its own shared-memory buffer by cp.async before the tile's
  // mainloop, so the epilogue reads them from shared memory instead of waiting on global loads at each
  // chunk; the per-row values go into registers at the same point.
  TILEFUSE_HOST_DEVICE static constexpr bool staged_column_possible() {
    if constexpr (kPackedVectors) {
      return has_stageable_column<typename PackedTraits::InputNode>();
    } else {
      return false;
    }
  }
  static constexpr bool kStagedColumn = staged_column_possible();
  static constexpr int kColumnBytesPerWarp = kStagedColumn ? kTileN * 4 : 0;  // values of up to 4 bytes
  TILEFUSE_HOST_DEVICE static constexpr int column_element_bytes() {
    if constexpr (kStagedColumn) {
      return static_cast<int>(sizeof(typename StagedColumnNodes<typename PackedTraits::InputNode>::Type::Element));
    } else {
      return 0;
    }
  }
  static constexpr int kColumnElementBytes = column_element_bytes();
  // The per-row values (ColBroadcast) of a lane's two rows of a row block (rows lane / 4 and
  // lane / 4 + 8 of its warp's 16), loaded before the tile's mainloop; nothing for other trees.
  struct NoRowValues {};
  template <class Traits, bool = Traits::value>
  struct RowValuesOf {
    using type = NoRowValues;
  };
  template <class Traits>
  struct RowValuesOf<Traits, true> {
    using type = cuda::std::array<typename Traits::InputNode::template Loaded<2>, 2>;
  };
  using RowValues = typename RowValuesOf<PackedTraits>::type;
  static constexpr bool kTmaAux = kPackedLoads && tma_aux_asked() && kClusterM == 1;
  static constexpr int kAuxStages = kTmaAux ? tma_aux_stages() : 0;
  // The packed epilogue copies each warp's 16 x 64 chunk of D out by one TMA store (a tensor map of D,
  // box 64 columns x 16 rows, 128-byte swizzle; the results are stmatrix'd in that swizzle) where the
  // device API found D aligned for it (Params::d_by_tma), instead of each lane's 16-byte stores: the
  // copy-out then runs beside the next chunk's math and the next tile's mainloop. Not with packed loads
  // by cp.async (their slices hold the residual in the packed layout). NOTES: faster on FP8 and on the
  // fused convolutions (docs/notes/gemm_sm90.md, D leaves by TMA stores).
  static constexpr bool kTmaStore = kPackedEpilogue && (!kPackedLoads || kTmaAux);
  // With it, a tree with one column vector (the bias) gets each chunk's 64 values by a bulk copy beside
  // the sub-tile, where the device API found the vector aligned (Params::column_by_tma); otherwise the
  // ColumnLoads read global memory.
  TILEFUSE_HOST_DEVICE static constexpr bool tma_column_possible() {
    if constexpr (kTmaAux) {
      return has_stageable_column<typename PackedTraits::InputNode>();
    } else {
      return false;
    }
  }
  static constexpr bool kTmaColumn = tma_column_possible();
};

}  // namespace tilefuse::gemm::sm90
