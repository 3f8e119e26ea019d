// The WGMMA mainloop of the Hopper kernel: a consumer warpgroup's k-tiles of one tile, read from the ring's
// stages into fp32 accumulators by wgmma (K-major or MN-major operands, bf16 / fp16 / FP8), each stage released
// to the producer once its wgmmas are done; with FP8 promotion (Config::kPromoteEveryKTile) each k-tile (or
// interval) accumulates into a partial set that is added into the accumulators in fp32, times the block scales
// when block-scaled, two sets alternating when the promotion overlaps the next k-tile's wgmmas. A part of
// gemm::sm90::GemmKernel (sm90_gemm.h), which calls issue() and drain() per tile.
#pragma once

#include <cuda/std/concepts>
#include <cuda/std/cstdint>

#include <tilefuse/arch/cluster.h>
#include <tilefuse/arch/mbarrier.h>
#include <tilefuse/arch/wgmma.h>
#include <tilefuse/arch/wgmma_fp8.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

// Whether a promoted mainloop keeps two partial sets (the next k-tile's wgmmas run while the previous
// k-tile is promoted); Sm90PromotionInLine turns it off.
template <class Config>
TILEFUSE_HOST_DEVICE constexpr bool overlaps_promotion() {
  if constexpr (requires { Config::kOverlapPromotion; }) {
    return Config::kOverlapPromotion;
  } else {
    return true;
  }
}

// Whether the mainloop alternates two accumulator sets across a k-tile's wgmmas (Config::kTwoChains).
template <class Config>
TILEFUSE_HOST_DEVICE constexpr bool two_chains() {
  if constexpr (requires { Config::kTwoChains; }) {
    return Config::kTwoChains;
  } else {
    return false;
  }
}

// What the mainloop reads of the kernel it runs in: the tile, the ring, the operands' majors and the
// promotion, and the shared storage's stages and barriers.
template <class K>
concept WgmmaMainloopKernel = requires(typename K::SharedStorage const& s) {
  typename K::Element;
  typename K::ElementB;
  typename K::OperandSource;
  typename K::PipelineState;
  requires K::kTileM % 64 == 0 && K::kTileN % 8 == 0 && K::kStages >= 2;
  K::kFp8;
  K::kRowBlocks;
  K::kAccumulators;
  K::kWarpgroupRows;
  K::kRowBytes;
  K::kMmaK;
  K::kPromote;
  K::kPromoteInterval;
  K::kOverlapPromotion;
  K::kTwoChains;
  K::kBlockScaled;
  K::kScaleFloatsPerStage;
  K::kClusterM;
  K::kPingPong;
  K::kAMnMajor;
  K::kBMnMajor;
  { s.a } -> cuda::std::convertible_to<char const*>;
  { s.b } -> cuda::std::convertible_to<char const*>;
  { s.full } -> cuda::std::convertible_to<cuda::std::uint64_t const*>;
  { s.scales } -> cuda::std::convertible_to<float const*>;
};

template <WgmmaMainloopKernel K>
struct WgmmaMainloop {
  using Element = typename K::Element;
  using ElementB = typename K::ElementB;
  using Operands = typename K::OperandSource;
  using SharedStorage = typename K::SharedStorage;
  using PipelineState = typename K::PipelineState;
  static constexpr bool kFp8 = K::kFp8;
  static constexpr int kTileM = K::kTileM;
  static constexpr int kTileN = K::kTileN;
  static constexpr int kTileK = K::kTileK;
  static constexpr int kStages = K::kStages;
  static constexpr int kRowBlocks = K::kRowBlocks;
  static constexpr int kAccumulators = K::kAccumulators;
  static constexpr int kWarpgroupRows = K::kWarpgroupRows;
  static constexpr int kRowBytes = K::kRowBytes;
  static constexpr int kABytes = K::kABytes;
  static constexpr int kBBytes = K::kBBytes;
  static constexpr int kMmaK = K::kMmaK;
  static constexpr bool kPromote = K::kPromote;
  static constexpr int kPromoteInterval = K::kPromoteInterval;
  static constexpr bool kOverlapPromotion = K::kOverlapPromotion;
  static constexpr bool kTwoChains = K::kTwoChains;
  static constexpr bool kBlockScaled = K::kBlockScaled;
  static constexpr int kScaleFloatsPerStage = K::kScaleFloatsPerStage;
  static constexpr int kClusterM = K::kClusterM;
  static constexpr bool kPingPong = K::kPingPong;
  static constexpr bool kAMnMajor = K::kAMnMajor;
  static constexpr bool kBMnMajor = K::kBMnMajor;

  // Issues acc = A[this warpgroup's rows of the tile, :] * B[:, tile columns] over all k-tiles of one
  // tile, keeping the last k-tile's wgmmas in flight (drain waits for them). On return,
  // `state` is one past the last k-tile.
  // Two chains (Config::kTwoChains, the 64x64 ping-pong tile): a k-tile's even wgmmas go into one set and its odd
  // ones into another, so that consecutive wgmmas do not wait for each other's sums; acc = their sum once the last
  // k-tile is done. acc itself is then never a wgmma accumulator: ptxas serializes every wgmma (C7515) when other
  // code defines a wgmma's accumulators (docs/notes/gemm_sm90.md, small tiles' k-tile cost).
  TILEFUSE_DEVICE static void issue(SharedStorage const& s, int consumer_warpgroup, int warp_in_group,
                                             int lane, int k_count, PipelineState& state,
                                             float (&acc)[kRowBlocks][kAccumulators]) {
    if constexpr (kPromote) {
      promoted(s, consumer_warpgroup, warp_in_group, lane, k_count, state, acc);
      return;
    }
    int const row0 = kPingPong ? 0 : consumer_warpgroup * kWarpgroupRows;
    if constexpr (kTwoChains) {
      float even[kRowBlocks][kAccumulators];
      float odd[kRowBlocks][kAccumulators];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) {
#pragma unroll
        for (int i = 0; i < kAccumulators; ++i) even[rb][i] = odd[rb][i] = 0.0f;
      }
      issue_ktiles(s, row0, lane, k_count, state, even, odd);
      arch::wgmma_wait<0>();
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) {
        fence_sets(even[rb], odd[rb]);
#pragma unroll
        for (int i = 0; i < kAccumulators; ++i) acc[rb][i] = even[rb][i] + odd[rb][i];
      }
    } else {
      issue_ktiles(s, row0, lane, k_count, state, acc, acc);
    }
  }

  // The k-tiles' wgmmas into `first` (with two chains, alternately into `second`), each stage released once the
  // next k-tile's wgmmas are issued and its own are done.
  TILEFUSE_DEVICE static void issue_ktiles(SharedStorage const& s, int row0, int lane, int k_count, PipelineState& state,
                                           float (&first)[kRowBlocks][kAccumulators],
                                           float (&second)[kRowBlocks][kAccumulators]) {
    PipelineState previous = state;
    for (int kt = 0; kt < k_count; ++kt) {
      issue_ktile(s, state, row0, kt > 0, first, second);
      // Keep this k-tile's wgmmas in flight; the previous k-tile's are done after this wait, so its
      // stage can go back to the producer.
      arch::wgmma_wait<1>();
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) fence_sets(first[rb], second[rb]);
      if (kt > 0) release(s, previous.stage, lane);
      previous = state;
      state.advance();
    }
  }

  // The accumulator sets of a row block as operands of the wgmmas around them (the second only with two chains).
  TILEFUSE_DEVICE static void fence_sets(float (&first)[kAccumulators], float (&second)[kAccumulators]) {
    arch::fence_operands(first);
    if constexpr (kTwoChains) arch::fence_operands(second);
  }

  // Waits until the stage of `state` is full, then issues and commits the k-tile's wgmmas on it into
  // this warpgroup's row blocks of `acc` (from zero at the first k-step unless `accumulate`); with two chains,
  // its odd wgmmas into `odd` (both sets start from zero, so they always accumulate).
  TILEFUSE_DEVICE static void issue_ktile(SharedStorage const& s, PipelineState const& state, int row0, bool accumulate,
                                          float (&acc)[kRowBlocks][kAccumulators],
                                          float (&odd)[kRowBlocks][kAccumulators]) {
    arch::mbarrier_wait(&s.full[state.stage], state.phase);
    __syncwarp();  // wgmma is .aligned: the warp must be converged after the spin
    // A stage written by cp.async (the generic proxy) is read by wgmma (the async proxy).
    if constexpr (Operands::kGenericProxyWrites) arch::fence_proxy_async_shared();
    char const* const b = s.b + state.stage * kBBytes;
    cuda::std::uint64_t const desc_b = kBMnMajor ? arch::smem_descriptor_mn_major_sw128(b, kTileK * 128)
                                                 : arch::smem_descriptor_k_major<kRowBytes>(b);
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) fence_sets(acc[rb], odd[rb]);
    arch::wgmma_fence();
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) {
      // K-major: rows of the tile are 128-byte rows; MN-major: each 64 rows are one block of TileK rows.
      char const* const a = s.a + state.stage * kABytes + (row0 + rb * 64) * kRowBytes;
      cuda::std::uint64_t const desc_a = kAMnMajor ? arch::smem_descriptor_mn_major_sw128(a, kTileK * 128)
                                                   : arch::smem_descriptor_k_major<kRowBytes>(a);
#pragma unroll
      for (int kk = 0; kk < kTileK / kMmaK; ++kk) {
        // One wgmma's K = 32 bytes further along the (swizzled) 128- or 64-byte row: +2 in the
        // descriptor's address field (bytes >> 4). An MN-major operand steps kMmaK whole 128-byte rows.
        auto const step = static_cast<cuda::std::uint32_t>((kk * kMmaK * static_cast<int>(sizeof(Element))) >> 4);
        auto const step_rows = static_cast<cuda::std::uint32_t>((kk * kMmaK * 128) >> 4);
        cuda::std::uint64_t const da = arch::descriptor_advanced(desc_a, kAMnMajor ? step_rows : step);
        cuda::std::uint64_t const db = arch::descriptor_advanced(desc_b, kBMnMajor ? step_rows : step);
        if (kTwoChains && kk % 2 == 1) {
          mma(odd[rb], da, db, 1);
        } else {
          mma(acc[rb], da, db, kTwoChains || accumulate || kk > 0 ? 1 : 0);
        }
      }
    }
    arch::wgmma_commit();
  }

  TILEFUSE_DEVICE static void mma(float (&acc)[kAccumulators], cuda::std::uint64_t desc_a, cuda::std::uint64_t desc_b,
                                  int scale_d) {
    if constexpr (kFp8) {
      arch::wgmma_m64k32<Element, ElementB, kTileN>(acc, desc_a, desc_b, scale_d);
    } else {
      arch::wgmma_m64k16<Element, kTileN, kBMnMajor ? 1 : 0, kAMnMajor ? 1 : 0>(acc, desc_a, desc_b, scale_d);
    }
  }

  // The same with promotion (Config::kPromoteEveryKTile): each k-tile's wgmmas start from zero in a
  // partial set, run to completion, release the stage and are added into `acc` in fp32 (times the
  // k-tile's scales when block-scaled). With kOverlapPromotion two partial sets alternate: k-tile t + 1's
  // wgmmas are issued into one before k-tile t's, in the other, are waited for (wgmma_wait<1>) and
  // promoted, so the tensor cores have the next k-tile while this warpgroup promotes.
  // NOTES: with one set (Sm90PromotionInLine) each warpgroup's tensor-core work stops during its
  // promotion and only the other warpgroup's k-tile covers it: 8192^3 per-tensor promoted 1070 TFLOP/s
  // with one set, 1146 with two (docs/notes/gemm_fp8.md). ptxas serializes every wgmma (C7514) if a
  // branch leaves an issued k-tile without its wait or the sets are not named statically; every branch
  // here holds whole issue-wait pairs, and CTest compile.sm90_wgmma_pipelines checks the result.
  TILEFUSE_DEVICE static void promoted(SharedStorage const& s, int consumer_warpgroup, int warp_in_group,
                                                int lane, int k_count, PipelineState& state,
                                                float (&acc)[kRowBlocks][kAccumulators]) {
    int const row0 = kPingPong ? 0 : consumer_warpgroup * kWarpgroupRows;
    float partial[kRowBlocks][kAccumulators];
    float other[kRowBlocks][kAccumulators];  // the second set (kOverlapPromotion only)
    // Block-wise scales: this thread's rows of the tile (lane / 4 and lane / 4 + 8 of its warp's 16 in
    // each row block), whose scales it reads from the stage's slot.
    int scale_rows[kRowBlocks][2];
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) scale_rows[rb][h] = row0 + rb * 64 + warp_in_group * 16 + lane / 4 + 8 * h;
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) acc[rb][i] = 0.0f;
    }
    // Issues the next k-tile's wgmmas into `into` (from zero unless `accumulate`) and advances `state`;
    // returns the k-tile's stage.
    auto const issue_next = [&](float (&into)[kRowBlocks][kAccumulators], bool accumulate) {
      issue_ktile(s, state, row0, accumulate, into, into);
      int const stage = state.stage;
      state.advance();
      return stage;
    };
    if constexpr (kOverlapPromotion) {
      if (k_count == 0) return;
      Issued even{issue_next(partial, false), {}};
      even.scale = stage_scales(s, even.stage, scale_rows);
      Issued odd{};
      int kt = 0;
      for (; kt + 2 < k_count; kt += 2) {
        promote_overlapped(s, issue_next, partial, even, other, odd, true, acc, scale_rows, lane);
        promote_overlapped(s, issue_next, other, odd, partial, even, true, acc, scale_rows, lane);
      }
      if (kt + 2 == k_count) {
        promote_overlapped(s, issue_next, partial, even, other, odd, true, acc, scale_rows, lane);
        promote_overlapped(s, issue_next, other, odd, partial, even, false, acc, scale_rows, lane);
      } else {
        promote_overlapped(s, issue_next, partial, even, other, odd, false, acc, scale_rows, lane);
      }
    } else {
      static_assert(!kBlockScaled || kPromoteInterval == 1, "block-wise scales change every k-tile");
      int kt = 0;
      // Whole promotion intervals: no branch between the wgmmas and their wait (a conditional wait made
      // ptxas serialize every wgmma, C7518).
      for (; kt + kPromoteInterval <= k_count; kt += kPromoteInterval) {
        int stages[kPromoteInterval];
#pragma unroll
        for (int j = 0; j < kPromoteInterval; ++j) stages[j] = issue_next(partial, j > 0);
        StageScales const scale = stage_scales(s, stages[kPromoteInterval - 1], scale_rows);
        arch::wgmma_wait<0>();
#pragma unroll
        for (int j = 0; j + 1 < kPromoteInterval; ++j) release(s, stages[j], lane);
        promote_and_release(s, partial, acc, scale, stages[kPromoteInterval - 1], lane);
      }
      // The rest (k_count not a multiple of the interval): one k-tile per promotion.
      for (; kt < k_count; ++kt) {
        int const stage = issue_next(partial, false);
        StageScales const scale = stage_scales(s, stage, scale_rows);
        arch::wgmma_wait<0>();
        promote_and_release(s, partial, acc, scale, stage, lane);
      }
    }
  }

  // scale_a[row, kb] * scale_b[kb, tile column] for this thread's rows, read from the stage's slot
  // (block-scaled; nothing otherwise).
  struct StageScales {
    float of[kRowBlocks][2];
  };
  TILEFUSE_DEVICE static StageScales stage_scales(SharedStorage const& s, int stage, int const (&rows)[kRowBlocks][2]) {
    StageScales out{};
    if constexpr (kBlockScaled) {
      float const* const slot = s.scales + stage * kScaleFloatsPerStage;
      float const b = slot[kTileM];
#pragma unroll
      for (int rb = 0; rb < kRowBlocks; ++rb) {
#pragma unroll
        for (int h = 0; h < 2; ++h) out.of[rb][h] = slot[rows[rb][h]] * b;
      }
    } else {
      (void)s, (void)stage, (void)rows;
    }
    return out;
  }

  // A k-tile in flight in one partial set: its stage, and its scales (read as soon as it is issued).
  struct Issued {
    int stage;
    StageScales scale;
  };

  // One k-tile of the overlapped promotion: `now` holds k-tile t's wgmmas (issued, maybe still running).
  // Unless this is the last k-tile (`issue_next` false), issues k-tile t + 1 into `next` first, reads its
  // scales, and waits only for k-tile t. Then promotes `now` and releases its stage.
  // NOTES: with k-tile t's scales read only here, just before its promotion, the scale products waited
  // on the loads (ncu: 8% of the block-scaled kernel's stall samples on those FMULs; docs/notes/gemm_fp8.md).
  template <class Issue>
  TILEFUSE_DEVICE TILEFUSE_FORCEINLINE static void promote_overlapped(
      SharedStorage const& s, Issue const& issue, float (&now)[kRowBlocks][kAccumulators], Issued const& now_tile,
      float (&next)[kRowBlocks][kAccumulators], Issued& next_tile, bool issue_next,
      float (&acc)[kRowBlocks][kAccumulators], int const (&scale_rows)[kRowBlocks][2], int lane) {
    if (issue_next) {
      next_tile.stage = issue(next, false);
      next_tile.scale = stage_scales(s, next_tile.stage, scale_rows);
      arch::wgmma_wait<1>();
    } else {
      arch::wgmma_wait<0>();
    }
    promote_and_release(s, now, acc, now_tile.scale, now_tile.stage, lane);
  }

  // acc += partial (times the block scale of each accumulator's row when block-scaled: in the wgmma
  // layout, accumulators 4j, 4j + 1 are row lane / 4 and 4j + 2, 4j + 3 row lane / 4 + 8). The scales
  // were read from the stage before it is released here.
  TILEFUSE_DEVICE static void promote_and_release(SharedStorage const& s, float (&partial)[kRowBlocks][kAccumulators],
                                                  float (&acc)[kRowBlocks][kAccumulators], StageScales const& scale,
                                                  int stage, int lane) {
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) arch::fence_operands(partial[rb]);
    release(s, stage, lane);
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) {
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) {
        if constexpr (kBlockScaled) {
          acc[rb][i] += partial[rb][i] * scale.of[rb][(i % 4) / 2];
        } else {
          acc[rb][i] += partial[rb][i];
        }
      }
    }
  }

  // Waits for the last k-tile's wgmmas and releases its stage.
  TILEFUSE_DEVICE static void drain(SharedStorage const& s, int lane, int k_count, PipelineState const& state,
                                             float (&acc)[kRowBlocks][kAccumulators]) {
    if constexpr (kPromote) return;  // promoted() finished every k-tile
    arch::wgmma_wait<0>();
#pragma unroll
    for (int rb = 0; rb < kRowBlocks; ++rb) arch::fence_operands(acc[rb]);
    if (k_count > 0) release(s, (state.stage + kStages - 1) % kStages, lane);  // one k-tile back
  }

  // One arrival per consumer warp: all its wgmmas reading the stage have completed.
  TILEFUSE_DEVICE static void release(SharedStorage const& s, int stage, int lane) {
    // Block-scaled: every lane has read the stage's scales (ld.shared) before lane 0 gives it back.
    if constexpr (kBlockScaled) __syncwarp();
    if (lane == 0) {
      arch::mbarrier_arrive(&s.empty[stage]);
      if constexpr (kClusterM > 1) arch::mbarrier_arrive_cluster(&s.empty[stage], arch::cluster_rank() ^ 1);
    }
  }
};

}  // namespace tilefuse::gemm::sm90
