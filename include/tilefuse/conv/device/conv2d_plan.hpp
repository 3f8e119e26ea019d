// The convolution planner: which kernel family, source, tile, split count and split reduction a problem
// gets, as a plain function of values (the problem, the element type, facts about the epilogue tree
// and the device, explicit overrides). conv::Conv2d calls it, and so does the Python package (through
// tilefuse._C), so both make every choice in this one place; describe() texts come from the plan.
// Facts about the call's tensors are inputs (whether the operands and the residual suit TMA); what the
// planner cannot know (whether a binary holds a kernel's code) conv::Conv2d checks after it, falling back
// to the sm80 kernel with the reason.
// Host code, no CUDA runtime calls.
//
// The routing (conv::Conv2d's two kernels):
//   the sm80 path (mma.sync, conv/kernel/implicit_gemm_operands.h; runs on sm_80, sm_89 and sm_90), and
//   the Hopper kernel (TMA + WGMMA, conv/kernel/sm90_implicit_gemm.h: gemm/kernel/sm90_gemm.h with a
//   conv operand source), which the default config (Sm80AutoConfig) picks for fprop when the device
//   is an sm_90, the binary holds the kernel's sm_90a code, the elements are bf16 or fp16, C and K are
//   multiples of 8, x and w are 16-byte aligned and split_k is 0 or 1. Its source of x is TMA im2col
//   (FpropIm2colOperands) when C is a multiple of 64 (the k-tile) and the padding, strides and dilated filter fit
//   an im2col tensor map (validate(TensorMapIm2colArgs)), else the cp.async gathering producer
//   warpgroup (FpropGatherOperands). Arguments::overrides (ConvOverrides) may force the gather
//   source, the Hopper tile and schedule, the family or the split reduction (tests, the bench).
//   dgrad with bf16 or fp16, both strides 1 and K a multiple of 64
//   also runs on the Hopper kernel (sm90::DgradIm2colOperands: an fprop of dy over the flipped,
//   transposed filter, dy by TMA im2col, w read MN-major) when its im2col tensor map is valid; wgrad
//   with bf16 or fp16, C a multiple of 64 and a valid im2col map of x too (sm90::WgradOperands: dy^T
//   and im2col(x) MN-major, split-K as the kernel's batch; split_k = 0 lets the wave model choose,
//   choose_wgrad_tile). Its splits add their fp32 tiles into one sum at L2 and the last applies the tree
//   (gemm::Sm90SplitReduce), or with Arguments::deterministic (or ConvOverrides::split_reduction)
//   store fp32 partials that a second pass sums in a fixed order and applies the tree to.
//   Everything else, and every explicit Sm80 config, runs the sm80 path. describe() says which ran
//   and why.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan_types.hpp>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/runtime/tensor_map.hpp>

namespace tilefuse::conv {

// The implicit GEMM of the mode: (rows, cols, k, batch 1).
inline GemmCoord conv_output_matrix(Conv2dProblem const& problem) {
  GemmCoord const g = problem.gemm_extent(problem.mode);
  return GemmCoord{g.m, g.n, g.k, 1};
}

// The tensor map type of an element (FP8 travels as bytes: TMA only moves them).
inline CUtensorMapDataType conv_tensor_map_type(ConvElement e) {
  return e == ConvElement::kBfloat16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
         : e == ConvElement::kFloat16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : e == ConvElement::kFloat32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                      : CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

// The swizzle of a k-tile row of `channels` elements: what the kernel's wgmma descriptors read.
inline CUtensorMapSwizzle conv_swizzle_of(ConvElement e, int channels) {
  return channels * element_bytes(e) == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
}

// x (N, H, W, C) of fprop problem p as the 4D im2col tensor map {C, W, H, N}: `channels` x `pixels` per
// copy, 128-byte swizzle (64-byte for 64-byte rows), the pixel box of filter-window origins, walked with
// the convolution's strides. (dgrad: p = dgrad_as_fprop, x = dy.)
inline TensorMapIm2colArgs conv_im2col_args(Conv2dProblem const& p, ConvElement element, void const* x, int pixels,
                                            int channels) {
  auto const bytes = static_cast<std::uint64_t>(element_bytes(element));
  TensorMapIm2colArgs t;
  t.data_type = conv_tensor_map_type(element);
  t.rank = 4;
  t.global_address = const_cast<void*>(x);
  t.global_dim[0] = static_cast<cuuint64_t>(p.C);
  t.global_dim[1] = static_cast<cuuint64_t>(p.W);
  t.global_dim[2] = static_cast<cuuint64_t>(p.H);
  t.global_dim[3] = static_cast<cuuint64_t>(p.N);
  t.global_strides[0] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.C) * bytes);
  t.global_strides[1] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.W * p.C) * bytes);
  t.global_strides[2] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.H * p.W * p.C) * bytes);
  // Entry 0 is W, entry 1 is H (the order of global_dim[1 ..]).
  auto const clamp_int = [](index_t v) {
    return static_cast<int>(std::clamp<index_t>(v, std::numeric_limits<int>::min() / 2, std::numeric_limits<int>::max() / 2));
  };
  t.pixel_box_lower_corner[0] = clamp_int(-p.pad_w);
  t.pixel_box_lower_corner[1] = clamp_int(-p.pad_h);
  t.pixel_box_upper_corner[0] = clamp_int(p.pad_w - (p.S - 1) * p.dilation_w);
  t.pixel_box_upper_corner[1] = clamp_int(p.pad_h - (p.R - 1) * p.dilation_h);
  t.channels_per_pixel = static_cast<cuuint32_t>(channels);
  t.pixels_per_column = static_cast<cuuint32_t>(pixels);
  t.element_strides[0] = 1;
  t.element_strides[1] = static_cast<cuuint32_t>(std::clamp<index_t>(p.stride_w, 0, 1 << 20));
  t.element_strides[2] = static_cast<cuuint32_t>(std::clamp<index_t>(p.stride_h, 0, 1 << 20));
  t.element_strides[3] = 1;
  t.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  t.swizzle = conv_swizzle_of(element, channels);
  t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return t;
}

namespace plan_detail {

// The tiles the wave models weigh: TileN, the relative mainloop efficiency measured on the H200, a
// name for describe(), and TileM (128, or 64 for the ping-pong 64-row tiles).
struct TileCandidate {
  ConvSm90Tile tile;
  int n;
  double efficiency;
  char const* name;
  int m = 128;
};
inline constexpr std::array<TileCandidate, 3> kCooperative{{{ConvSm90Tile::kLarge, 256, 1.0, "128x256"},
                                                            {ConvSm90Tile::kMedium, 128, 0.92, "128x128"},
                                                            {ConvSm90Tile::kNarrow, 64, 0.75, "128x64"}}};
// 128x160: 16-bit fprop by im2col, trees without the TMA residual, and only where N is not a multiple of
// 128 (UNet's N = 320 layers 23% and 43% faster than 128x128, slower elsewhere: docs/notes/conv_sm90.md).
inline constexpr TileCandidate kWide{ConvSm90Tile::kWide, 160, 0.96, "128x160"};
// wgrad's 64-row tiles; efficiencies fitted to ResNet-50's layers (conv_sm90.md, "wgrad 64-row tiles").
inline constexpr std::array<TileCandidate, 2> kWgradShort{{{ConvSm90Tile::kShort, 64, 0.44, "64x64", 64},
                                                          {ConvSm90Tile::kShortWide, 128, 0.84, "64x128", 64}}};
// 16-bit fprop's 64x256 tile; efficiency fitted to ResNet-50's short-K 1x1 layers (conv_sm90.md, "64x256").
inline constexpr TileCandidate kFpropShort{ConvSm90Tile::kShortLarge, 256, 0.6, "64x256", 64};
// A TMA-residual epilogue's length in k-tiles, which the other ping-pong warpgroup's mainloop hides
// only as far as it lasts (conv_sm90.md, "TMA residual on 64x256").
inline constexpr double kResidualEpilogueKTiles = 3.5;

// How many 128-row tiles' time a block takes for `per_block` tiles of `tile_m` rows: 64-row (ping-pong)
// tiles run two at a time at about a 128-row tile's cost per pair, a lone one at about half that.
inline double tile_rounds(int tile_m, index_t per_block) {
  if (tile_m == 128) return static_cast<double>(per_block);
  return per_block == 1 ? 0.5 : static_cast<double>((per_block + 1) / 2);
}

inline bool is_pointwise(Conv2dProblem const& p) {
  return p.R == 1 && p.S == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
}

// The im2col map's verdict on the geometry alone (the caller checks the address when it encodes).
inline Status im2col_geometry(Conv2dProblem const& p, ConvElement element, int pixels, int channels) {
  void const* const aligned_placeholder = reinterpret_cast<void const*>(std::uintptr_t{256});
  return validate(conv_im2col_args(p, element, aligned_placeholder, pixels, channels));
}

// The Hopper source: fills plan->im2col, half_k, pointwise and why_source; false when there is no source.
inline bool choose_source(ConvPlanInput const& in, ConvPlan* plan) {
  Conv2dProblem const& p = in.problem;
  ConvMode const mode = p.mode;
  if (mode == ConvMode::kDgrad) {
    if (p.stride_h != 1 || p.stride_w != 1) {
      plan->why_source = status_message("the strides are ", p.stride_h, "x", p.stride_w,
                                        " (the Hopper dgrad runs stride 1: an fprop of dy over the flipped filter)");
    } else if (p.K % 64 != 0) {
      plan->why_source = status_message("K = ", p.K, " is not a multiple of 64, so a k-tile of dy spans two filter taps");
    } else if (Status const v = im2col_geometry(dgrad_as_fprop(p), in.element, 128, 64); !v.ok()) {
      plan->why_source = "dy's im2col tensor map is refused: " + v.message();
    } else {
      plan->why_source = "stride 1, K a multiple of 64, padding and dilated filter within the im2col tensor map's limits";
      plan->im2col = true;
    }
  } else if (mode == ConvMode::kWgrad) {
    if (p.C % 64 != 0) {
      plan->why_source = status_message("C = ", p.C, " is not a multiple of 64, so a 64-column block of r*s*c spans two filter taps");
    } else if (Status const v = im2col_geometry(p, in.element, 64, 64); !v.ok()) {
      plan->why_source = "x's im2col tensor map is refused: " + v.message();
    } else {
      plan->why_source = "C a multiple of 64, padding, strides and dilated filter within the im2col tensor map's limits";
      plan->im2col = true;
    }
  } else if (in.overrides.sm90_source == ConvSource::kGather) {
    plan->why_source = "the gather source forced (ConvOverrides::sm90_source)";
  } else {
    index_t const tile_k = sm90_conv_tile_k(in.element);
    bool const fp8 = is_fp8(in.element);
    bool const half_k = fp8 && p.C % tile_k != 0 && p.C % 64 == 0;
    if (p.C % tile_k != 0 && !half_k) {
      plan->why_source = status_message("C = ", p.C, " is not a multiple of ", tile_k, fp8 ? " or of 64" : "",
                                        ", so a k-tile spans two filter taps");
    } else if (Status const v = im2col_geometry(p, in.element, 128, 64); !v.ok()) {
      plan->why_source = "x's im2col tensor map is refused: " + v.message();
    } else {
      plan->half_k = half_k;
      plan->im2col = true;
      plan->why_source = status_message(
          "C a multiple of ", half_k ? 64 : tile_k,
          half_k ? " (not of 128: FP8 k-tiles of 64 channels in 64-byte swizzled rows, twice the stages)" : "",
          ", padding, strides and dilated filter within the im2col tensor map's limits");
    }
  }
  plan->pointwise = plan->im2col && is_pointwise(p);
  if (plan->pointwise) plan->why_source += "; 1x1, stride 1, no padding: its im2col matrix is the tensor, loaded by a tiled map";
  return plan->im2col || mode == ConvMode::kFprop;  // dgrad and wgrad have no gathering source
}

// The fprop (and dgrad) tile by a wave model of the persistent kernel (docs/notes/gemm_sm90.md): the SM
// with the most tiles finishes last, so a tile config costs
//   ceil(tiles / SMs) x TileN x (k-tiles + 3) / efficiency
// where 3 k-tiles is about a tile's epilogue. Ties go to the wider tile. 128x160 and 64x256 are
// candidates where they exist (wide, short); 64x256 costs ceil(tiles / SMs) x 64 / 128 x TileN x
// k-tiles / efficiency (its epilogue runs under the other warpgroup's mainloop), or with a TMA residual
// max(k-tiles, kResidualEpilogueKTiles).
inline ConvSm90Tile choose_tile(GemmCoord const& g, index_t tile_k, bool wide, bool short_tile, bool residual_by_tma,
                                int sms, std::string* why) {
  index_t const k_tiles = (g.k + tile_k - 1) / tile_k;
  wide = wide && g.n % 128 != 0;
  ConvSm90Tile best = ConvSm90Tile::kLarge;
  double best_cost = 0.0;
  std::array<TileCandidate, 5> const candidates{kCooperative[0], kWide, kCooperative[1], kCooperative[2], kFpropShort};
  double const short_k_tiles =
      residual_by_tma ? std::max(static_cast<double>(k_tiles), kResidualEpilogueKTiles) : static_cast<double>(k_tiles);
  for (TileCandidate const& c : candidates) {
    if (c.tile == ConvSm90Tile::kWide && !wide) continue;
    if (c.tile == ConvSm90Tile::kShortLarge && !short_tile) continue;
    index_t const tiles = ((g.m + c.m - 1) / c.m) * ((g.n + c.n - 1) / c.n);
    index_t const per_block = (tiles + sms - 1) / sms;
    double const cost = c.m == 128 ? static_cast<double>(per_block) * c.n * (static_cast<double>(k_tiles) + 3.0) / c.efficiency
                                   : static_cast<double>(per_block) * c.m / 128.0 * c.n * short_k_tiles / c.efficiency;
    *why += status_message(why->empty() ? "" : ", ", c.name, ": ", tiles, " tiles, ", per_block, " per SM, cost ",
                           static_cast<index_t>(cost));
    if (best_cost == 0.0 || cost < best_cost * 0.999) {
      best = c.tile;
      best_cost = cost;
    }
  }
  return best;
}

// The wgrad tile and split count: the model above with K split into s parts,
//   tile_rounds(TileM, ceil(tiles * s / SMs)) x TileN x (k-tiles / s + 3) / efficiency
// plus, for s > 1, the reduction (s fp32 partials read and D written at ~3000 bytes/ns, ~3 us of launch
// and tail) in the same units (one unit ~ 3 ns: a 128 x 1 x 64 slice of a k-tile at the H200's rate).
// requested > 1 fixes s (capped at the k-tiles); forced fixes the tile's shape.
inline ConvSm90Tile choose_wgrad_tile(GemmCoord const& g, int requested, std::optional<ConvSm90Tile> forced, int sms,
                                      int* split, std::string* why) {
  index_t const k_tiles = std::max<index_t>(1, (g.k + 63) / 64);
  // A forced tile's candidate: the one of its shape (a ping-pong tile's is its cooperative twin's).
  auto const same_shape = [](ConvSm90Tile t, TileCandidate const& c) {
    std::array<int, 2> const shape = tile_shape_of(t);
    return c.m == shape[0] && c.n == shape[1];
  };
  std::array<TileCandidate, 5> const candidates{kCooperative[0], kCooperative[1], kCooperative[2], kWgradShort[0],
                                                kWgradShort[1]};
  index_t const max_split = requested > 1 ? std::min<index_t>(requested, k_tiles) : std::min<index_t>(k_tiles, 256);
  index_t const min_split = requested > 1 ? max_split : 1;
  double best_cost = 0.0;
  ConvSm90Tile best = ConvSm90Tile::kLarge;
  int best_split = 1;
  for (TileCandidate const& c : candidates) {
    if (forced && !same_shape(*forced, c)) continue;
    index_t const tiles = ((g.m + c.m - 1) / c.m) * ((g.n + c.n - 1) / c.n);
    double cost_here = 0.0;
    int split_here = 1;
    for (index_t s = min_split; s <= (requested == 1 ? 1 : max_split); ++s) {
      index_t const per_block = (tiles * s + sms - 1) / sms;
      index_t const k_per_split = (k_tiles + s - 1) / s;
      double cost = tile_rounds(c.m, per_block) * c.n * (static_cast<double>(k_per_split) + 3.0) / c.efficiency;
      if (s > 1) cost += (static_cast<double>(s + 1) * g.m * g.n * 4.0 / 3000.0 + 3000.0) / 3.0;
      if (cost_here == 0.0 || cost < cost_here * 0.999) {
        cost_here = cost;
        split_here = static_cast<int>(s);
      }
    }
    *why += status_message(why->empty() ? "" : ", ", c.name, ": ", tiles, " tiles x split ", split_here, ", cost ",
                           static_cast<index_t>(cost_here));
    if (best_cost == 0.0 || cost_here < best_cost * 0.999) {
      best = c.tile;
      best_cost = cost_here;
      best_split = split_here;
    }
  }
  *split = best_split;
  return best;
}

// Ping-pong consumers where they measured faster with the im2col source (conv_sm90.md, "ping-pong"):
// the 128x64 tile unless the residual comes by TMA, the 128x128 tile when the epilogue reads no memory.
inline ConvSm90Tile choose_schedule(ConvSm90Tile tile, TreeFacts const& tree, std::string* why) {
  if (tile == ConvSm90Tile::kNarrow && tree.residual_by_tma) {
    *why += "; cooperative consumers (the residual by TMA)";
    return tile;
  }
  if (tile == ConvSm90Tile::kNarrow) {
    *why += "; ping-pong consumers (128x64 tiles)";
    return ConvSm90Tile::kPingPongNarrow;
  }
  if (tile == ConvSm90Tile::kMedium && !tree.reads_memory) {
    *why += "; ping-pong consumers (128x128 tiles, an epilogue that reads no memory)";
    return ConvSm90Tile::kPingPongMedium;
  }
  return tile;
}

// Why a forced tile does not exist for this operation and source, or nullptr where it does.
inline char const* why_no_tile(ConvSm90Tile tile, ConvMode mode, bool wide_exists, bool short_large_exists) {
  if (tile == ConvSm90Tile::kWide && !wide_exists) {
    return "wide ignored: 128x160 is for 16-bit fprop by im2col whose tree loads no residual by TMA.";
  }
  if ((tile == ConvSm90Tile::kShort || tile == ConvSm90Tile::kShortWide) && mode != ConvMode::kWgrad) {
    return "64x64 / 64x128 ignored: those 64-row tiles are wgrad's.";
  }
  if (tile == ConvSm90Tile::kShortLarge && !short_large_exists) return "64x256 ignored: 64x256 is for 16-bit fprop by im2col.";
  return nullptr;
}

// The Hopper kernel's part of the plan; false (with plan->why_not_hopper) where it cannot run.
inline bool plan_sm90(ConvPlanInput const& in, ConvPlan* plan) {
  Conv2dProblem const& p = in.problem;
  ConvMode const mode = p.mode;
  GemmCoord const g = conv_output_matrix(p);
  bool const fp8 = is_fp8(in.element);
  index_t const chunk = 16 / element_bytes(in.element);
  if (!in.auto_config) return false;  // the caller chose the sm80 kernel: nothing to explain
  if (!(is_16bit(in.element) || (fp8 && mode == ConvMode::kFprop))) {
    plan->why_not_hopper = "it takes bf16 or fp16 operands (FP8 for fprop)";
    return false;
  }
  if (in.overrides.family == ConvFamily::kSm80) {
    plan->why_not_hopper = "the sm80 kernel forced (ConvOverrides::family)";
    return false;
  }
  if (in.device.major == 0) {
    plan->why_not_hopper = "no CUDA device is available";
    return false;
  }
  if (!in.device.is_sm90()) {
    plan->why_not_hopper = status_message("the device is sm_", in.device.major, in.device.minor,
                                          ", and the Hopper kernel runs on sm_90 only");
    return false;
  }
  if (!plan->aligned) {
    plan->why_not_hopper = status_message("its gathers need C and K multiples of ", chunk,
                                          " and 16-byte-aligned operands (", plan->why_narrow, ")");
    return false;
  }
  if (in.split_k > 1 && mode != ConvMode::kWgrad) {
    plan->why_not_hopper = status_message("split_k = ", in.split_k, " was asked for, and the Hopper kernel splits K for wgrad only");
    return false;
  }
  if (g.m > std::numeric_limits<int>::max() - 256) {
    plan->why_not_hopper = status_message(mode == ConvMode::kDgrad ? "N*H*W = " : "N*P*Q = ", g.m,
                                          " is too close to 2^31 for its 32-bit pixel indices");
    return false;
  }
  if (!choose_source(in, plan)) {
    plan->why_not_hopper = status_message("its ", mode == ConvMode::kDgrad ? "dgrad loads dy" : "wgrad loads x",
                                          " by TMA im2col only, and ", plan->why_source);
    return false;
  }
  bool const fprop16 = mode == ConvMode::kFprop && !fp8;
  bool const wide_exists = fprop16 && plan->im2col && !in.tree.residual_by_tma;
  bool const short_large_exists = fprop16 && plan->im2col;
  std::optional<ConvSm90Tile> forced = in.overrides.sm90_tile;
  if (char const* why = forced ? why_no_tile(*forced, mode, wide_exists, short_large_exists) : nullptr) {
    plan->why_tile = status_message("ConvOverrides::sm90_tile = ", why, " ");
    forced.reset();
  }
  plan->sm_count = in.device.sms();
  ConvSm90Tile tile = ConvSm90Tile::kLarge;
  if (mode == ConvMode::kWgrad) {
    tile = choose_wgrad_tile(g, in.split_k, forced, plan->sm_count, &plan->split_k, &plan->why_tile);
  } else {
    tile = choose_tile(g, plan->half_k ? 64 : sm90_conv_tile_k(in.element), wide_exists, short_large_exists,
                       in.tree.residual_by_tma, plan->sm_count, &plan->why_tile);
  }
  if (forced) {
    plan->why_tile += "; forced (ConvOverrides::sm90_tile)";
    tile = *forced;
  } else if (plan->im2col) {
    tile = choose_schedule(tile, in.tree, &plan->why_tile);
  }
  plan->sm90_tile = tile;
  if (mode != ConvMode::kWgrad) plan->split_k = 1;
  // With 12 or more splits the kernel sums them (at 4-8 splits a split's tail after every mainloop costs
  // more than the pass's reads: conv_sm90.md, "in-kernel split-K"), unless deterministic sums are asked for.
  if (plan->split_k > 1) {
    plan->split_in_kernel = in.overrides.split_reduction ? *in.overrides.split_reduction == SplitReduction::kInKernel
                                                         : !in.deterministic && plan->split_k >= 12;
  }
  return true;
}

}  // namespace plan_detail

// The Hopper wgrad's split-K as it runs: K (the pixels) in pieces of k_per_split (whole 64-pixel k-tiles),
// `splits` of them (at most plan.split_k: no split past the last pixel), summed in the kernel or by a pass.
enum class ConvSm90Split { kNone, kInKernel, kPass };
struct ConvSm90Splits {
  index_t k_per_split = 0;
  index_t splits = 1;
  ConvSm90Split reduction = ConvSm90Split::kNone;
};

inline ConvSm90Splits conv_sm90_splits(GemmCoord const& g, ConvPlan const& plan) {
  ConvSm90Splits s;
  index_t const k_tiles = (g.k + 63) / 64;
  s.k_per_split = ((k_tiles + plan.split_k - 1) / plan.split_k) * 64;
  s.splits = (g.k + s.k_per_split - 1) / s.k_per_split;
  if (s.splits > 1) s.reduction = plan.split_in_kernel ? ConvSm90Split::kInKernel : ConvSm90Split::kPass;
  return s;
}

// Whether a tile runs the cooperative schedule (else ping-pong); Conv2d checks it against each config.
inline constexpr bool conv_sm90_cooperative(ConvSm90Tile tile, bool im2col) {
  switch (tile) {
    case ConvSm90Tile::kPingPongNarrow:
    case ConvSm90Tile::kPingPongMedium: return !im2col;  // the gather source runs them cooperatively
    case ConvSm90Tile::kShort:
    case ConvSm90Tile::kShortWide:
    case ConvSm90Tile::kShortLarge: return false;
    default: return true;
  }
}

// Whether a tree whose one 16-bit residual the kernel can load by TMA (TreeFacts::residual_by_tma) gets it
// so on this config (Sm90ConvTmaAux): the cooperative tiles, and fprop's 64-row tile, whose sub-tiles the
// owning warpgroup reads. The 128-row ping-pong tiles load it as configured.
inline constexpr bool conv_sm90_residual_config(ConvMode mode, bool cooperative, int tile_m) {
  return cooperative || (mode == ConvMode::kFprop && tile_m == 64);
}

// Whether the planned kernel loads the tree's residual by TMA (then it must be aligned for TMA).
inline bool conv_sm90_loads_residual_by_tma(ConvMode mode, ConvPlan const& plan, TreeFacts const& tree, ConvSm90Split split) {
  return split == ConvSm90Split::kNone && tree.residual_by_tma &&
         conv_sm90_residual_config(mode, conv_sm90_cooperative(plan.sm90_tile, plan.im2col), tile_shape_of(plan.sm90_tile)[0]);
}

// Where the Hopper kernel cannot run a plan (its residual is not aligned for TMA; in conv::Conv2d also a binary
// without its code): the sm80 kernel, with the reason.
inline void fall_back_to_sm80(ConvPlan* plan, std::string why) {
  plan->family = ConvFamily::kSm80;
  plan->why_not_hopper = std::move(why);
  plan->split_k = plan->sm80_split_k;
  plan->split_in_kernel = false;
}

// The plan of a valid problem (conv::check(problem) passed; groups == 1).
inline ConvPlan plan_conv2d(ConvPlanInput const& in) {
  Conv2dProblem const& p = in.problem;
  GemmCoord const g = conv_output_matrix(p);
  ConvPlan plan;
  // 16-byte chunks along channels need whole chunks of C and K and aligned tensors.
  index_t const chunk = 16 / element_bytes(in.element);
  if (p.C % chunk != 0 || p.K % chunk != 0) {
    plan.why_narrow = status_message("C = ", p.C, " and K = ", p.K, " are not both multiples of ", chunk);
  } else if (!in.operands_aligned) {
    plan.why_narrow = p.mode == ConvMode::kFprop   ? "x or w is not 16-byte aligned"
                      : p.mode == ConvMode::kDgrad ? "dy or w is not 16-byte aligned"
                                                   : "dy or x is not 16-byte aligned";
  }
  plan.aligned = plan.why_narrow.empty();
  // The sm80 kernel's tile by its wave model, then split_k = 0 picks the splits for that tile.
  int const sms = in.device.sms();
  plan.sm80_tile = gemm::choose_sm80_tile(g, in.split_k > 0 ? in.split_k : 1, sms);
  plan.split_k = in.split_k;
  if (in.split_k == 0) {
    std::array<int, 3> const tile = gemm::sm80_tile_shape(plan.sm80_tile);
    plan.split_k = gemm::choose_split_k(g, tile[0], tile[1], tile[2], sms);
  }
  plan.sm80_split_k = plan.split_k;
  if (plan_detail::plan_sm90(in, &plan)) {
    plan.family = ConvFamily::kSm90;
    if (!in.residual_unaligned.empty() &&
        conv_sm90_loads_residual_by_tma(p.mode, plan, in.tree, conv_sm90_splits(g, plan).reduction)) {
      fall_back_to_sm80(&plan, in.residual_unaligned);
    }
  } else {
    plan.split_k = plan.sm80_split_k;
  }
  return plan;
}

// Zero channels to add to x and w so that C is a whole number of 16-byte chunks: then the aligned sm80
// path or the Hopper kernel takes the problem instead of the element-wise gathers (ResNet-50's 3-channel
// stem at N = 64 on an H200: fprop 0.89 -> 0.36 ms, wgrad 2.73 -> 0.90 ms padded to 8). 0 where C already
// is, or where K is not (the output's gathers would stay element-wise). The caller pads and slices.
inline index_t channels_to_pad(Conv2dProblem const& p, ConvElement element) {
  index_t const chunk = 16 / element_bytes(element);
  if (p.C % chunk == 0 || p.K % chunk != 0) return 0;
  return chunk - p.C % chunk;
}

}  // namespace tilefuse::conv
