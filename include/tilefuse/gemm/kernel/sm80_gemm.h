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
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/mma_sm80.h>
#include <tilefuse/core/array.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm80_dense_operands.h>
#include <tilefuse/gemm/kernel/sm80_epilogue_staging.h>
#include <tilefuse/gemm/kernel/sm80_smem_tile.h>
#include <tilefuse/gemm/kernel/tile_scheduler.h>

namespace tilefuse::gemm::sm80 {

// kEpilogueLoadBatch, which a Config may carry (bench/gemm/tune_sm80.cu measures it; absent: 4): vectors whose
// tree loads are issued together (visit_epilogue). NOTES: batches of 8 or 16 ran slower than 4, and prefetching
// the residual to L2 before or after the staging ran equal or 1.6-1.9% slower than not (that option was
// deleted; docs/notes/gemm_sm80.md, the epilogue's loads batched).
template <class Config>
TILEFUSE_HOST_DEVICE constexpr int epilogue_load_batch() {
  if constexpr (requires { Config::kEpilogueLoadBatch; }) {
    return Config::kEpilogueLoadBatch;
  } else {
    return 4;
  }
}

// Operand sources that load by TMA (sm80_tma_operands.h) instead of cp.async.
template <class Operands>
TILEFUSE_HOST_DEVICE constexpr bool loads_by_tma() {
  if constexpr (requires { Operands::kLoadsByTma; }) {
    return Operands::kLoadsByTma;
  } else {
    return false;
  }
}

// The kernel over any operand source (sm80_dense_operands.h: strided matrices; the convolution's
// gathers in conv/kernel/): only how k-tiles reach shared memory differs.
template <class Element_, class Operands, class Epilogue, class Config>
struct TiledKernel {
  using Element = Element_;
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
  // The accumulator tile is staged as floats, rows padded so that its writes and reads are free of
  // bank conflicts (sm80_epilogue_staging.h).
  static constexpr int kStagingLd = staging_ld(kTileN);
  static constexpr int kPipelineBytes = kStages * kStageElements * static_cast<int>(sizeof(Element));
  static constexpr int kStagingBytes = kTileM * kStagingLd * static_cast<int>(sizeof(float));
  // TMA operands: one mbarrier per stage after the pipeline and the staging, and the base aligned to
  // 1024 bytes by hand (the 128-byte swizzle of the stages needs it).
  static constexpr bool kLoadsByTma = loads_by_tma<Operands>();
  static constexpr int kDataBytes = kPipelineBytes > kStagingBytes ? kPipelineBytes : kStagingBytes;
  static constexpr int kBarrierOffset = (kDataBytes + 7) / 8 * 8;
  static constexpr int kSmemAlignment = kLoadsByTma ? 1024 : 128;
  static constexpr int kSmemBytes = kLoadsByTma ? kBarrierOffset + kStages * 8 + kSmemAlignment : kDataBytes;
  static_assert(!kLoadsByTma || (OperandA::Tile::kElements * sizeof(Element)) % 1024 == 0,
                "TMA stages stay 1024-byte aligned");

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

  // One threadblock: which tile, its mainloop, then its epilogue.
  TILEFUSE_DEVICE static void run(Params const& p, char* smem_base) {
    char* const smem = align_smem(smem_base);
    TileCoord const tile = GroupedRasterization<>::tile_of(static_cast<int>(blockIdx.x), p.tiles_m, p.tiles_n);
    int const batch = static_cast<int>(blockIdx.z) / p.split_k;
    int const split = static_cast<int>(blockIdx.z) % p.split_k;
    index_t const m0 = index_t{tile.m} * kTileM;
    index_t const n0 = index_t{tile.n} * kTileN;
    index_t const k_begin = split * p.k_per_split;
    index_t const k_end = k_begin + p.k_per_split < p.problem.k ? k_begin + p.k_per_split : p.problem.k;

    Accumulators acc;
    mainloop(p, smem, batch, m0, n0, k_begin, k_end, acc);
    auto* staging = reinterpret_cast<float*>(smem);
    stage_accumulators(acc, staging);
    __syncthreads();
    visit_epilogue(p, staging, batch, split, m0, n0);
  }

 private:
  static constexpr int kVectorsPerRow = kTileN / 8;

  TILEFUSE_DEVICE static char* align_smem(char* base) {
    if constexpr (kLoadsByTma) {
      auto const address = reinterpret_cast<cuda::std::uintptr_t>(base);
      return base + ((kSmemAlignment - address % kSmemAlignment) % kSmemAlignment);
    } else {
      return base;
    }
  }

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

  // Each thread takes vectors of 8 consecutive columns of one row: visits the epilogue tree, or writes
  // the fp32 partial sums of its split for the split-K reduction. Vectors go kLoadBatch at a time: the
  // tree's loads (residual, bias) of all of them are issued before the first is visited, so their
  // latencies overlap instead of adding up (the compiler cannot hoist a load above the previous
  // vector's store to D, which may alias it). A batch holds only its loads, as stored (32-bit words,
  // epilogue/stored_row.h); each vector's accumulators are read from the staging when it is visited.
  // NOTES: until the loads were held as words, ptxas unpacked each vector's bf16 right after its load,
  // so the batch waited vector by vector and its size made no difference (docs/notes/gemm_sm80.md).
  static constexpr int kLoadBatch = epilogue_load_batch<Config>();

  // The vector's coordinates and how many of its columns lie inside the output.
  TILEFUSE_DEVICE static epilogue::Fragment<8> fragment_at(Params const& p, int v, int batch, index_t m0, index_t n0) {
    epilogue::Fragment<8> f;
    f.row = m0 + v / kVectorsPerRow;
    f.col = n0 + (v % kVectorsPerRow) * 8;
    f.batch = batch;
    f.valid = p.problem.n - f.col < 8 ? static_cast<int>(p.problem.n - f.col) : 8;
    return f;
  }

  // The vector's 8 accumulators from the staging (two float4, in the conflict-free order).
  TILEFUSE_DEVICE static void read_staged(epilogue::Fragment<8>& f, float const* staging, int v) {
    int const r = v / kVectorsPerRow;
    int const c = (v % kVectorsPerRow) * 8;
    int const first = first_half_read(v % 32);
    float4 const x = *reinterpret_cast<float4 const*>(staging + r * kStagingLd + c + first);
    float4 const y = *reinterpret_cast<float4 const*>(staging + r * kStagingLd + c + (4 - first));
    float4 const lo = first == 0 ? x : y;
    float4 const hi = first == 0 ? y : x;
    f.acc[0] = lo.x, f.acc[1] = lo.y, f.acc[2] = lo.z, f.acc[3] = lo.w;
    f.acc[4] = hi.x, f.acc[5] = hi.y, f.acc[6] = hi.z, f.acc[7] = hi.w;
  }

  TILEFUSE_DEVICE static void visit_epilogue(Params const& p, float const* staging, int batch, int split, index_t m0,
                                             index_t n0) {
    constexpr int kVectors = kTileM * kVectorsPerRow;
    for (int v0 = static_cast<int>(threadIdx.x); v0 < kVectors; v0 += kThreads * kLoadBatch) {
      typename Epilogue::template Loaded<8> loaded[kLoadBatch];
      if (p.split_k == 1) {
#pragma unroll
        for (int i = 0; i < kLoadBatch; ++i) {
          int const v = v0 + i * kThreads;
          if (v >= kVectors) continue;
          epilogue::Fragment<8> const f = fragment_at(p, v, batch, m0, n0);
          if (f.row < p.problem.m && f.col < p.problem.n) loaded[i] = Epilogue::load(p.epilogue, f);
        }
      }
#pragma unroll
      for (int i = 0; i < kLoadBatch; ++i) {
        int const v = v0 + i * kThreads;
        if (v >= kVectors) continue;
        epilogue::Fragment<8> f = fragment_at(p, v, batch, m0, n0);
        if (f.row >= p.problem.m || f.col >= p.problem.n) continue;
        read_staged(f, staging, v);
        if (p.split_k == 1) {
          (void)Epilogue::visit(p.epilogue, f, loaded[i]);
        } else {
          float* out = p.partials +
                       ((index_t{split} * p.problem.batch + batch) * p.problem.m + f.row) * p.problem.n + f.col;
          for (int e = 0; e < 8; ++e) {
            if (e < f.valid) out[e] = f.acc[e];
          }
        }
      }
    }
  }

  // acc = A[m0:, k_begin:k_end] * B[k_begin:k_end, n0:] for this block's tile.
  TILEFUSE_DEVICE static void mainloop(Params const& p, char* smem, int batch, index_t m0, index_t n0,
                                       index_t k_begin, index_t k_end, Accumulators& acc) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    auto* stages = reinterpret_cast<Element*>(smem);  // (stage, A tile then B tile)
    auto stage_a = [&](int s) { return stages + s * kStageElements; };
    auto stage_b = [&](int s) { return stages + s * kStageElements + OperandA::Tile::kElements; };

    int const thread = static_cast<int>(threadIdx.x);
    Loader const loader(p.operands, p.problem, batch, m0, n0, thread);
    int const k_tiles = k_end > k_begin ? static_cast<int>((k_end - k_begin + kTileK - 1) / kTileK) : 0;

    auto* full = reinterpret_cast<cuda::std::uint64_t*>(smem + kBarrierOffset);  // TMA: one per stage
    if constexpr (kLoadsByTma) {
      if (thread == 0) {
        Operands::prefetch(p.operands);
        for (int s = 0; s < kStages; ++s) arch::mbarrier_init(&full[s], 1);
        arch::fence_barrier_init();
      }
      __syncthreads();
    }

    auto load_stage = [&](int k_tile) {
      int const s = k_tile % kStages;
      if constexpr (kLoadsByTma) {
        if (thread == 0 && k_tile < k_tiles) {
          loader.load(p.operands, stage_a(s), stage_b(s), &full[s], k_begin + index_t{k_tile} * kTileK);
        }
      } else {
        if (k_tile < k_tiles) {
          loader.load(p.operands, stage_a(s), stage_b(s), k_begin + index_t{k_tile} * kTileK, k_end);
        }
        // NOTES: commit even when nothing was issued, so that wait<kStages - 2> below always refers to
        // the group of the stage about to be read.
        arch::cp_async_commit();
      }
    };
    // Waits until k-tile `k_tile`'s copies have landed (the block's barrier after it makes them visible
    // to every warp): its TMA stage barrier's phase, or the cp.async group kStages - 2 behind the newest.
    auto wait_stage = [&](int k_tile) {
      if constexpr (kLoadsByTma) {
        arch::mbarrier_wait(&full[k_tile % kStages], static_cast<cuda::std::uint32_t>((k_tile / kStages) & 1));
      } else {
        arch::cp_async_wait<kStages - 2>();
      }
    };

    for (int s = 0; s < kStages - 1; ++s) load_stage(s);

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
      wait_stage(0);
      loader.prepare_stage(p.operands, stage_a(0), stage_b(0), k_begin);
      __syncthreads();
      load_fragments(frag[0], lanes, stage_a(0), stage_b(0), warp_m0, warp_n0, 0);
    }
    for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
      // NOTES: the stage this overwrites was last read in the previous k-tile, before the barrier at
      // its last step, so every warp is done with it.
      load_stage(k_tile + kStages - 1);
      int const s = k_tile % kStages;
      int const next = (k_tile + 1) % kStages;
#pragma unroll
      for (int step = 0; step < kSteps; ++step) {
        if (step + 1 < kSteps) {
          load_fragments(frag[buffer ^ 1], lanes, stage_a(s), stage_b(s), warp_m0, warp_n0, (step + 1) * kStepK);
        } else {
          // The next k-tile must have landed and be visible to every warp before its first fragments
          // are read.
          if (k_tile + 1 < k_tiles) wait_stage(k_tile + 1);
          if (k_tile + 1 < k_tiles) {
            loader.prepare_stage(p.operands, stage_a(next), stage_b(next), k_begin + index_t{k_tile + 1} * kTileK);
          }
          __syncthreads();
          if (k_tile + 1 < k_tiles) {
            load_fragments(frag[buffer ^ 1], lanes, stage_a(next), stage_b(next), warp_m0, warp_n0, 0);
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
