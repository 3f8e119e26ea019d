// The convolution planner's vocabulary: the kernel families, sources, Hopper tiles and split reductions a
// plan names, the element types, the overrides tests and the bench set, the facts the planner is given
// (ConvPlanInput) and what it returns (ConvPlan), and the names and shapes of the tiles. The planner itself
// is conv2d_plan.hpp. Host code, no CUDA runtime calls.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/runtime/device_facts.hpp>

namespace tilefuse::conv {

enum class ConvFamily { kSm80, kSm90 };
// The Hopper kernel's source of the activation: TMA im2col (or a tiled map for 1x1 problems), or the
// producer warpgroup's cp.async gathers (fprop only).
enum class ConvSource { kIm2col, kGather };
// 128x256, 128x128, 128x64 cooperative; 128x64 and 128x128 ping-pong (im2col source; with the gather
// source they run as their cooperative tile); 128x160 (16-bit fprop by im2col); the 64-row ping-pong
// tiles 64x64, 64x128 (wgrad) and 64x256 (16-bit fprop).
enum class ConvSm90Tile { kLarge, kMedium, kNarrow, kPingPongNarrow, kPingPongMedium, kWide, kShort, kShortWide, kShortLarge };
// How the Hopper wgrad sums its splits: inside the kernel (at L2, in arrival order) or by a second pass.
enum class SplitReduction { kInKernel, kPass };
enum class ConvElement { kBfloat16, kFloat16, kFloat32, kE4m3, kE5m2 };

inline constexpr int element_bytes(ConvElement e) {
  return e == ConvElement::kFloat32 ? 4 : e == ConvElement::kE4m3 || e == ConvElement::kE5m2 ? 1 : 2;
}
inline constexpr bool is_16bit(ConvElement e) { return e == ConvElement::kBfloat16 || e == ConvElement::kFloat16; }
inline constexpr bool is_fp8(ConvElement e) { return e == ConvElement::kE4m3 || e == ConvElement::kE5m2; }

// Choices a caller (a test, the bench, a user) fixes instead of the models.
struct ConvOverrides {
  std::optional<ConvFamily> family;      // kSm90 where it cannot run is refused by the caller
  std::optional<ConvSm90Tile> sm90_tile;  // ignored (with a note) where the tile does not exist
  std::optional<ConvSource> sm90_source;  // kGather: fprop's cp.async gathers even where im2col is valid
  std::optional<SplitReduction> split_reduction;
  bool phases_in_turn = false;  // a strided dgrad's phases each after the one before (default: side by side)
};

// What the planner needs of the epilogue tree (conv::Conv2d derives them from its type, Python from the
// traced graph; a parity test checks that both agree).
struct TreeFacts {
  bool reads_memory = false;     // an AuxLoad, RowBroadcast or ColBroadcast
  bool residual_by_tma = false;  // the Hopper kernel loads its one 16-bit residual by TMA (Sm90ConvTmaAux)
};

struct ConvPlanInput {
  Conv2dProblem problem;  // problem.mode is the mode
  ConvElement element = ConvElement::kBfloat16;
  TreeFacts tree;
  DeviceFacts device;
  bool auto_config = true;        // the default config (an explicit Sm80 config or an input transform: false)
  bool operands_aligned = true;   // both operands' base pointers are 16-byte aligned
  int split_k = 1;                // requested: 0 lets the planner choose, > 1 fixes it
  bool deterministic = false;     // the Hopper wgrad's splits summed in a fixed order
  // Why TMA cannot read the tree's residual (gemm::tma_residual_unaligned of its pointer and strides; empty:
  // it can, or there is none). A Hopper plan that would load it by TMA falls back to the sm80 kernel.
  std::string residual_unaligned;
  ConvOverrides overrides;
};

struct ConvPlan {
  ConvFamily family = ConvFamily::kSm80;
  int split_k = 1;       // of the family that runs
  int sm80_split_k = 1;  // the sm80 kernel's (a fallback's)
  // The sm80 kernel: its tile, and whether it gathers 16-byte chunks (else element by element) and why not.
  gemm::Sm80Tile sm80_tile = gemm::Sm80Tile::kLarge;
  bool aligned = false;
  std::string why_narrow;
  // The Hopper kernel: why not (family kSm80), or its tile, source and split reduction and why.
  std::string why_not_hopper;
  ConvSm90Tile sm90_tile = ConvSm90Tile::kLarge;
  bool im2col = false;
  bool half_k = false;     // FP8 im2col with k-tiles of 64 channels (C a multiple of 64, not of 128)
  bool pointwise = false;  // 1x1, stride 1, no padding: the activation loads by a tiled map
  bool split_in_kernel = false;
  int sm_count = 0;
  // The Hopper kernel may start while the previous kernel in the stream finishes (LaunchConfig::
  // after_previous_early; it waits for that kernel's writes first): false launches it strictly after.
  bool after_previous_early = true;
  std::string why_source;
  std::string why_tile;
};

// The Hopper conv kernel's k-tile in elements: one 128-byte row of channels.
inline constexpr index_t sm90_conv_tile_k(ConvElement e) { return 128 / element_bytes(e); }

inline char const* name_of(ConvSm90Tile tile) {
  switch (tile) {
    case ConvSm90Tile::kLarge: return "large";
    case ConvSm90Tile::kMedium: return "medium";
    case ConvSm90Tile::kNarrow: return "narrow";
    case ConvSm90Tile::kPingPongNarrow: return "pingpong-narrow";
    case ConvSm90Tile::kPingPongMedium: return "pingpong-medium";
    case ConvSm90Tile::kWide: return "wide";
    case ConvSm90Tile::kShort: return "64x64";
    case ConvSm90Tile::kShortWide: return "64x128";
    case ConvSm90Tile::kShortLarge: return "64x256";
  }
  return "?";
}

// The tile of a name of name_of (the bench's --sm90-tile, the tests); nullopt for anything else.
inline std::optional<ConvSm90Tile> conv_sm90_tile_named(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ConvSm90Tile::kShortLarge); ++i) {
    auto const tile = static_cast<ConvSm90Tile>(i);
    if (name == name_of(tile)) return tile;
  }
  return std::nullopt;
}

// The C++ config of a Hopper conv tile and source (conv/kernel/sm90_implicit_gemm.h; before the
// element's ConfigFor and the residual's Sm90ConvTmaAux, which the kernel's instantiation applies).
inline char const* config_name_of(ConvSm90Tile tile, bool im2col) {
  if (!im2col) {
    switch (tile) {
      case ConvSm90Tile::kNarrow:
      case ConvSm90Tile::kPingPongNarrow: return "Sm90ConvNarrowConfig";
      case ConvSm90Tile::kMedium:
      case ConvSm90Tile::kPingPongMedium: return "Sm90ConvMediumConfig";
      default: return "Sm90ConvLargeConfig";
    }
  }
  switch (tile) {
    case ConvSm90Tile::kNarrow: return "Sm90ConvIm2colNarrowConfig";
    case ConvSm90Tile::kMedium: return "Sm90ConvIm2colMediumConfig";
    case ConvSm90Tile::kPingPongNarrow: return "Sm90ConvIm2colPingPongNarrowConfig";
    case ConvSm90Tile::kPingPongMedium: return "Sm90ConvIm2colPingPongMediumConfig";
    case ConvSm90Tile::kWide: return "Sm90ConvIm2colWideConfig";
    case ConvSm90Tile::kShort: return "Sm90ConvIm2colPingPongShortConfig";
    case ConvSm90Tile::kShortWide: return "Sm90ConvIm2colPingPongShortWideConfig";
    case ConvSm90Tile::kShortLarge: return "Sm90ConvIm2colPingPongShortLargeConfig";
    default: return "Sm90ConvIm2colLargeConfig";
  }
}

// (TileM, TileN) of a Hopper conv tile.
inline constexpr std::array<int, 2> tile_shape_of(ConvSm90Tile tile) {
  switch (tile) {
    case ConvSm90Tile::kMedium:
    case ConvSm90Tile::kPingPongMedium: return {128, 128};
    case ConvSm90Tile::kNarrow:
    case ConvSm90Tile::kPingPongNarrow: return {128, 64};
    case ConvSm90Tile::kWide: return {128, 160};
    case ConvSm90Tile::kShort: return {64, 64};
    case ConvSm90Tile::kShortWide: return {64, 128};
    case ConvSm90Tile::kShortLarge: return {64, 256};
    default: return {128, 256};
  }
}

}  // namespace tilefuse::conv
