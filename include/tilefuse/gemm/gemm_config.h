// One configuration struct per kernel family: the sm_80 (mma.sync) GEMM's tile shape, warps and
// pipeline depth, as a single named template argument.
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/core/platform.h>

namespace tilefuse::gemm {

// TileM x TileN x TileK threadblock tile computed by WarpsM x WarpsN warps through a Stages-deep
// cp.async pipeline.
template <int TileM_, int TileN_, int TileK_, int WarpsM_, int WarpsN_, int Stages_, int MinBlocksPerSm_ = 1>
struct Sm80TileConfig {
  static constexpr int kTileM = TileM_;
  static constexpr int kTileN = TileN_;
  static constexpr int kTileK = TileK_;
  static constexpr int kWarpsM = WarpsM_;
  static constexpr int kWarpsN = WarpsN_;
  static constexpr int kStages = Stages_;
  // Passed to __launch_bounds__: asks the compiler to fit this many blocks per SM in registers.
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm_;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpTileM = kTileM / kWarpsM;
  static constexpr int kWarpTileN = kTileN / kWarpsN;

  static_assert(kTileK % 16 == 0, "TileK is a multiple of 16 (the mma's k for 16-bit inputs, two for tf32)");
  static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0, "warp tiles are multiples of 16");
  static_assert(kStages >= 2, "a pipeline needs at least two stages");
};

// The default for large problems on sm_80..sm_90: the fastest of the tile sweep on an H200
// (docs/notes/gemm_sm80.md, the tile sweep; the report is in git tag results-history-2026-11-28).
using Sm80LargeConfig = Sm80TileConfig<128, 256, 64, 2, 4, 3>;
// Fewer, smaller tiles for problems that would leave SMs idle.
using Sm80SmallConfig = Sm80TileConfig<128, 128, 32, 2, 2, 4>;
// Narrow outputs (N <= 64, e.g. convolutions with 64 filters) and short K: three blocks per SM hide
// the latency of tiles that run only a few k-tiles.
using Sm80NarrowConfig = Sm80TileConfig<128, 64, 32, 2, 2, 4, 3>;
// Whether gemm::Gemm loads this config's operands by TMA on an sm_90 device (where it can: K-contiguous
// 16-bit operands, 64-element k-tiles, aligned): true unless the config says
// `static constexpr bool kTmaOnHopper = false;` (e.g. to test the cp.async path on Hopper).
template <class Config>
TILEFUSE_HOST_DEVICE constexpr bool sm80_tma_on_hopper() {
  if constexpr (requires { Config::kTmaOnHopper; }) {
    return Config::kTmaOnHopper;
  } else {
    return true;
  }
}

// Not a configuration but a request: the device operation picks Sm80LargeConfig, Sm80SmallConfig or
// Sm80NarrowConfig per problem (gemm/device/sm80_launch.hpp: choose_sm80_tile).
struct Sm80AutoConfig {};
// The same choice among the sm_80-path tiles, never the Hopper kernel (e.g. to measure the two paths).
struct Sm80PathAutoConfig {};

// The tf32 path (float and tfloat32_t inputs, mma.m16n8k8.tf32): the same tiles in bytes as the 16-bit
// ones, so TileK is half as many elements. Large: 128x256x32, 3 stages = 144 KiB of operands (fits
// sm_80's 163 KiB and sm_90's 227 KiB per block). Small: 128x128x16, 4 stages = 64 KiB (two blocks per
// SM on sm_80 too).
using Sm80Tf32LargeConfig = Sm80TileConfig<128, 256, 32, 2, 4, 3>;
using Sm80Tf32SmallConfig = Sm80TileConfig<128, 128, 16, 2, 2, 4>;

// The sm_80 config gemm::Gemm runs when it falls back to the sm_80 kernel under GemmAutoConfig:
// Sm80LargeConfig for 16-bit inputs, Sm80Tf32LargeConfig for 32-bit (tf32) ones.
template <class Element>
using Sm80DefaultConfig = cuda::std::conditional_t<sizeof(Element) == 4, Sm80Tf32LargeConfig, Sm80LargeConfig>;

// Not a configuration but a request, and gemm::Gemm's default: run the Hopper kernel (GemmSm90 with
// Sm90AutoConfig) on an sm_90 device when it accepts the problem, else the sm_80 kernel with
// Sm80DefaultConfig. Naming an Sm80 config instead forces the sm_80 kernel
// (gemm/device/gemm.hpp).
struct GemmAutoConfig {};

}  // namespace tilefuse::gemm

namespace tilefuse::gemm {

// The sm_90a (TMA + WGMMA) GEMM: a TileM x TileN x TileK tile per persistent threadblock of one
// producer warpgroup (TMA loads into a Stages-deep ring) and ConsumerWarpgroups consumer warpgroups
// (each owns TileM / ConsumerWarpgroups = 64 rows of the tile and issues wgmma.m64nTileNk16). Tiles
// are handed out round-robin over the persistent grid in groups of GroupRows tile rows (L2 reuse).
// The epilogue stages EpilogueColumns columns of a warp's 16 accumulator rows at a time through
// shared memory. ProducerRegisters / ConsumerRegisters are the setmaxnreg targets.
//
// Schedule: kCooperative, the two consumer warpgroups split each tile (64 rows each) and run their
// mainloops and epilogues together; kPingPong, each consumer warpgroup owns whole tiles (TileM = 64 or
// 128 rows, one or two wgmma.m64 per k-step) and the two take turns on the tensor cores, so one's
// epilogue runs under the other's mainloop (sm90_gemm.h says how the turns are kept).
enum class Sm90Schedule { kCooperative, kPingPong };

// The default group height (tile rows a block walks before the next column group).
inline constexpr int kSm90GroupRows = 16;
template <int TileM_, int TileN_, int TileK_, int Stages_, int GroupRows_ = kSm90GroupRows, int EpilogueColumns_ = 32,
          Sm90Schedule Schedule_ = Sm90Schedule::kCooperative>
struct Sm90TileConfig {
  static constexpr int kTileM = TileM_;
  static constexpr int kTileN = TileN_;
  static constexpr int kTileK = TileK_;
  static constexpr int kStages = Stages_;
  static constexpr int kGroupRows = GroupRows_;
  static constexpr int kEpilogueColumns = EpilogueColumns_;
  static constexpr Sm90Schedule kSchedule = Schedule_;
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  // FP8: add the wgmma accumulators into fp32 ones after every k-tile (Sm90Promoted below).
  static constexpr bool kPromoteEveryKTile = false;
  static constexpr int kPromoteInterval = 1;
  // CTAs per cluster along M (Sm90Multicast below): 1, or 2 sharing each B tile by TMA multicast.
  static constexpr int kClusterM = 1;
  // FP8 block-wise scales applied at each promotion (Sm90BlockScaled below).
  static constexpr bool kBlockScaled = false;

  static_assert(kSchedule == Sm90Schedule::kPingPong || kTileM == 64 * kConsumerWarpgroups,
                "cooperative: each consumer warpgroup owns 64 rows of the tile (one wgmma.m64)");
  static_assert(kSchedule == Sm90Schedule::kCooperative || ((kTileM == 64 || kTileM == 128) && kTileM * kTileN <= 24576),
                "ping-pong: a warpgroup owns the whole tile, 64 or 128 rows, at most 192 accumulators per thread");
  static_assert(kTileN == 64 || kTileN == 96 || kTileN == 128 || kTileN == 160 || kTileN == 192 || kTileN == 256,
                "wgmma is instantiated for N = 64, 96, 128, 160, 192 (96, 160 and 192 16-bit only) and 256");
  static_assert(kTileK == 64 || kTileK == 128, "a k-tile is one 128-byte swizzle row: 64 16-bit or 128 FP8 elements");
  static_assert(kStages >= 2, "a pipeline needs at least two stages");
  static_assert(kTileN % kEpilogueColumns == 0 && kEpilogueColumns % 8 == 0, "epilogue chunks are whole vectors");
  // The setmaxnreg targets' budget is checked by the kernel (sm90_gemm.h), which sees a derived config's values.
};

// 128 x 256 x 64, 4 stages (192 KiB of operands + 20 KiB of epilogue staging).
using Sm90LargeConfig = Sm90TileConfig<128, 256, 64, 4>;
// 128 x 128 x 64, 6 stages: twice the tiles, for problems with too few 128 x 256 tiles to fill the SMs.
using Sm90MediumConfig = Sm90TileConfig<128, 128, 64, 6>;
// 128 x 64 x 64, 8 stages (192 KiB of operands): four times the tiles of Large, for problems with
// very few output tiles (m or n of a few hundred, e.g. 128 x 8192 x 8192).
using Sm90NarrowConfig = Sm90TileConfig<128, 64, 64, 8>;
// 128 x 96 x 64, 7 stages (196 KiB) and 128 x 160 x 64, 5 stages (180 KiB), 16-bit only: tile widths between
// Narrow, Medium and Large for outputs of a few thousand rows that fit one round of tiles (788 x 768: 56 tiles of
// 128x96 on 132 SMs where 128x128 gives 42; 3152 x 768: 125 of 128x160 where 128x256 gives 75); the planner takes
// them only there (tile_models.hpp: sm90_mid_tile_fits).
using Sm90MidConfig = Sm90TileConfig<128, 96, 64, 7>;
using Sm90WideConfig = Sm90TileConfig<128, 160, 64, 5>;
// Ping-pong, 128 x 128 per warpgroup, 6 stages (192 KiB): the epilogue of one tile overlaps the
// mainloop of the next.
using Sm90PingPongConfig = Sm90TileConfig<128, 128, 64, 6, kSm90GroupRows, 32, Sm90Schedule::kPingPong>;
// Ping-pong, 64 x 256 per warpgroup, 5 stages (200 KiB): one wgmma.m64n256 per k-step like Large.
using Sm90PingPongWideConfig = Sm90TileConfig<64, 256, 64, 5, kSm90GroupRows, 32, Sm90Schedule::kPingPong>;
// Ping-pong, 64 x 64 per warpgroup, 12 stages (192 KiB): for outputs of a few hundred rows, whose 128-row tiles
// leave most SMs idle (197 x 768 x 3072: 24 tiles of 128x64, 48 of 64x64). One warpgroup's wgmma chain runs at
// about 0.37 of the 128x256 tile's rate per tile area, so it wins only where it fills SMs the others leave idle.
// A k-tile's wgmmas alternate between two accumulator sets (kTwoChains; 2-4% faster on those shapes).
struct Sm90ShortConfig : Sm90TileConfig<64, 64, 64, 12, kSm90GroupRows, 32, Sm90Schedule::kPingPong> {
  static constexpr bool kTwoChains = true;
};
// FP8 operands (e4m3 / e5m2): the same tiles in bytes, so TileK is 128 elements (one 128-byte row).
using Sm90Fp8LargeConfig = Sm90TileConfig<128, 256, 128, 4>;
using Sm90Fp8MediumConfig = Sm90TileConfig<128, 128, 128, 6>;
using Sm90Fp8NarrowConfig = Sm90TileConfig<128, 64, 128, 8>;
// FP8 ping-pong, 128 x 128 per warpgroup: FP8 moves half the bytes of bf16 per flop, so the 128-row
// tile's extra L2 traffic (what held the bf16 ping-pong back: docs/notes/gemm_sm90.md, ping-pong
// consumers) matters less.
using Sm90Fp8PingPongConfig = Sm90TileConfig<128, 128, 128, 6, kSm90GroupRows, 32, Sm90Schedule::kPingPong>;
// An FP8 config whose k-tiles (128 of K) are each accumulated by the tensor cores from zero and then
// added into fp32 accumulators: the tensor cores' FP8 accumulation keeps fewer bits than fp32, which
// over long K loses precision (torch._scaled_mm's use_fast_accum = false asks for this). Twice the
// accumulator registers: a 128 x 128 tile (64 + 64 per thread), not 128 x 256.
template <class Base, int Interval = 1>
struct Sm90Promoted : Base {
  static constexpr bool kPromoteEveryKTile = true;
  // k-tiles accumulated by the tensor cores between promotions (1: every 128 of K, DeepSeek's interval).
  static constexpr int kPromoteInterval = Interval;
  static_assert(Base::kTileK == 128, "promotion is for FP8 configs");
  // A second accumulator set per thread: at most 64 x 128 per consumer warpgroup (64 + 64 registers).
  static_assert((Base::kSchedule == Sm90Schedule::kPingPong ? Base::kTileM : Base::kTileM / Base::kConsumerWarpgroups) *
                        Base::kTileN <= 64 * 128,
                "promotion needs a second accumulator set: at most 64 x 128 per consumer warpgroup");
};
using Sm90Fp8PromotedConfig = Sm90Promoted<Sm90Fp8MediumConfig>;
// DeepSeek-style block-wise scales (A: one per 1 x 128 of K, B: one per 128 x 128): each k-tile (128 of
// K) is promoted as acc += partial * scale_a[row, kb] * scale_b[kb, nb]. TileN is 128, so a tile
// column of B has one scale per k-tile.
template <class Base>
struct Sm90BlockScaled : Sm90Promoted<Base> {
  static constexpr bool kBlockScaled = true;
  static_assert(Sm90Promoted<Base>::kPromoteInterval == 1, "block-wise scales change every k-tile");
  static_assert(Base::kTileN == 128, "block-wise scales: a tile column is one 128-wide scale block of B");
};
using Sm90Fp8BlockScaledConfig = Sm90BlockScaled<Sm90Fp8MediumConfig>;
// The promoted mainloop that waits for each k-tile's wgmmas before issuing the next k-tile's (the kernel
// before the overlapped promotion): one partial set instead of two, the A/B baseline of the fp8 bench
// (docs/notes/gemm_fp8.md; the experiment configs built from these live in the bench and the tests).
template <class Base>
struct Sm90PromotionInLine : Base {
  static constexpr bool kOverlapPromotion = false;
};
// Two CTAs per cluster on adjacent tile rows of the same tile column: each loads half of the B tile
// and multicasts it to both, so B crosses L2 once per pair. Built to take L2 traffic off the 128-row
// tiles (ping-pong, FP8 promotion); measured no faster than without (docs/notes/gemm_sm90.md, 2-CTA
// clusters), so no auto config picks it. TMA operand source only (the GEMM's).
template <class Base>
struct Sm90Multicast : Base {
  static constexpr int kClusterM = 2;
  static_assert((Base::kTileN / 2) % 8 == 0, "each CTA loads half of the B tile, whole 1024-byte swizzle atoms");
};
using Sm90PingPongMulticastConfig = Sm90Multicast<Sm90PingPongConfig>;
// Ping-pong 64 x 256 sharing B across a CTA pair: the 64-row tiles' L2 traffic per flop brought back to
// Large's (without, the 64-row tiles read B twice as often per flop: docs/notes/gemm_sm90.md, ping-pong
// 64x256 and ping-pong for the fused GEMM).
using Sm90PingPongWideMulticastConfig = Sm90Multicast<Sm90PingPongWideConfig>;
// Split-K reduced inside the kernel: the batch index is the split, each split's warps add their fp32
// accumulators into one sum at L2 and the last to arrive runs the epilogue (sm90_split_reduction.h, SplitReductionPart::add).
// The Hopper conv wgrad's split-K (conv2d_sm90_wgrad_launch.hpp).
// A's rows arrive while the kernel runs, in pieces with a flag each (an all-gather's copies): the producer
// waits for a tile's pieces before its loads, and the walk starts at the rows in place (sm90_row_gate.h).
template <class Base>
struct Sm90RowGate : Base {
  static constexpr bool kRowGate = true;
};

template <class Base>
struct Sm90SplitReduce : Base {
  static constexpr bool kReduceSplits = true;
};
// Trees with one 16-bit residual take the packed epilogue with the residual (and its one column vector, the
// bias) loaded by TMA from the producer into a ring of sub-tiles, and D stored by TMA (sm90_epilogue_path.h
// kTmaAux): the planner's choice for such trees where TMA can read the residual (gemm_plan.hpp,
// GemmRequest::residual_by_tma; docs/notes/gemm_sm90.md, the TMA residual as the GEMM default). Other trees
// compile as under Base.
template <class Base>
struct Sm90TmaResidual : Base {
  static constexpr bool kPackedLoads = true;
  static constexpr bool kTmaAux = true;
};
// Not a configuration but a request: GemmSm90 (gemm_sm90_auto.hpp) runs the config the planner names:
// a tile (Large, Medium, Narrow), a split, or a tile's TMA residual twin (gemm_plan.hpp: plan_gemm_sm90).
struct Sm90AutoConfig {};

}  // namespace tilefuse::gemm
