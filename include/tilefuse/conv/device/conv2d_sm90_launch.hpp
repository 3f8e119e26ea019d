// What a host needs, beside the plan, to launch the Hopper conv kernel the planner chose: the wgrad's
// split of the pixels, the kernel's C++ type (spelled for a JIT compile), and the tensor maps of its two
// operands. conv::Conv2d launches through these, and so does the Python package (tilefuse._C), so the
// instantiation and the maps are made in one place. Host code; the maps go through the host adapter.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <tilefuse/arch/tma.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>

namespace tilefuse::conv {

// The workspace of the in-kernel split-K, the GEMM's split layout (gemm_plan.hpp): the m x n fp32 sums, then a
// ticket per 16-row slice of every tile of 128 x 64 (enough for every Hopper wgrad tile). Zeroed before each launch.
inline std::size_t conv_sm90_split_tickets_offset(GemmCoord const& g) { return gemm::sm90_split_tickets_offset(g); }
inline std::size_t conv_sm90_split_sums_bytes(GemmCoord const& g) { return gemm::sm90_split_workspace_bytes(g, 128, 64); }

// The C++ spelling of an element type (tilefuse/core/numeric_types.h).
inline char const* cpp_name_of(ConvElement e) {
  switch (e) {
    case ConvElement::kBfloat16: return "tilefuse::bfloat16_t";
    case ConvElement::kFloat16: return "tilefuse::half_t";
    case ConvElement::kE4m3: return "tilefuse::float_e4m3_t";
    case ConvElement::kE5m2: return "tilefuse::float_e5m2_t";
    default: return "float";
  }
}

// One Hopper kernel the planner can pick: its type (conv_sm90_kernel_type), the tree it stores by, its split.
struct ConvSm90KernelChoice {
  std::string kernel;
  std::string kernel_tree;
  ConvSm90Split split = ConvSm90Split::kNone;
};
std::vector<ConvSm90KernelChoice> conv_sm90_kernel_choices(ConvMode mode, ConvElement element, TreeFacts const& tree,
                                                           std::string const& epilogue);

// The tree of the pass-reduced wgrad's main kernel: fp32 partials, one matrix per split (batch).
inline char const* conv_sm90_partial_tree() { return "tilefuse::epilogue::Store<\"D\", float, tilefuse::epilogue::Acc>"; }

// The planned Hopper kernel's type, `epilogue` spelling its tree (the pass-reduced wgrad's main kernel
// stores fp32 partials by its own tree, which `epilogue` does not enter: conv_sm90_partial_tree), and
// the config as Conv2d instantiates it: the element's ConfigFor (or HalfK), then Sm90ConvTmaAux for a
// residual by TMA, or Sm90SplitReduce for the in-kernel split-K.
inline std::string conv_sm90_kernel_type(ConvMode mode, ConvElement element, ConvPlan const& plan, TreeFacts const& tree,
                                         ConvSm90Split split, std::string const& epilogue) {
  std::string const ns = "tilefuse::conv::sm90::";
  std::string const e = cpp_name_of(element);
  std::string config = ns + config_name_of(plan.sm90_tile, plan.im2col);
  config = plan.half_k ? ns + "Sm90ConvHalfK<" + ns + "Sm90ConvConfigFor<" + e + ", " + config + ">>"
                       : ns + "Sm90ConvConfigFor<" + e + ", " + config + ">";
  std::string tree_type = epilogue;
  if (split == ConvSm90Split::kInKernel) {
    config = "tilefuse::gemm::Sm90SplitReduce<" + config + ">";
  } else if (split == ConvSm90Split::kPass) {
    tree_type = conv_sm90_partial_tree();
  } else if (conv_sm90_loads_residual_by_tma(mode, plan, tree, split)) {
    config = ns + "Sm90ConvTmaAux<" + config + ">";
  }
  char const* kernel = mode == ConvMode::kWgrad   ? "WgradKernel"
                       : mode == ConvMode::kDgrad ? "DgradIm2colKernel"
                       : plan.im2col              ? "FpropIm2colKernel"
                                                  : "FpropKernel";
  return ns + kernel + "<" + e + ", " + tree_type + ", " + config + ">";
}

// One 3D tiled tensor map of `data`: extents and the strides of dims 1 and 2 in elements, innermost first;
// L2 promotion 256 B, zero fill. `who` and `name` are for messages.
inline Status encode_conv_tiled(char const* who, char const* name, ConvElement element, void const* data,
                                std::array<std::uint64_t, 3> extent, std::array<std::uint64_t, 2> stride,
                                std::array<cuuint32_t, 3> box, CUtensorMapSwizzle swizzle, arch::TmaDescriptor* out) {
  static_assert(sizeof(CUtensorMap) == sizeof(arch::TmaDescriptor), "a tensor map is 128 bytes");
  auto const bytes = static_cast<std::uint64_t>(element_bytes(element));
  TensorMapTiledArgs t;
  t.data_type = conv_tensor_map_type(element);
  t.rank = 3;
  t.global_address = const_cast<void*>(data);
  for (int d = 0; d < 3; ++d) {
    t.global_dim[d] = static_cast<cuuint64_t>(extent[d]);
    t.box_dim[d] = box[d];
  }
  t.global_strides[0] = static_cast<cuuint64_t>(stride[0] * bytes);
  t.global_strides[1] = static_cast<cuuint64_t>(stride[1] * bytes);
  t.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  t.swizzle = swizzle;
  t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  CUtensorMap map;
  Status const s = make_tensor_map_tiled(t, &map);
  if (!s.ok()) return {s.code(), status_message(who, ": tensor map of ", name, ": ", s.message())};
  std::memcpy(out, &map, sizeof(map));
  return {};
}

// The activation (fprop's x, dgrad's dy over the equivalent fprop `f`, wgrad's x) in boxes of `pixels` x
// `box_channels`: a pointwise problem's N*H*W pixels of `channels` as the tiled map (channels, N*H*W, 1),
// what the im2col copy of the same box would load; else the im2col map of `f`.
inline Status encode_conv_activation(char const* who, char const* name, ConvElement element, bool pointwise,
                                     Conv2dProblem const& f, void const* data, index_t channels, int pixels,
                                     int box_channels, arch::TmaDescriptor* out) {
  if (pointwise) {
    auto const c = static_cast<std::uint64_t>(channels);
    auto const count = static_cast<std::uint64_t>(f.N * f.H * f.W);
    return encode_conv_tiled(who, name, element, data, {c, count, 1}, {c, c * count},
                             {static_cast<cuuint32_t>(box_channels), static_cast<cuuint32_t>(pixels), 1},
                             conv_swizzle_of(element, box_channels), out);
  }
  CUtensorMap map;
  Status const s = make_tensor_map_im2col(conv_im2col_args(f, element, data, pixels, box_channels), &map);
  if (!s.ok()) return {s.code(), status_message(who, ": im2col tensor map of ", name, ": ", s.message())};
  std::memcpy(out, &map, sizeof(map));
  return {};
}

// The operands of the planned Hopper kernel: `a` and `b` are the mode's GEMM operands (fprop x, w;
// dgrad dy, w; wgrad dy, x), packed NHWC / KRSC. Writes tma_a (not for the gathering fprop, which reads
// x by pointer) and tma_b, and `activation_tiled` (Params::a_tiled, or wgrad's x_tiled).
//   fprop: w (K x R*S*C) as (r*s*c, k, 1), box (TileK, TileN, 1); x by im2col, TileM pixels x TileK.
//   dgrad: w as (C, R*S, K), box (64 channels, 1 tap, 64 filters), 128-byte swizzle (B MN-major);
//          dy by im2col over dgrad_as_fprop(p).
//   wgrad: dy (N*P*Q x K) as (K, N*P*Q, 1), box (64, 64, 1), 128-byte swizzle (A MN-major); x by im2col,
//          64 pixels x 64 channels.
inline Status encode_conv_sm90_operands(Conv2dProblem const& p, ConvElement element, ConvPlan const& plan,
                                        void const* a, void const* b, arch::TmaDescriptor* tma_a,
                                        arch::TmaDescriptor* tma_b, int* activation_tiled) {
  char const* const who = p.mode == ConvMode::kFprop ? "conv2d fprop" : p.mode == ConvMode::kDgrad ? "conv2d dgrad" : "conv2d wgrad";
  std::array<int, 2> const tile = tile_shape_of(plan.sm90_tile);
  int const tile_k = plan.half_k ? 64 : static_cast<int>(sm90_conv_tile_k(element));
  *activation_tiled = plan.pointwise ? 1 : 0;
  auto const u = [](index_t v) { return static_cast<std::uint64_t>(v); };
  if (p.mode == ConvMode::kWgrad) {
    std::uint64_t const pixels = u(p.N * p.P() * p.Q());
    TILEFUSE_RETURN_IF_ERROR(encode_conv_tiled(who, "dy", element, a, {u(p.K), pixels, 1}, {u(p.K), u(p.K) * pixels},
                                               {64, 64, 1}, CU_TENSOR_MAP_SWIZZLE_128B, tma_a));
    return encode_conv_activation(who, "x", element, plan.pointwise, p, b, p.C, 64, 64, tma_b);
  }
  if (p.mode == ConvMode::kDgrad) {
    TILEFUSE_RETURN_IF_ERROR(encode_conv_tiled(who, "w", element, b, {u(p.C), u(p.R * p.S), u(p.K)},
                                               {u(p.C), u(p.R * p.S * p.C)}, {64, 1, 64}, CU_TENSOR_MAP_SWIZZLE_128B, tma_b));
    return encode_conv_activation(who, "dy", element, plan.pointwise, dgrad_as_fprop(p), a, p.K, tile[0], tile_k, tma_a);
  }
  std::uint64_t const rsc = u(p.R * p.S * p.C);
  TILEFUSE_RETURN_IF_ERROR(encode_conv_tiled(who, "w", element, b, {rsc, u(p.K), 1}, {rsc, rsc * u(p.K)},
                                             {static_cast<cuuint32_t>(tile_k), static_cast<cuuint32_t>(tile[1]), 1},
                                             conv_swizzle_of(element, tile_k), tma_b));
  if (!plan.im2col) return {};  // the gathering source reads x by pointer
  return encode_conv_activation(who, "x", element, plan.pointwise, p, a, p.C, tile[0], tile_k, tma_a);
}

// Every Hopper kernel the planner can pick for a 16-bit `mode` and a tree with these facts, whatever the
// problem: each tile of each source the mode has (plan_detail::why_no_tile), each split reduction of
// wgrad. What the Python package prebuilds, so that no problem compiles at run time.
inline std::vector<ConvSm90KernelChoice> conv_sm90_kernel_choices(ConvMode mode, ConvElement element, TreeFacts const& tree,
                                                                  std::string const& epilogue) {
  std::vector<ConvSm90KernelChoice> out;
  bool const fprop16 = mode == ConvMode::kFprop && is_16bit(element);
  for (bool const im2col : {true, false}) {
    if (!im2col && mode != ConvMode::kFprop) continue;  // dgrad and wgrad load by TMA only
    for (int t = 0; t <= static_cast<int>(ConvSm90Tile::kShortLarge); ++t) {
      auto const tile = static_cast<ConvSm90Tile>(t);
      bool const wide_exists = fprop16 && im2col && !tree.residual_by_tma;
      bool const short_large_exists = fprop16 && im2col;
      if (plan_detail::why_no_tile(tile, mode, wide_exists, short_large_exists) != nullptr) continue;
      ConvPlan plan;
      plan.sm90_tile = tile;
      plan.im2col = im2col;
      for (ConvSm90Split const split : {ConvSm90Split::kNone, ConvSm90Split::kInKernel, ConvSm90Split::kPass}) {
        if (split != ConvSm90Split::kNone && mode != ConvMode::kWgrad) continue;
        ConvSm90KernelChoice c{conv_sm90_kernel_type(mode, element, plan, tree, split, epilogue),
                               split == ConvSm90Split::kPass ? conv_sm90_partial_tree() : epilogue, split};
        bool const seen = std::any_of(out.begin(), out.end(), [&](ConvSm90KernelChoice const& o) { return o.kernel == c.kernel; });
        if (!seen) out.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace tilefuse::conv
