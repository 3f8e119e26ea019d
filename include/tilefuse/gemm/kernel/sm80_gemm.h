// The sm_80 GEMM kernel (runs on sm_80, sm_89 and sm_90): mma.sync with fp32 accumulation
// (m16n8k16 for bf16 / fp16 inputs, m16n8k8.tf32 for float and tfloat32_t inputs, floats rounded to
// tf32 in the fragment registers, cvt.rna, just before their mmas), a Stages-deep cp.async pipeline into swizzled shared memory,
// ldmatrix (or 32-bit shared loads) fragment loads, grouped rasterization, and the epilogue visitor
// tree applied to the accumulator tile staged through shared memory so each thread owns 8 consecutive
// elements of an output row.
//
// kernel = operand source x mainloop x epilogue x scheduler: the operand source copies k-tiles into
// shared memory (strided matrices for the GEMM, gathers for the implicit-GEMM convolution);
// mainloop() computes one tile's accumulators; the epilogue either visits the tree (split_k == 1) or
// writes fp32 partials for the split-K reduction.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/arch/cp_async.h>
#include <tilefuse/arch/mma_sm80.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm80_dense_operands.h>
#include <tilefuse/gemm/kernel/sm80_smem_tile.h>
#include <tilefuse/gemm/kernel/tile_scheduler.h>

namespace tilefuse::gemm::sm80 {

// The kernel over any operand source (sm80_dense_operands.h: strided matrices; the convolution's
// gathers in conv/kernel/): only how k-tiles reach shared memory differs.
template <class Element_, class Operands, class Epilogue, class Config_>
struct TiledKernel {
  using Element = Element_;
  using Config = Config_;
  static constexpr int kThreads = Config::kThreads;
  static constexpr int kMinBlocksPerSm = Config::kMinBlocksPerSm;
  static constexpr int kTileM = Config::kTileM;
  static constexpr int kTileN = Config::kTileN;
  static constexpr int kTileK = Config::kTileK;
  static constexpr int kStages = Config::kStages;
  static constexpr int kMmaM = Config::kWarpTileM / 16;  // mma tiles per warp along m
  static constexpr int kMmaN = Config::kWarpTileN / 8;   // ... along n
  static_assert(kMmaN % 2 == 0, "B fragments are loaded two n-tiles at a time");
  // One k-step: one mma's k (16 for 16-bit elements, 8 for tf32), two 16-byte chunks of k either way.
  static constexpr int kStepK = arch::kMmaK<Element>;
  static_assert(kTileK % kStepK == 0, "TileK is a multiple of the mma's k");

  using OperandA = OperandTile<Element, typename Operands::LayoutA, true, kTileM, kTileK, kThreads>;
  using OperandB = OperandTile<Element, typename Operands::LayoutB, false, kTileN, kTileK, kThreads>;
  using Loader = typename Operands::template Loader<OperandA, OperandB>;
  static_assert(2 * OperandA::kChunkElements == kStepK, "a k-step is two 16-byte chunks of k");
  static constexpr int kStageElements = OperandA::Tile::kElements + OperandB::Tile::kElements;
  // The accumulator tile is staged as floats with 4 floats of padding per row (fewer bank conflicts,
  // rows still 16-byte aligned).
  static constexpr int kStagingLd = kTileN + 4;
  static constexpr int kStageBytes = kStageElements * static_cast<int>(sizeof(Element));
  static constexpr int kPipelineBytes = kStages * kStageBytes;
  static constexpr int kStagingBytes = kTileM * kStagingLd * static_cast<int>(sizeof(float));
  // The persistent kernel's epilogue: each warp stages 16 rows of its warp tile at a time in its own
  // slice of the ring's last stage. 8 floats of padding per row: a quarter-warp's 16-byte reads and a
  // half-warp's 8-byte writes then fall in distinct banks (warp_epilogue).
  static constexpr int kWarpStagingLd = Config::kWarpTileN + 8;
  static constexpr int kWarpStagingFloats = 16 * kWarpStagingLd;
  static constexpr int kWarps = kThreads / 32;
  static_assert(!Config::kPersistent || kStages >= 2, "the persistent kernel stages in the ring's last stage");
  static_assert(!Config::kPersistent || kWarps * kWarpStagingFloats * 4 <= kStageBytes,
                "the persistent kernel's per-warp staging slices must fit in one ring stage");
  static constexpr int kSmemBytes = Config::kPersistent ? kPipelineBytes
                                    : kPipelineBytes > kStagingBytes ? kPipelineBytes
                                                                     : kStagingBytes;

  struct Params {
    GemmCoord problem;
    typename Operands::Params operands;
    typename Epilogue::Params epilogue;
    int split_k = 1;
    index_t k_per_split = 0;        // a multiple of kTileK, so a k-tile never straddles two splits
    float* partials = nullptr;      // split_k > 1: [split][batch][m][n] fp32 partial sums
    int tiles_m = 0;
    int tiles_n = 0;
  };

  // Accumulators of one thread: kMmaM x kMmaN mma tiles of 4 floats.
  using Accumulators = float[kMmaM][kMmaN][4];

  // One k-step (kStepK) of a warp's A and B fragments.
  struct Fragments {
    cuda::std::uint32_t a[kMmaM][4];
    cuda::std::uint32_t b[kMmaN][2];
  };

  struct Lanes {
    FragmentLanes<OperandA> a;
    FragmentLanes<OperandB> b;
  };

  TILEFUSE_DEVICE static void load_fragments(Fragments& f, Lanes const& lanes, Element const* tile_a,
                                             Element const* tile_b, int warp_m0, int warp_n0, int kk) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) load_a_fragment(f.a[i], lanes.a, tile_a, warp_m0 + i * 16, kk);
#pragma unroll
    for (int j = 0; j < kMmaN; j += 2) {
      cuda::std::uint32_t pair[4];
      load_b_fragments(pair, lanes.b, tile_b, warp_n0 + j * 8, kk);
      f.b[j][0] = pair[0], f.b[j][1] = pair[1];
      f.b[j + 1][0] = pair[2], f.b[j + 1][1] = pair[3];
    }
  }

  TILEFUSE_DEVICE static void round_to_tf32(Fragments& f) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) arch::round_fragment_to_tf32<Element>(f.a[i]);
#pragma unroll
    for (int j = 0; j < kMmaN; ++j) arch::round_fragment_to_tf32<Element>(f.b[j]);
  }

  // One threadblock: which tile, its mainloop, then its epilogue; or, for a persistent config, a loop
  // over tiles (run_persistent).
  TILEFUSE_DEVICE static void run(Params const& p, char* smem) {
    if constexpr (Config::kPersistent) {
      run_persistent(p, smem);
    } else {
      Work const work = work_of(p, static_cast<int>(blockIdx.x));
      Accumulators acc;
      issue_prologue(p, smem, work);
      mainloop(p, smem, work, acc);
      auto* staging = reinterpret_cast<float*>(smem);
      stage_accumulators(acc, staging);
      if (p.split_k == 1) prefetch_epilogue_inputs(p, work.batch, work.m0, work.n0);
      __syncthreads();
      visit_epilogue(p, staging, work.batch, work.split, work.m0, work.n0);
    }
  }

 private:
  // One output tile of one batch entry and one split of K.
  struct Work {
    int batch;
    int split;
    index_t m0;
    index_t n0;
    index_t k_begin;
    index_t k_end;
  };

  TILEFUSE_DEVICE static Work work_of(Params const& p, int tile_index) {
    TileCoord const tile = GroupedRasterization<>::tile_of(tile_index, p.tiles_m, p.tiles_n);
    Work w;
    w.batch = static_cast<int>(blockIdx.z) / p.split_k;
    w.split = static_cast<int>(blockIdx.z) % p.split_k;
    w.m0 = index_t{tile.m} * kTileM;
    w.n0 = index_t{tile.n} * kTileN;
    w.k_begin = w.split * p.k_per_split;
    w.k_end = w.k_begin + p.k_per_split < p.problem.k ? w.k_begin + p.k_per_split : p.problem.k;
    return w;
  }

  TILEFUSE_DEVICE static int k_tiles_of(Work const& w) {
    return w.k_end > w.k_begin ? static_cast<int>((w.k_end - w.k_begin + kTileK - 1) / kTileK) : 0;
  }

  // The persistent schedule: the block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... of its batch
  // entry and split (blockIdx.z). Once a tile's mainloop is done, the block issues the next tile's first
  // kStages - 1 k-tiles into ring stages 0 .. kStages - 2 and runs the epilogue while they load, each
  // warp staging its accumulators in its own slice of ring stage kStages - 1: no barrier in the
  // epilogue, and the next mainloop starts on k-tiles already in shared memory.
  // NOTES: the non-persistent kernel pays this per tile as block launch, a prologue waiting on L2 / DRAM
  // and a block-wide staged epilogue (~9.5 us of a 4096^3 tile's ~88, docs/notes/gemm_sm80.md v32).
  TILEFUSE_DEVICE static void run_persistent(Params const& p, char* smem) {
    int const tiles = p.tiles_m * p.tiles_n;
    int tile_index = static_cast<int>(blockIdx.x);
    if (tile_index >= tiles) return;
    issue_prologue(p, smem, work_of(p, tile_index));
    for (;;) {
      // NOTES: only tile_index lives across the mainloop; the Work is recomputed where it is needed
      // (holding it cost the 128x256 tile 28-64 bytes of spills).
      Accumulators acc;
      mainloop(p, smem, work_of(p, tile_index), acc);
      int const next_index = tile_index + static_cast<int>(gridDim.x);
      bool const has_next = next_index < tiles;
      // Every warp has read its last fragments from the ring: all stages are free.
      arch::cp_async_wait<0>();
      __syncthreads();
      if (has_next) issue_prologue(p, smem, work_of(p, next_index));
      warp_epilogue(p, acc, reinterpret_cast<float*>(smem + (kStages - 1) * kStageBytes), work_of(p, tile_index));
      if (!has_next) return;
      // NOTES: the mainloop's first barrier (before any warp reads or refills a stage) also keeps the
      // next tile's third k-tile from landing in the staging slices while a warp still reads them.
      tile_index = next_index;
    }
  }

 static constexpr int kVectorsPerRow = kTileN / 8;

  // Writes the accumulator tile into shared memory as floats (the pipeline buffers are free once every
  // warp is done with them), so that each thread can then read 8 consecutive columns of a row.
  TILEFUSE_DEVICE static void stage_accumulators(Accumulators const& acc, float* staging) {
    arch::cp_async_wait<0>();
    __syncthreads();
    int const thread = static_cast<int>(threadIdx.x);
    int const lane = thread % 32;
    int const warp = thread / 32;
    int const warp_m0 = (warp / Config::kWarpsN) * Config::kWarpTileM;
    int const warp_n0 = (warp % Config::kWarpsN) * Config::kWarpTileN;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        int const r = warp_m0 + i * 16 + lane / 4;
        int const c = warp_n0 + j * 8 + 2 * (lane % 4);
        *reinterpret_cast<float2*>(staging + r * kStagingLd + c) = make_float2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<float2*>(staging + (r + 8) * kStagingLd + c) = make_float2(acc[i][j][2], acc[i][j][3]);
      }
    }
  }

  // Starts every global load of the epilogue (e.g. the residual) before any vector is visited, so the
  // loads overlap each other instead of stalling one vector at a time. Called after the staging, when
  // the accumulator registers are free (before it, the 128x256 tile spilled). A tree without such loads
  // compiles to nothing.
  TILEFUSE_DEVICE static void prefetch_epilogue_inputs(Params const& p, int batch, index_t m0, index_t n0) {
    for (int v = static_cast<int>(threadIdx.x); v < kTileM * kVectorsPerRow; v += kThreads) {
      epilogue::Fragment<8> f;
      f.row = m0 + v / kVectorsPerRow;
      f.col = n0 + (v % kVectorsPerRow) * 8;
      f.batch = batch;
      f.valid = f.row < p.problem.m && f.col < p.problem.n ? 1 : 0;
      Epilogue::prefetch(p.epilogue, f);
    }
  }

  // Each thread takes vectors of 8 consecutive columns of one row: visits the epilogue tree, or writes
  // the fp32 partial sums of its split for the split-K reduction.
  TILEFUSE_DEVICE static void visit_epilogue(Params const& p, float const* staging, int batch, int split, index_t m0,
                                             index_t n0) {
    for (int v = static_cast<int>(threadIdx.x); v < kTileM * kVectorsPerRow; v += kThreads) {
      int const r = v / kVectorsPerRow;
      int const c = (v % kVectorsPerRow) * 8;
      index_t const row = m0 + r;
      index_t const col = n0 + c;
      if (row >= p.problem.m || col >= p.problem.n) continue;
      epilogue::Fragment<8> f;
      float4 const lo = *reinterpret_cast<float4 const*>(staging + r * kStagingLd + c);
      float4 const hi = *reinterpret_cast<float4 const*>(staging + r * kStagingLd + c + 4);
      f.acc[0] = lo.x, f.acc[1] = lo.y, f.acc[2] = lo.z, f.acc[3] = lo.w;
      f.acc[4] = hi.x, f.acc[5] = hi.y, f.acc[6] = hi.z, f.acc[7] = hi.w;
      f.row = row;
      f.col = col;
      f.batch = batch;
      f.valid = p.problem.n - col < 8 ? static_cast<int>(p.problem.n - col) : 8;
      write_fragment(p, f, split);
    }
  }

  // The persistent kernel's epilogue, warp by warp: 16 accumulator rows of the warp tile at a time go
  // into the warp's staging slice, then each lane visits vectors of 8 consecutive columns of a row
  // (the tree, or the split-K partials). Only __syncwarp: warps leave for the next tile on their own.
  TILEFUSE_DEVICE static void warp_epilogue(Params const& p, Accumulators const& acc, float* staging, Work const& w) {
    int const lane = static_cast<int>(threadIdx.x) % 32;
    int const warp = static_cast<int>(threadIdx.x) / 32;
    float* slice = staging + warp * kWarpStagingFloats;
    index_t const warp_row0 = w.m0 + (warp / Config::kWarpsN) * Config::kWarpTileM;
    index_t const warp_col0 = w.n0 + (warp % Config::kWarpsN) * Config::kWarpTileN;
    constexpr int kVectorsPerWarpRow = Config::kWarpTileN / 8;
    if (p.split_k == 1) {
      for (int v = lane; v < Config::kWarpTileM * kVectorsPerWarpRow; v += 32) {
        epilogue::Fragment<8> f;
        f.row = warp_row0 + v / kVectorsPerWarpRow;
        f.col = warp_col0 + (v % kVectorsPerWarpRow) * 8;
        f.batch = w.batch;
        f.valid = f.row < p.problem.m && f.col < p.problem.n ? 1 : 0;
        Epilogue::prefetch(p.epilogue, f);
      }
    }
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
#pragma unroll
      for (int j = 0; j < kMmaN; ++j) {
        int const r = lane / 4;
        int const c = j * 8 + 2 * (lane % 4);
        *reinterpret_cast<float2*>(slice + r * kWarpStagingLd + c) = make_float2(acc[i][j][0], acc[i][j][1]);
        *reinterpret_cast<float2*>(slice + (r + 8) * kWarpStagingLd + c) = make_float2(acc[i][j][2], acc[i][j][3]);
      }
      __syncwarp();
#pragma unroll
      for (int v = lane; v < 16 * kVectorsPerWarpRow; v += 32) {
        int const r = v / kVectorsPerWarpRow;
        int const c = (v % kVectorsPerWarpRow) * 8;
        index_t const row = warp_row0 + i * 16 + r;
        index_t const col = warp_col0 + c;
        if (row >= p.problem.m || col >= p.problem.n) continue;
        // Vectors 4-7 of a row read their upper half first, so the 8 lanes of a quarter-warp cover all
        // 32 banks in each of the two reads.
        int const first = (v % kVectorsPerWarpRow) & 4;
        float4 const x = *reinterpret_cast<float4 const*>(slice + r * kWarpStagingLd + c + first);
        float4 const y = *reinterpret_cast<float4 const*>(slice + r * kWarpStagingLd + c + (4 - first));
        float4 const lo = first == 0 ? x : y;
        float4 const hi = first == 0 ? y : x;
        epilogue::Fragment<8> f;
        f.acc[0] = lo.x, f.acc[1] = lo.y, f.acc[2] = lo.z, f.acc[3] = lo.w;
        f.acc[4] = hi.x, f.acc[5] = hi.y, f.acc[6] = hi.z, f.acc[7] = hi.w;
        f.row = row;
        f.col = col;
        f.batch = w.batch;
        f.valid = p.problem.n - col < 8 ? static_cast<int>(p.problem.n - col) : 8;
        write_fragment(p, f, w.split);
      }
      __syncwarp();
    }
  }

  // A visited vector: through the tree, or as fp32 partial sums of its split for the split-K reduction.
  TILEFUSE_DEVICE static void write_fragment(Params const& p, epilogue::Fragment<8>& f, int split) {
    if (p.split_k == 1) {
      epilogue::evaluate<Epilogue>(p.epilogue, f);
    } else {
      float* out = p.partials + ((index_t{split} * p.problem.batch + f.batch) * p.problem.m + f.row) * p.problem.n + f.col;
      for (int i = 0; i < 8; ++i) {
        if (i < f.valid) out[i] = f.acc[i];
      }
    }
  }

  TILEFUSE_DEVICE static Element* stage_a(char* smem, int s) {
    return reinterpret_cast<Element*>(smem) + s * kStageElements;
  }
  TILEFUSE_DEVICE static Element* stage_b(char* smem, int s) {
    return reinterpret_cast<Element*>(smem) + s * kStageElements + OperandA::Tile::kElements;
  }

  // Issues k-tile `k_tile` of the work's K range into its ring stage, and commits.
  TILEFUSE_DEVICE static void load_stage(Params const& p, char* smem, Loader const& loader, Work const& w,
                                         int k_tile, int k_tiles) {
    int const s = k_tile % kStages;
    if (k_tile < k_tiles) {
      loader.load(p.operands, stage_a(smem, s), stage_b(smem, s), w.k_begin + index_t{k_tile} * kTileK, w.k_end);
    }
    // NOTES: commit even when nothing was issued, so that wait<kStages - 2> in the mainloop always
    // refers to the group of the stage about to be read.
    arch::cp_async_commit();
  }

  // The work's first kStages - 1 k-tiles, into ring stages 0 .. kStages - 2.
  TILEFUSE_DEVICE static void issue_prologue(Params const& p, char* smem, Work const& w) {
    Loader const loader(p.operands, p.problem, w.batch, w.m0, w.n0, static_cast<int>(threadIdx.x));
    int const k_tiles = k_tiles_of(w);
    for (int s = 0; s < kStages - 1; ++s) load_stage(p, smem, loader, w, s, k_tiles);
  }

  // acc = A[m0:, k_begin:k_end] * B[k_begin:k_end, n0:] for the work's tile, its prologue issued.
  TILEFUSE_DEVICE static void mainloop(Params const& p, char* smem, Work const& w, Accumulators& acc) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    int const thread = static_cast<int>(threadIdx.x);
    Loader const loader(p.operands, p.problem, w.batch, w.m0, w.n0, thread);
    int const k_tiles = k_tiles_of(w);
    index_t const k_begin = w.k_begin;
    int const lane = thread % 32;
    int const warp = thread / 32;
    int const warp_m0 = (warp / Config::kWarpsN) * Config::kWarpTileM;
    int const warp_n0 = (warp % Config::kWarpsN) * Config::kWarpTileN;
    Lanes const lanes{FragmentLanes<OperandA>(lane), FragmentLanes<OperandB>(lane)};
    constexpr int kSteps = kTileK / kStepK;

    // Fragments are double-buffered: while the mmas of one k-step run, the ldmatrix of the next one
    // (in this k-tile or, at the last step, in the next) is already in flight.
    Fragments frag[2];
    int buffer = 0;
    if (k_tiles > 0) {
      arch::cp_async_wait<kStages - 2>();
      loader.prepare_stage(p.operands, stage_a(smem, 0), stage_b(smem, 0), k_begin);
      __syncthreads();
      load_fragments(frag[0], lanes, stage_a(smem, 0), stage_b(smem, 0), warp_m0, warp_n0, 0);
    }
    for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
      // NOTES: the stage this overwrites was last read in the previous k-tile, before the barrier at
      // its last step, so every warp is done with it.
      load_stage(p, smem, loader, w, k_tile + kStages - 1, k_tiles);
      int const s = k_tile % kStages;
      int const next = (k_tile + 1) % kStages;
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        if (step + 1 < kSteps) {
          load_fragments(frag[buffer ^ 1], lanes, stage_a(smem, s), stage_b(smem, s), warp_m0, warp_n0,
                         (step + 1) * kStepK);
        } else {
          // The next k-tile must have landed (its group is kStages - 2 behind the newest) and be
          // visible to every warp before its first fragments are read.
          arch::cp_async_wait<kStages - 2>();
          if (k_tile + 1 < k_tiles) {
            loader.prepare_stage(p.operands, stage_a(smem, next), stage_b(smem, next),
                                 k_begin + index_t{k_tile + 1} * kTileK);
          }
          __syncthreads();
          if (k_tile + 1 < k_tiles) {
            load_fragments(frag[buffer ^ 1], lanes, stage_a(smem, next), stage_b(smem, next), warp_m0, warp_n0, 0);
          }
        }
        Fragments& f = frag[buffer];
        // float inputs: round this step's fragments to tf32 now that their loads have landed (a
        // no-op for tfloat32_t and 16-bit inputs).
        round_to_tf32(f);
#pragma unroll
        for (int i = 0; i < kMmaM; ++i)
#pragma unroll
          for (int j = 0; j < kMmaN; ++j) arch::mma_m16n8<Element>(acc[i][j], f.a[i], f.b[j]);
        buffer ^= 1;
      }
    }
  }
};

// The plain GEMM: A and B are strided, batched matrices. kAligned: 16-byte cp.async copies (the
// device API checked pointers and leading dimensions); otherwise element-wise copies.
template <class Element, class LayoutA, class LayoutB, class Epilogue, class Config, bool kAligned>
struct GemmKernel : TiledKernel<Element, DenseOperands<Element, LayoutA, LayoutB, kAligned>, Epilogue, Config> {};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, Kernel::kMinBlocksPerSm) sm80_gemm_kernel(__grid_constant__ typename Kernel::Params const params) {
  extern __shared__ __align__(128) char smem[];
  Kernel::run(params, smem);
}

}  // namespace tilefuse::gemm::sm80
