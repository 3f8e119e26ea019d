// The Hopper GEMM's and the FP8 scaled GEMM's kernel config per problem, as plain functions of values
// (problem, SM count, scaling mode, accumulation, overrides): gemm::GemmSm90 (Sm90AutoConfig),
// gemm::ScaledGemm and the Python package (through tilefuse._C) all ask these. Host code, no CUDA calls.
#pragma once

#include <optional>
#include <string>

#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>

namespace tilefuse::gemm {

// The kernel a plan runs: its C++ config (gemm_config.h) and tile, and why.
struct Sm90GemmPlan {
  std::string config;  // "Sm90LargeConfig", "Sm90Fp8PromotedConfig", ...
  int tile_m = 128;
  int tile_n = 256;
  int tile_k = 64;
  std::string tile;    // "128x256", "128x128 ping-pong", ...
  std::string why;
};

// bf16 / fp16 (fp8: the Sm90Fp8* twins, k-tiles of 128): the tile by the wave model, or `forced`.
inline Sm90GemmPlan plan_gemm_sm90(GemmCoord const& problem, DeviceFacts const& device, bool fp8 = false,
                                   std::optional<Sm90Tile> forced = std::nullopt) {
  Sm90Tile const tile = forced ? *forced : choose_sm90_tile(problem, device.sms());
  Sm90GemmPlan plan;
  plan.config = config_name_of(tile, fp8);
  plan.tile_n = Sm90TileModel::kTileN[static_cast<int>(tile)];
  plan.tile_k = fp8 ? 128 : 64;
  plan.tile = name_of(tile);
  plan.why = forced ? std::string("tile fixed by the caller")
                    : status_message("tile chosen by the wave model (choose_sm90_tile) for this problem on ",
                                     device.sms(), " SMs");
  return plan;
}

// The scaled GEMM (torch._scaled_mm's scales). kPerTensor / kRowWise / kBlockWise as ScalingMode.
enum class Fp8Scaling { kPerTensor, kRowWise, kBlockWise };
// Row-wise fast accumulation with K of at most this many k-tiles of 128 runs ping-pong: the epilogue's
// scale-vector loads run under the other warpgroup's mainloop (docs/notes/gemm_fp8.md, row-wise short K
// on ping-pong).
inline constexpr index_t kRowWisePingPongMaxKTiles = 8;

inline bool scaled_gemm_picks_ping_pong(Fp8Scaling scaling, bool fast_accum, index_t k) {
  return scaling == Fp8Scaling::kRowWise && fast_accum && (k + 127) / 128 <= kRowWisePingPongMaxKTiles;
}

inline Sm90GemmPlan plan_scaled_gemm(GemmCoord const& problem, DeviceFacts const& device, Fp8Scaling scaling,
                                     bool fast_accum) {
  Sm90GemmPlan plan;
  plan.tile_n = 128;
  plan.tile_k = 128;
  plan.tile = "128x128";
  if (scaling == Fp8Scaling::kBlockWise) {
    plan.config = "Sm90Fp8BlockScaledConfig";
    plan.why = "block-wise scales: every k-tile's sum (128 of K) promoted into fp32 registers times its scales";
  } else if (!fast_accum) {
    plan.config = "Sm90Fp8PromotedConfig";
    plan.why = "use_fast_accum=False: every k-tile's sum (128 of K) promoted into fp32 registers, as torch's default "
               "accumulation";
  } else if (scaled_gemm_picks_ping_pong(scaling, fast_accum, problem.k)) {
    plan.config = "Sm90Fp8PingPongConfig";
    plan.tile = "128x128 ping-pong";
    plan.why = "fast accumulation, row-wise scales with short K: ping-pong";
  } else {
    plan = plan_gemm_sm90(problem, device, /*fp8=*/true);
    plan.why = "fast accumulation, " + plan.why;
  }
  return plan;
}

}  // namespace tilefuse::gemm
