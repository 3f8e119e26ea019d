// The Hopper GEMM's and the FP8 scaled GEMM's kernel config per problem, as plain functions of values
// (problem, SM count, scaling mode, accumulation, overrides): gemm::GemmSm90 (Sm90AutoConfig),
// gemm::ScaledGemm and the Python package (through tilefuse._C) all ask these. Host code, no CUDA calls.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/gemm/kernel/skinny_gemm_shape.h>

namespace tilefuse::gemm {

// The kernel a plan runs: its C++ config (gemm_config.h) and tile, and why.
struct Sm90GemmPlan {
  std::string config;  // "Sm90LargeConfig", "Sm90Fp8PromotedConfig", ...
  int tile_m = 128;
  int tile_n = 256;
  int tile_k = 64;
  std::string tile;    // "128x256", "128x128 ping-pong", ...
  Sm90Tile kind = Sm90Tile::kLarge;  // the tile of a 16-bit or FP8 tile plan (not the FP8 promoted plans')
  int split_k = 1;     // >= 2: K split that many ways and summed in the kernel (config Sm90SplitReduce<...>)
  bool residual_by_tma = false;  // the tree's residual loaded by TMA (config Sm90TmaResidual<...>)
  std::string why;
};

// The C++ type of a split config: Sm90SplitReduce over the tile's config, spelled in full so that the JIT can
// name it outside the namespace.
inline std::string sm90_split_config_name(Sm90Tile tile) {
  return std::string("tilefuse::gemm::Sm90SplitReduce<tilefuse::gemm::") + config_name_of(tile, false) + ">";
}

// The C++ type of a TMA residual config: Sm90TmaResidual over the tile's config, spelled in full.
inline std::string sm90_tma_residual_config_name(Sm90Tile tile) {
  return std::string("tilefuse::gemm::Sm90TmaResidual<tilefuse::gemm::") + config_name_of(tile, false) + ">";
}

// Every 16-bit config plan_gemm_sm90 can pick: each tile's (its Sm90TmaResidual twin for trees whose residual TMA
// reads: residual_by_tma), then the splits' (128x128 and 64x64). What the Python package builds ahead
// (tilefuse.jit.prebuilt).
inline std::vector<std::string> sm90_config_choices(bool residual_by_tma) {
  std::vector<std::string> configs;
  for (Sm90Tile t : kSm90Tiles) {
    configs.push_back(residual_by_tma ? sm90_tma_residual_config_name(t)
                                      : std::string(config_name_of(t, false)));
  }
  if (!residual_by_tma) {
    configs.push_back(sm90_split_config_name(Sm90Tile::kMedium));
    configs.push_back(sm90_split_config_name(Sm90Tile::kShort));
  }
  return configs;
}

// Whether the Hopper kernel can split this K `split` ways (its checks: batch 1, parts of whole 16-byte
// pieces of 16-bit elements).
inline bool sm90_can_split(GemmCoord const& p, int split) {
  return split >= 2 && p.batch == 1 && p.k % split == 0 && (p.k / split) % 8 == 0;
}

// A split of `split` parts asked for without a tile: on the tile the model pairs with that count (the 64x64 tile
// where choose_sm90_split picks this count on it: gemm::Gemm hands GemmSm90 the planner's count, and the plan
// must not change on the way), else on 128x128.
inline Sm90Split sm90_split_of_count(GemmCoord const& problem, int sm_count, int split) {
  Sm90Split const model = choose_sm90_split(problem, sm_count);
  return {model.split == split ? model.tile : Sm90Tile::kMedium, split};
}

// bf16 / fp16 (fp8: the Sm90Fp8* twins, k-tiles of 128): the tile by the wave model, or `forced`.
// split_k (16-bit only): 0 lets the model choose (choose_sm90_split: the 128x128 or the 64x64 tile, K summed in
// the kernel), 1 does not split, >= 2 splits that many ways (the caller checks sm90_can_split first).
// residual_by_tma: the epilogue tree stages one 16-bit residual that TMA can read (GemmRequest says when);
// an unsplit 16-bit plan then loads it by TMA (Sm90TmaResidual), the fused GEMM's default.
inline Sm90GemmPlan plan_gemm_sm90(GemmCoord const& problem, DeviceFacts const& device, bool fp8 = false,
                                   std::optional<Sm90Tile> forced = std::nullopt, int split_k = 1,
                                   bool residual_by_tma = false) {
  Sm90Split const chosen = fp8 || split_k == 1 ? Sm90Split{}
                           : split_k == 0      ? (forced ? Sm90Split{} : choose_sm90_split(problem, device.sms()))
                           : forced            ? Sm90Split{*forced, split_k}
                                               : sm90_split_of_count(problem, device.sms(), split_k);
  int const split = chosen.split;
  Sm90TileSet const candidates = fp8 ? Sm90TileSet::kLargeMediumNarrow : Sm90TileSet::kAll;
  Sm90Tile const tile = forced ? *forced : split > 1 ? chosen.tile : choose_sm90_tile(problem, device.sms(), candidates);
  Sm90GemmPlan plan;
  plan.kind = tile;
  plan.residual_by_tma = residual_by_tma && !fp8 && split == 1;
  plan.config = split > 1              ? sm90_split_config_name(tile)
                : plan.residual_by_tma ? sm90_tma_residual_config_name(tile)
                                       : std::string(config_name_of(tile, fp8));
  plan.tile_m = Sm90TileModel::kTileM[static_cast<int>(tile)];
  plan.tile_n = Sm90TileModel::kTileN[static_cast<int>(tile)];
  plan.tile_k = fp8 ? 128 : 64;
  plan.tile = name_of(tile);
  plan.split_k = split > 1 ? split : 1;
  plan.why = forced      ? std::string("tile fixed by the caller")
             : split > 1 ? status_message("tile ", split_k == 0 ? "and split " : "", "chosen by the wave model with the "
                                          "split's costs (choose_sm90_split", split_k == 0 ? "" : ": the tile it pairs with "
                                          "this count, else 128x128", ") for this problem on ", device.sms(), " SMs")
                         : status_message("tile chosen by the wave model (choose_sm90_tile) for this problem on ",
                                          device.sms(), " SMs");
  if (split > 1) {
    plan.why += split_k == 0 ? status_message("; K split ", split, " ways and summed in the kernel: unsplit, the "
                                              "tiles leave most SMs idle")
                             : status_message("; K split ", split, " ways as asked, summed in the kernel");
  }
  if (plan.residual_by_tma) plan.why += "; the residual loaded by TMA beside the mainloop";
  return plan;
}

// The in-kernel split's workspace (GemmSm90::workspace_size for a Sm90SplitReduce config): m rows of fp32 sums
// n rounded up to 4 apart, then one int ticket per 16-row slice of each tile_m x tile_n tile.
inline std::size_t sm90_split_tickets_offset(GemmCoord const& p) {
  return static_cast<std::size_t>(p.m * ((p.n + 3) / 4 * 4)) * sizeof(float);
}
inline std::size_t sm90_split_workspace_bytes(GemmCoord const& p, int tile_m, int tile_n) {
  auto const tickets = static_cast<std::size_t>((p.m + tile_m - 1) / tile_m * (tile_m / 16) * ((p.n + tile_n - 1) / tile_n));
  return sm90_split_tickets_offset(p) + tickets * sizeof(int);
}

// ---- the whole GEMM plan: kernel family, operand copies, tile and split ----

enum class GemmFamily { kAuto, kSm80, kSm90, kSkinny };

inline char const* name_of(GemmFamily family) {
  switch (family) {
    case GemmFamily::kSm80: return "sm80";
    case GemmFamily::kSm90: return "sm90";
    case GemmFamily::kSkinny: return "skinny";
    default: return "auto";
  }
}

// What the planner needs to know of a call: the problem, facts about its operands, the overrides.
struct GemmRequest {
  GemmCoord problem;
  bool sixteen_bit = true;     // bf16 / fp16 operands (the Hopper kernel's); false: float / tf32
  bool hopper_layouts = true;  // A row-major and B column-major (both contiguous along K)
  bool tma_aligned = true;     // bases 16-byte aligned, leading dimensions and batch strides whole 16-byte pieces
  bool hopper_code = true;     // the binary (or the JIT) has the Hopper kernel's sm_90a code
  bool skinny_code = false;    // the caller runs the skinny kernel (gemm/kernel/skinny_gemm.h) too
  int split_k = 0;             // 0: choose; 1: no split; >= 2: that many splits
  // The epilogue tree stages one 16-bit residual (a 16-bit store of an elementwise tree with one 16-bit
  // AuxLoad: Sm90TmaResidual's kernel has kTmaAux) and that residual is TMA-aligned (tma_rows_aligned).
  bool residual_by_tma = false;
  GemmFamily family = GemmFamily::kAuto;  // an override: kSm80, kSm90 or kSkinny forces the family
  std::optional<Sm90Tile> tile;           // an override of the Hopper tile
};

struct GemmPlan {
  GemmFamily family = GemmFamily::kSm80;
  // The Hopper kernel reads A row-major and B K-major with 16-byte-aligned rows: operands in other layouts
  // or unaligned are first copied so (a packing copy per operand), K zero-padded to padded_k.
  bool copy_operands = false;
  index_t padded_k = 0;  // the K the Hopper kernel reads (k, or k rounded up to 8 when copying; at least 8)
  Sm90GemmPlan sm90;     // family kSm90: config, tile and in-kernel split
  // Family kSm80 with 16-bit operands: Sm80DefaultConfig's tile (Sm80LargeConfig), the 16-byte cp.async path
  // or the element-wise one, and the split (choose_split_k for split_k = 0). For float / tf32 operands the
  // config is empty and split_k the request (gemm::Gemm resolves both for its tf32 config).
  std::string sm80_config;
  std::array<int, 3> sm80_tile{0, 0, 0};
  bool sm80_aligned = false;
  int split_k = 1;
  std::string why;
};

// The plan, or why the forced family cannot run. The Hopper kernel runs wherever it can (an sm_90 device,
// 16-bit operands, its code present), its operands copied when TMA cannot read them as they are: a copy
// costs two passes over A and B, the element-wise sm80 kernel 3-30x the Hopper kernel's time
// (docs/notes/gemm_sm90.md, operands copied for the Hopper kernel).
// Why the skinny kernel cannot take a call, empty where it can: 16-bit operands, A row-major and B K-major with
// 16-byte-aligned rows, at most kSkinnyMaxRows rows, a batch the grid holds, an sm_80+ device; chosen (not
// forced) only with no split or tile asked for, and with at least a block per SM unless K is short (fewer
// blocks leave most SMs idle while each streams a long K: the tensor-core kernels split it instead).
inline std::string why_not_skinny(GemmRequest const& r, DeviceFacts const& device, bool forced) {
  GemmCoord const& p = r.problem;
  if (!r.skinny_code) return "the caller has no skinny kernel";
  if (!r.sixteen_bit) return "it takes bf16 or fp16 operands";
  if (!r.hopper_layouts || !r.tma_aligned) return "it reads row-major A and K-major B with 16-byte-aligned rows";
  if (p.m < 1 || p.m > skinny::kSkinnyMaxRows) return status_message("m = ", p.m, " is not 1 to ", skinny::kSkinnyMaxRows);
  if (p.k < 1) return "k = 0";
  if (p.batch > skinny::kSkinnyMaxBatch) return status_message("batch = ", p.batch, " is past the grid's 65535");
  index_t const blocks = (p.n + skinny::kSkinnyColumns - 1) / skinny::kSkinnyColumns;
  if (blocks > 0x7fffffff) return status_message("n = ", p.n, " is past its grid");
  if (device.major > 0 && device.major < 8) return status_message("the device is sm_", device.major, device.minor);
  if (forced) return {};
  if (r.split_k >= 2) return status_message("split_k = ", r.split_k, " was asked for");
  if (r.tile) return "a Hopper tile was asked for";
  if (blocks * p.batch < device.sms() && p.k > skinny::kSkinnyShortK) {
    return status_message(blocks * p.batch, " blocks of ", skinny::kSkinnyColumns, " columns leave SMs idle while each "
                          "streams k = ", p.k, " (past ", skinny::kSkinnyShortK, ")");
  }
  return {};
}

inline Status plan_gemm(GemmRequest const& r, DeviceFacts const& device, GemmPlan* plan) {
  *plan = GemmPlan{};
  GemmCoord const& p = r.problem;
  // A few rows: the product is bound by B's bytes, which the skinny kernel streams straight into m16n8k16
  // mmas, where a 128-row tile would be mostly padding (docs/notes/gemm_sm90.md, the skinny kernel).
  if (r.family == GemmFamily::kAuto || r.family == GemmFamily::kSkinny) {
    std::string const why_not = why_not_skinny(r, device, r.family == GemmFamily::kSkinny);
    if (why_not.empty()) {
      plan->family = GemmFamily::kSkinny;
      plan->why = status_message("skinny kernel: m = ", p.m, " rows (at most ", skinny::kSkinnyMaxRows,
                                 "): B streamed once into mma.sync, ", skinny::kSkinnyColumns, " columns per block");
      return {};
    }
    if (r.family == GemmFamily::kSkinny) return not_supported("gemm: the skinny kernel was asked for, but ", why_not);
  }
  std::string why_not;
  if (!device.is_sm90()) {
    why_not = status_message("the device is sm_", device.major, device.minor, ", the Hopper kernel needs sm_90");
  } else if (!r.sixteen_bit) {
    why_not = "the Hopper GEMM takes bf16 or fp16 operands";
  } else if (!r.hopper_code) {
    why_not = "this binary has no sm_90a code of the Hopper kernel (build with TILEFUSE_CUDA_ARCHS including 90a)";
  } else if (r.family == GemmFamily::kSm80) {
    why_not = "the sm80 kernel was asked for";
  }
  if (!why_not.empty()) {
    if (r.family == GemmFamily::kSm90) return not_supported("gemm: the Hopper kernel was asked for, but ", why_not);
    if (device.major > 0 && device.major < 8) {  // 0: facts unknown (host-only callers)
      return not_supported("gemm: the device is sm_", device.major, device.minor,
                           "; tilefuse's GEMM kernels need sm_80 or newer (bf16 / fp16 mma.sync)");
    }
    plan->family = GemmFamily::kSm80;
    plan->split_k = r.split_k;
    plan->sm80_aligned = r.tma_aligned;
    if (r.sixteen_bit) {
      plan->sm80_config = config_name_of(Sm80Tile::kLarge);
      plan->sm80_tile = sm80_tile_shape(Sm80Tile::kLarge);
      auto const [tm, tn, tk] = plan->sm80_tile;
      plan->split_k = r.split_k == 0 ? choose_split_k(p, tm, tn, tk, device.sms()) : std::max(r.split_k, 1);
      index_t const tiles = ((p.m + tm - 1) / tm) * ((p.n + tn - 1) / tn);
      if (tiles > 0x7fffffff || p.batch * plan->split_k > 65535) {  // the kernel's grid: (tiles, 1, batch x split)
        return not_supported("gemm: the sm80 kernel's grid cannot hold ", tiles, " tiles and batch x split_k = ",
                             p.batch * plan->split_k, " (at most 2^31 - 1 tiles and 65535 batch x split); split the "
                             "batch into calls of at most 65535");
      }
    }
    plan->why = "sm80 kernel: " + why_not;
    return {};
  }
  plan->family = GemmFamily::kSm90;
  plan->copy_operands = !r.hopper_layouts || !r.tma_aligned || p.k < 1;
  plan->padded_k = plan->copy_operands ? std::max<index_t>((p.k + 7) / 8 * 8, 8) : p.k;
  GemmCoord const run{p.m, p.n, plan->padded_k, p.batch};
  int split = r.split_k;
  std::string split_note;
  if (split >= 2 && !sm90_can_split(run, split)) {
    split_note = status_message("; split_k = ", split, " not taken: the Hopper kernel splits batch 1 only, into parts "
                                "of K (", run.k, ") that are whole 16-byte pieces");
    split = 1;
  }
  plan->sm90 = plan_gemm_sm90(run, device, false, r.tile, split, r.residual_by_tma);
  plan->why = plan->sm90.why + split_note;
  if (plan->copy_operands) {
    plan->why += status_message("; A and B copied first into row-major A and K-major B",
                                plan->padded_k != p.k ? status_message(", K zero-padded ", p.k, " -> ", plan->padded_k) : "",
                                " (", !r.hopper_layouts ? "their layouts are not the kernel's"
                                      : p.k < 1        ? "k = 0"
                                                       : "TMA cannot read them: 16-byte alignment", ")");
  }
  return {};
}

// gemm::Gemm's workspace for a Hopper plan: the packed copies of A (m x padded_k row-major), then of B
// (n x padded_k), then the in-kernel split's sums and tickets, each on a 256-byte boundary. An operand with
// batch stride 0 (one matrix for the whole batch) is copied once.
inline constexpr std::size_t kGemmWorkspaceAlign = 256;

inline index_t copied_batches(index_t batch, index_t batch_stride) { return batch > 1 && batch_stride == 0 ? 1 : batch; }

struct HopperWorkspace {
  std::size_t b_offset = 0;      // B's copy
  std::size_t split_offset = 0;  // the split's sums (after the copies)
  std::size_t bytes = 0;         // the whole workspace
};

inline HopperWorkspace hopper_workspace(GemmPlan const& plan, GemmCoord const& p, index_t batch_stride_a,
                                        index_t batch_stride_b, std::size_t element_bytes) {
  auto const round_up = [](std::size_t bytes) {
    return (bytes + kGemmWorkspaceAlign - 1) / kGemmWorkspaceAlign * kGemmWorkspaceAlign;
  };
  auto const copy = [&](index_t rows, index_t batch_stride) {
    return round_up(static_cast<std::size_t>(copied_batches(p.batch, batch_stride) * rows * plan.padded_k) *
                    element_bytes);
  };
  HopperWorkspace w;
  if (plan.copy_operands) {
    w.b_offset = copy(p.m, batch_stride_a);
    w.split_offset = w.b_offset + copy(p.n, batch_stride_b);
  }
  GemmCoord const run{p.m, p.n, plan.padded_k, p.batch};
  w.bytes = w.split_offset +
            (plan.sm90.split_k > 1 ? sm90_split_workspace_bytes(run, plan.sm90.tile_m, plan.sm90.tile_n) : 0);
  return w;
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
