// The fp32-staged epilogue of the Hopper kernel, for any tree: a warp's accumulators go to its staging slice
// one 16 x kEpilogueColumns chunk at a time, and each lane visits kVisitWidth consecutive columns of a row with
// the tree, its loads issued a chunk or more ahead into per-lane slots (cp.async) or, without staged loads,
// by the tree itself. A part of gemm::sm90::GemmKernel (sm90_gemm.h), which picks it by the EpiloguePath trait
// (sm90_epilogue_path.h) where the packed epilogue does not apply.
#pragma once

#include <cuda/std/cstring>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>

namespace tilefuse::gemm::sm90 {

// What the staged epilogue reads of the kernel it runs in: its Params (the problem and the tree's
// parameters), the tree and its loaded values, and the visit and load-slot geometry of the epilogue path.
template <class K>
concept StagedEpilogueKernel = requires(typename K::Params const& p) {
  typename K::EpilogueTree;
  typename K::Loaded;
  requires K::kEpilogueColumns % 8 == 0 && K::kVisitWidth % 4 == 0;
  K::kLoadChunks;
  K::kLoadSlotBytes;
  K::kLoadSlotWords;
  K::kVisitsPerLane;
  K::kVisitsPerChunkRow;
  p.problem.m;
  p.epilogue;
};

template <StagedEpilogueKernel K>
struct StagedEpilogue {
  using Params = typename K::Params;
  using Loaded = typename K::Loaded;
  using Epilogue = typename K::EpilogueTree;
  static constexpr auto kAccumulators = K::kAccumulators;
  static constexpr auto kEpilogueColumns = K::kEpilogueColumns;
  static constexpr auto kLoadChunks = K::kLoadChunks;
  static constexpr auto kLoadSlotBytes = K::kLoadSlotBytes;
  static constexpr auto kLoadSlotWords = K::kLoadSlotWords;
  static constexpr auto kStagedLoads = K::kStagedLoads;
  static constexpr auto kVisitWidth = K::kVisitWidth;
  static constexpr auto kVisitsPerChunkRow = K::kVisitsPerChunkRow;
  static constexpr auto kVisitsPerLane = K::kVisitsPerLane;

  // Writes the accumulators of one chunk (16 rows x kEpilogueColumns) into the warp's staging slice.
  // The accumulator layout of wgmma: lane holds rows lane / 4 and lane / 4 + 8 of the warp's 16,
  // columns 8j + 2 * (lane % 4) + {0, 1}.
  TILEFUSE_DEVICE static void stage_chunk(float const (&acc)[kAccumulators], float* staging, int lane, int chunk) {
    int const r = lane / 4;
    int const c = 2 * (lane % 4);
    constexpr int kJPerChunk = kEpilogueColumns / 8;
    __syncwarp();  // the previous chunk's reads of the staging slice are done
#pragma unroll
    for (int jj = 0; jj < kJPerChunk; ++jj) {
      int const j = chunk * kJPerChunk + jj;
      *reinterpret_cast<float2*>(staging + staging_offset(r, 8 * jj + c)) = make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(staging + staging_offset(r + 8, 8 * jj + c)) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
    __syncwarp();
  }

  // The visits of one chunk whose element (0, 0) is output (row0, col0): lane takes vectors v = lane,
  // lane + 32, ... (the i-th of them), kVisitWidth consecutive columns of one row each; those outside
  // the output are skipped. visit(f, r, c, i) gets the fragment without its accumulators.
  template <class Visit>
  TILEFUSE_DEVICE static void for_each_visit(Params const& p, int lane, index_t row0, index_t col0, int batch,
                                             Visit&& visit) {
#pragma unroll 1
    for (int i = 0; i < kVisitsPerLane; ++i) {
      int const v = lane + 32 * i;
      int const r = v / kVisitsPerChunkRow;
      int const c = (v % kVisitsPerChunkRow) * kVisitWidth;
      index_t const row = row0 + r;
      index_t const col = col0 + c;
      if (row >= p.problem.m || col >= p.problem.n) continue;
      epilogue::Fragment<kVisitWidth> f;
      f.row = row;
      f.col = col;
      f.batch = batch;
      f.valid = p.problem.n - col < kVisitWidth ? static_cast<int>(p.problem.n - col) : kVisitWidth;
      visit(f, r, c, i);
    }
  }

  // Where lane's i-th visit of a chunk finds its staged loads (chunks rotate through kLoadChunks slots).
  TILEFUSE_DEVICE static Loaded* load_slot(char* loads, int chunk, int i, int lane) {
    return reinterpret_cast<Loaded*>(loads + ((chunk % kLoadChunks * kVisitsPerLane + i) * 32 + lane) * kLoadSlotBytes);
  }

  // A slot's contents in registers, read as whole 16-byte words (the nodes would read a staged bf16
  // vector element by element: 16 two-byte loads instead of two, each with bank conflicts).
  TILEFUSE_DEVICE static Loaded read_slot(Loaded const* slot) {
    uint4 words[kLoadSlotWords];
#pragma unroll
    for (int w = 0; w < kLoadSlotWords; ++w) words[w] = reinterpret_cast<uint4 const*>(slot)[w];
    Loaded value;
    cuda::std::memcpy(&value, words, sizeof(Loaded));
    return value;
  }

  // Issues (without committing) the loads of chunk `chunk` of this warp's rows into their slots.
  TILEFUSE_DEVICE static void issue_loads(Params const& p, char* loads, int lane, index_t row0, index_t n0, int batch,
                                          int chunk) {
    for_each_visit(p, lane, row0, n0 + chunk * kEpilogueColumns, batch,
                   [&](epilogue::Fragment<kVisitWidth> const& f, int, int, int i) {
                     Epilogue::load_async(p.epilogue, f, load_slot(loads, chunk, i, lane));
                   });
  }

  // Visits the 16 x kEpilogueColumns chunk staged at `staging` (its element (0, 0) is output (row0, col0)),
  // with its loads from their slots (kStagedLoads) or issued here (epilogue::evaluate).
  TILEFUSE_DEVICE static void visit_chunk(Params const& p, float const* staging, char* loads, int lane, index_t row0,
                                          index_t col0, int batch, int chunk) {
    for_each_visit(p, lane, row0, col0, batch, [&](epilogue::Fragment<kVisitWidth>& f, int r, int c, int i) {
#pragma unroll
      for (int q = 0; q < kVisitWidth / 4; ++q) {
        float4 const x = *reinterpret_cast<float4 const*>(staging + staging_offset(r, c + 4 * q));
        f.acc[4 * q] = x.x, f.acc[4 * q + 1] = x.y, f.acc[4 * q + 2] = x.z, f.acc[4 * q + 3] = x.w;
      }
      if constexpr (kStagedLoads) {
        Epilogue::visit(p.epilogue, f, read_slot(load_slot(loads, chunk, i, lane)));
      } else {
        epilogue::evaluate<Epilogue>(p.epilogue, f);
      }
    });
  }
};

}  // namespace tilefuse::gemm::sm90
