// The wave models that pick tiles and split counts: plain functions of the problem and the device's SM
// count, with no CUDA call, so that the C++ device operations and the Python package (through
// tilefuse._C) ask the same code. The planners (gemm_plan.hpp, conv/device/conv2d_plan.hpp) call them.
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include <tilefuse/core/coord.h>
#include <tilefuse/runtime/device_facts.hpp>

namespace tilefuse::gemm {

// ---- the sm80 kernel ----

// The tiles Sm80AutoConfig chooses from, in this order (Sm80LargeConfig, Sm80SmallConfig, Sm80NarrowConfig).
enum class Sm80Tile { kLarge, kSmall, kNarrow };

inline char const* config_name_of(Sm80Tile tile) {
  switch (tile) {
    case Sm80Tile::kSmall: return "Sm80SmallConfig";
    case Sm80Tile::kNarrow: return "Sm80NarrowConfig";
    default: return "Sm80LargeConfig";
  }
}

// (TileM, TileN, TileK) of the 16-bit configs (gemm_config.h).
inline std::array<int, 3> sm80_tile_shape(Sm80Tile tile) {
  switch (tile) {
    case Sm80Tile::kSmall: return {128, 128, 32};
    case Sm80Tile::kNarrow: return {128, 64, 32};
    default: return {128, 256, 64};
  }
}

// split_k = 0 asks the operation to choose: split K when the output tiles leave most SMs idle and K is
// long enough that every split still runs at least 8 k-tiles; aim at two blocks per SM, at most 128
// splits (the fp32 partials are written and read once each: cheap while the output is small).
// NOTES: capped at 16 once, wgrad's long reductions ran on 16 blocks at 0.05x cuDNN (conv_sm80.md).
inline int choose_split_k(GemmCoord const& problem, int tile_m, int tile_n, int tile_k, int sms) {
  sms = sms > 0 ? sms : 132;
  index_t const tiles = ((problem.m + tile_m - 1) / tile_m) * ((problem.n + tile_n - 1) / tile_n) * problem.batch;
  index_t const k_tiles = (problem.k + tile_k - 1) / tile_k;
  if (tiles <= 0 || k_tiles <= 0) return 1;  // an empty or invalid problem (workspace_size asks before checks)
  if (2 * tiles > sms) return 1;
  index_t split = std::min<index_t>({2 * index_t{sms} / tiles, k_tiles / 8, 128});
  return split < 2 ? 1 : static_cast<int>(split);
}

// A first model of how long a tile shape takes for `problem`: the busiest SM decides. Each tile's work
// is its padded area TileM x TileN over the shape's efficiency when b of its blocks share an SM (more
// warps hide more latency; the large tile's 8 warps alone are the unit).
// NOTES: the efficiencies are estimates (docs/notes/conv_sm80.md).
inline Sm80Tile choose_sm80_tile(GemmCoord const& problem, int split_k, int sms) {
  struct Shape {
    Sm80Tile tile;
    int m, n, blocks_per_sm;
    double efficiency[3];  // with 1, 2, 3 blocks on the SM
  };
  constexpr Shape kShapes[] = {
      {Sm80Tile::kLarge, 128, 256, 1, {1.0, 1.0, 1.0}},
      {Sm80Tile::kSmall, 128, 128, 2, {0.6, 0.85, 0.85}},
      {Sm80Tile::kNarrow, 128, 64, 3, {0.45, 0.7, 0.8}},
  };
  sms = sms > 0 ? sms : 132;
  Sm80Tile best = Sm80Tile::kLarge;
  double best_time = 0.0;
  for (Shape const& s : kShapes) {
    index_t const tiles = ((problem.m + s.m - 1) / s.m) * ((problem.n + s.n - 1) / s.n) * problem.batch * split_k;
    index_t const slots = index_t{sms} * s.blocks_per_sm;
    double const area = static_cast<double>(s.m) * s.n / (128.0 * 256.0);
    index_t const full_waves = tiles / slots;
    index_t const rest = tiles % slots;
    double time = static_cast<double>(full_waves) * s.blocks_per_sm * area / s.efficiency[s.blocks_per_sm - 1];
    if (rest > 0) {
      int const busiest = static_cast<int>((rest + sms - 1) / sms);
      time += busiest * area / s.efficiency[busiest - 1];
    }
    if (s.tile == Sm80Tile::kLarge || time < best_time) {
      best = s.tile;
      best_time = time;
    }
  }
  return best;
}

// ---- the Hopper GEMM ----

// Sm90LargeConfig, Sm90MediumConfig, Sm90NarrowConfig, Sm90ShortConfig (16-bit only: 64x64 ping-pong),
// Sm90MidConfig and Sm90WideConfig (16-bit only: 128x96, 128x160).
enum class Sm90Tile { kLarge, kMedium, kNarrow, kShort, kMid, kWide };

inline constexpr Sm90Tile kSm90Tiles[] = {Sm90Tile::kLarge, Sm90Tile::kMedium, Sm90Tile::kNarrow,
                                          Sm90Tile::kShort, Sm90Tile::kMid,    Sm90Tile::kWide};

// Tiles with a 16-bit config only (FP8 has none of them: the planner never gives them FP8 operands).
inline constexpr bool sixteen_bit_only(Sm90Tile tile) {
  return tile == Sm90Tile::kShort || tile == Sm90Tile::kMid || tile == Sm90Tile::kWide;
}

inline char const* name_of(Sm90Tile tile) {
  switch (tile) {
    case Sm90Tile::kLarge: return "128x256";
    case Sm90Tile::kMedium: return "128x128";
    case Sm90Tile::kNarrow: return "128x64";
    case Sm90Tile::kShort: return "64x64";
    case Sm90Tile::kMid: return "128x96";
    case Sm90Tile::kWide: return "128x160";
  }
  return "?";
}

// The C++ config of a tile (FP8: the Sm90Fp8* config of the same shape in bytes; the 16-bit-only tiles have
// none, and the planner never gives them FP8 operands).
inline char const* config_name_of(Sm90Tile tile, bool fp8) {
  switch (tile) {
    case Sm90Tile::kMedium: return fp8 ? "Sm90Fp8MediumConfig" : "Sm90MediumConfig";
    case Sm90Tile::kNarrow: return fp8 ? "Sm90Fp8NarrowConfig" : "Sm90NarrowConfig";
    case Sm90Tile::kShort: return "Sm90ShortConfig";
    case Sm90Tile::kMid: return "Sm90MidConfig";
    case Sm90Tile::kWide: return "Sm90WideConfig";
    default: return fp8 ? "Sm90Fp8LargeConfig" : "Sm90LargeConfig";
  }
}

// A wave model of the persistent kernel: the SM with the most tiles finishes last, so a config costs
//   ceil(tiles / SMs) x TileM x TileN x (k rounded up to 64 + kEpilogueK) / efficiency
// where kEpilogueK is the epilogue of one tile in units of k and the efficiency is the relative
// throughput of the tile's mainloop at full occupancy (narrower wgmmas read more shared memory per
// flop): measured on an H200 at 8192^3, 128x128 ran at 0.92 and 128x64 at 0.61 of 128x256's rate.
// The 128x64 tile is a candidate for k >= kNarrowMinK, and below it only for m <= kNarrowShortKMaxM: with a
// short mainloop and many tile rows it lost (1000^3), while with one or two tile rows, where reading A twice as
// often costs little, it won (197 x 3072 x 768 and 197 x 768 x 3072). Measurements and the fit:
// docs/notes/gemm_sm90.md ("tile per problem", "the split's cost").
// The 64x64 ping-pong tile (16-bit only) runs one warpgroup's wgmma chain per tile: 0.37 of 128x256's rate per
// tile area, fitted on an H200 where it fills SMs that the 128-row tiles leave idle (197 x 768 x 3072: 12.8 us
// against 128x64's 15.5; 394 x 768 x 3072: 12.9 against 128x128's 20.6; docs/notes/gemm_sm90.md, "64-row tiles").
// The 128x96 and 128x160 tiles (16-bit only) ran at 0.76 and 0.93 of 128x256's rate per area at 8192^3 (H200).
// They are candidates only where every tile runs in one round (tiles <= SMs), and 128x96 only for k >= kMidMinK:
// there they won on every measured shape (788 / 1576 x 768 x 3072 on 128x96: 14% / 3%; 3152 x 768 x 3072 / 768 on
// 128x160: 17% / 11%), while with more rounds (3152 x 3072 x 768 on 128x160 +12%, 12608 x 768 x 3072 +3%) or a
// short mainloop (1000^3 on 128x96 +13%) they lost to the model's older choice (docs/notes/gemm_sm90.md, "Mid-size
// tiles").
struct Sm90TileModel {
  static constexpr double kEpilogueK = 192.0;
  static constexpr double kEfficiency[6] = {1.0, 0.92, 0.61, 0.37, 0.76, 0.93};  // Large, Medium, Narrow, Short, Mid, Wide
  static constexpr int kTileM[6] = {128, 128, 128, 64, 128, 128};
  static constexpr int kTileN[6] = {256, 128, 64, 64, 96, 160};
  static constexpr index_t kNarrowMinK = 4096;
  static constexpr index_t kNarrowShortKMaxM = 256;
  static constexpr index_t kMidMinK = 2048;
};

// The number of tiles of `tile` over the problem (all batches).
inline index_t sm90_tile_count(Sm90Tile tile, GemmCoord const& p) {
  int const i = static_cast<int>(tile);
  index_t const tile_m = Sm90TileModel::kTileM[i];
  index_t const tile_n = Sm90TileModel::kTileN[i];
  return ((p.m + tile_m - 1) / tile_m) * ((p.n + tile_n - 1) / tile_n) * p.batch;
}

// Whether the 128x96 / 128x160 tile is a candidate (see above); every other tile always is.
inline bool sm90_mid_tile_fits(Sm90Tile tile, GemmCoord const& p, int sm_count) {
  if (tile != Sm90Tile::kMid && tile != Sm90Tile::kWide) return true;
  if (sm90_tile_count(tile, p) > static_cast<index_t>(sm_count)) return false;
  return tile == Sm90Tile::kWide || p.k >= Sm90TileModel::kMidMinK;
}

inline double sm90_tile_cost(Sm90Tile tile, GemmCoord const& p, int sm_count) {
  int const i = static_cast<int>(tile);
  index_t const tile_m = Sm90TileModel::kTileM[i];
  index_t const tile_n = Sm90TileModel::kTileN[i];
  index_t const tiles = sm90_tile_count(tile, p);
  index_t const sms = sm_count > 0 ? sm_count : 1;
  double const per_sm = static_cast<double>((tiles + sms - 1) / sms);
  double const k = static_cast<double>((p.k + 63) / 64 * 64);
  return per_sm * static_cast<double>(tile_m) * static_cast<double>(tile_n) * (k + Sm90TileModel::kEpilogueK) /
         Sm90TileModel::kEfficiency[i];
}

// choose_sm90_tile's candidates: every tile (16-bit operands), or only 128x256, 128x128 and 128x64: the tiles with
// an FP8 config, and the ones the split's costs were fitted beside (choose_sm90_split).
enum class Sm90TileSet { kAll, kLargeMediumNarrow };

// The cheapest tile of `set` by the model; a tie goes to the earlier (larger, older) tile.
inline Sm90Tile choose_sm90_tile(GemmCoord const& p, int sm_count, Sm90TileSet set = Sm90TileSet::kAll) {
  Sm90Tile best = Sm90Tile::kLarge;
  for (Sm90Tile t : {Sm90Tile::kMedium, Sm90Tile::kNarrow, Sm90Tile::kShort, Sm90Tile::kMid, Sm90Tile::kWide}) {
    if (t == Sm90Tile::kNarrow && p.k < Sm90TileModel::kNarrowMinK && p.m > Sm90TileModel::kNarrowShortKMaxM) continue;
    if (set == Sm90TileSet::kLargeMediumNarrow && sixteen_bit_only(t)) continue;
    if (!sm90_mid_tile_fits(t, p, sm_count)) continue;
    if (sm90_tile_cost(t, p, sm_count) < sm90_tile_cost(best, p, sm_count)) best = t;
  }
  return best;
}

// Split-K of the Hopper GEMM, summed in the kernel (Sm90SplitReduce over the 128x128 or the 64x64 ping-pong
// tile). The wave model above, extended: split s runs tiles x s blocks of k / s each, and pays for the sums: a
// fixed part (the memset launch, a ring filled per split, the last split's read-back) and a part per output
// element and split (its reduction at L2). The count with the least modelled cost wins, no split included; each
// part at least kMinKTiles k-tiles long and a whole number of 16-byte pieces (the kernel's checks: batch 1).
// k: the K the kernel reads (padded when the operands are copied). Fitted on an H200, where one unit is
// about 0.244 ns (docs/notes/gemm_sm90.md, "the split's cost"): fixed about 4.4 us, 5 us per 1e6
// element-splits.
// The 64x64 tile splits too, for outputs of a few 128-row tiles with long K: where the 128x128 tile needs 16 or
// more splits to fill the SMs (kShortMinMediumSplits), the 64x64 tile fills them with fewer, so fewer sums
// (256 x 256 x 16384 split 8: 14.5 us against 18.0 on 128x128 split 16; 128 x 256 x 8192 split 8: 11.4; 64 x 64 x
// 65536 split 32-64: 13.6-13.7 against 15.8 on 128x128 split 128; H200, docs/notes/gemm_sm90.md, "the 64x64 tile
// split"). Where 128x128 needs fewer splits the model overrates the 64x64 tile's long chains of k-tiles (seven
// shapes with 128x128 splits of 4-8 ran 0-38% slower on it: 512 x 512 x 8192, 64 x 3072 x 8192, ...). Its parts
// keep at least kShortMinKTiles k-tiles and are at most kShortMaxSplits (128 splits of one tile ran 10% slower than
// 32 or 64: the model has no term for many splits adding into the same sums), and it must beat the same tile
// unsplit.
struct Sm90SplitModel {
  static constexpr int kMaxSplits = 128;
  static constexpr index_t kMinKTiles = 4;
  static constexpr index_t kShortMinKTiles = 16;
  static constexpr int kShortMaxSplits = 64;
  static constexpr int kShortMinMediumSplits = 16;
  static constexpr double kFixedCost = 18e6;
  static constexpr double kCostPerElementSplit = 20.5;
};

// The wave model's cost of `tile` over `p` with K split `split` ways (split 1: sm90_tile_cost).
inline double sm90_split_cost(Sm90Tile tile, GemmCoord const& p, int split, int sm_count) {
  GemmCoord const part{p.m, p.n, (p.k + split - 1) / split, p.batch * split};
  double const sums = split > 1 ? Sm90SplitModel::kFixedCost + Sm90SplitModel::kCostPerElementSplit *
                                                                    static_cast<double>(p.m) * p.n * split
                                : 0.0;
  return sm90_tile_cost(tile, part, sm_count) + sums;
}

// A split plan: K split `split` ways on `tile` (split 1: no split; the tile is then the wave model's own choice).
struct Sm90Split {
  Sm90Tile tile = Sm90Tile::kMedium;
  int split = 1;
};

inline Sm90Split choose_sm90_split(GemmCoord const& p, int sm_count) {
  if (p.batch != 1 || p.m < 1 || p.n < 1 || p.k < 1) return {};
  int const sms = sm_count > 0 ? sm_count : 132;
  // Against the best of 128x256, 128x128 and 128x64: the split's costs were fitted beside them (a split that the
  // 64x64 or 128x96 tile would undercut in the model, such as 66 x 66 x 2048 or 394 x 256 x 2048, measured faster
  // split, or was not measured unsplit on them).
  double const unsplit = sm90_tile_cost(choose_sm90_tile(p, sms, Sm90TileSet::kLargeMediumNarrow), p, sms);
  // The cheapest split of `tile` that beats `bound`, or split 1.
  auto cheapest = [&](Sm90Tile tile, index_t min_k_tiles, double bound) {
    index_t const tiles = sm90_tile_count(tile, p);  // batch 1
    index_t const cap = tile == Sm90Tile::kShort ? Sm90SplitModel::kShortMaxSplits : Sm90SplitModel::kMaxSplits;
    index_t const most = std::min<index_t>({cap, 2 * index_t{sms} / tiles, (p.k / 64) / min_k_tiles});
    std::pair<int, double> best{1, bound};
    for (index_t s = 2; s <= most; ++s) {
      if (p.k % s != 0 || (p.k / s) % 8 != 0) continue;
      double const cost = sm90_split_cost(tile, p, static_cast<int>(s), sms);
      if (cost < best.second) best = {static_cast<int>(s), cost};
    }
    return best;
  };
  auto const [medium, medium_cost] = cheapest(Sm90Tile::kMedium, Sm90SplitModel::kMinKTiles, unsplit);
  if (medium < Sm90SplitModel::kShortMinMediumSplits) return {Sm90Tile::kMedium, medium};
  int const short_split = cheapest(Sm90Tile::kShort, Sm90SplitModel::kShortMinKTiles,
                                   std::min(medium_cost, sm90_tile_cost(Sm90Tile::kShort, p, sms))).first;
  return short_split > 1 ? Sm90Split{Sm90Tile::kShort, short_split} : Sm90Split{Sm90Tile::kMedium, medium};
}

}  // namespace tilefuse::gemm
