// One configuration struct per kernel family: the sm_80 (mma.sync) GEMM's tile shape, warps and
// pipeline depth, as a single named template argument.
#pragma once

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

  static_assert(kTileK % 16 == 0, "TileK is a multiple of the mma's K (16)");
  static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0, "warp tiles are multiples of 16");
  static_assert(kStages >= 2, "a pipeline needs at least two stages");
};

// The default for large problems on sm_80..sm_90: the fastest of the tile sweep on an H200
// (bench/results/2026-11-21-h200-sm80-gemm-v5-tile-sweep.txt; docs/notes/gemm_sm80.md).
using Sm80LargeConfig = Sm80TileConfig<128, 256, 64, 2, 4, 3>;
// Fewer, smaller tiles for problems that would leave SMs idle.
using Sm80SmallConfig = Sm80TileConfig<128, 128, 32, 2, 2, 4>;

}  // namespace tilefuse::gemm
