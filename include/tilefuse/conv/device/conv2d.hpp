// Conv2d: the device-level implicit-GEMM convolution of the sm_80 path (mma.sync; runs on sm_80,
// sm_89 and sm_90). One class per mode (fprop, dgrad, wgrad); NHWC activations, KRSC filters.
//
// The output is the implicit GEMM's output matrix, row-major and packed, and the epilogue tree sees it
// as such ("D" and every other named input are set over it):
//   fprop: y  = (N*P*Q) x K      rows: output pixels (n, p, q), cols: output channels
//   dgrad: dx = (N*H*W) x C      rows: input pixels (n, h, w),  cols: input channels
//   wgrad: dw = K x (R*S*C)      rows: filters,                 cols: filter taps (r, s, c)
// so a per-channel bias of fprop is a RowBroadcast (one value per column) and a residual is an AuxLoad
// of the same shape as y. Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/conv/kernel/implicit_gemm_operands.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/tree_walk.hpp>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/runtime/pointer_check.hpp>

namespace tilefuse::conv {

// Config: an Sm80TileConfig, or Sm80AutoConfig to let run() pick the large or the small tile per problem.
template <class Element, ConvMode kMode, class Epilogue, class Config = gemm::Sm80AutoConfig>
class Conv2d {
 public:
  using EpilogueArgs = epilogue::EpilogueArguments<Epilogue>;

  struct Arguments {
    Conv2dProblem problem;        // problem.mode must be kMode
    Element const* x = nullptr;   // fprop, wgrad: input activation (N, H, W, C), packed NHWC
    Element const* w = nullptr;   // fprop, dgrad: filter (K, R, S, C), packed KRSC
    Element const* dy = nullptr;  // dgrad, wgrad: output gradient (N, P, Q, K), packed NHWC
    EpilogueArgs epilogue;        // "D" and every named input, over output_matrix(problem)
    int split_k = 1;              // > 1: parallel split-K through workspace_size() bytes; 0: let run() choose
  };

  // The output matrix the epilogue sees: (rows, cols, batch = 1); see the table above.
  static GemmCoord output_matrix(Conv2dProblem const& problem) {
    GemmCoord const g = problem.gemm_extent(kMode);
    return GemmCoord{g.m, g.n, g.k, 1};
  }

  static Status can_implement(Arguments const& args) {
    Plan plan;
    return make_plan(args, &plan);
  }

  static std::size_t workspace_size(Arguments const& args) {
    return gemm::detail::split_k_workspace_bytes(output_matrix(args.problem), resolve(args).split_k);
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if (plan.split_k > 1 && workspace == nullptr) {
      return invalid_argument(op_name(), ": split_k = ", plan.split_k, " needs a workspace of workspace_size() = ",
                              workspace_size(args), " bytes, but workspace is null");
    }
    GemmCoord const gemm = output_matrix(args.problem);
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::initialize_reductions<Epilogue>(plan.epilogue, gemm, stream));
    switch (plan.tile) {
      case gemm::detail::Sm80Tile::kSmall: return launch_with<SmallConfig>(args, plan, workspace, stream);
      case gemm::detail::Sm80Tile::kNarrow: return launch_with<NarrowConfig>(args, plan, workspace, stream);
      default: return launch_with<LargeConfig>(args, plan, workspace, stream);
    }
  }

  // Which kernel runs the problem and why (fast 16-byte path or element-wise path, split-K).
  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = make_plan(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    GemmCoord const g = output_matrix(args.problem);
    switch (plan.tile) {
      case gemm::detail::Sm80Tile::kSmall: return describe_with<SmallConfig>(args, plan, g);
      case gemm::detail::Sm80Tile::kNarrow: return describe_with<NarrowConfig>(args, plan, g);
      default: return describe_with<LargeConfig>(args, plan, g);
    }
  }

 private:
  static constexpr bool kAuto = std::is_same_v<Config, gemm::Sm80AutoConfig>;
  using LargeConfig = std::conditional_t<kAuto, gemm::Sm80LargeConfig, Config>;
  using SmallConfig = std::conditional_t<kAuto, gemm::Sm80SmallConfig, Config>;
  using NarrowConfig = std::conditional_t<kAuto, gemm::Sm80NarrowConfig, Config>;

  template <class Cfg, class Plan>
  static std::string describe_with(Arguments const& args, Plan const& plan, GemmCoord const& g) {
    return status_message("sm80 mma.sync implicit-GEMM ", op_name(), " (GEMM ", g.m, " x ", g.n, " x ", g.k,
                          "), tile ", Cfg::kTileM, "x", Cfg::kTileN, "x", Cfg::kTileK, kAuto ? " (chosen by the wave model)" : "", ", ",
                          Cfg::kWarpsM * Cfg::kWarpsN, " warps, ", Cfg::kStages, " stages, ",
                          plan.aligned ? "16-byte cp.async gathers" : "element-wise gathers (", plan.why_narrow,
                          plan.aligned ? "" : ")", plan.split_k > 1 ? status_message(", split-K ", plan.split_k) : "");
  }

  template <bool kAligned, class Cfg>
  using Kernel = gemm::sm80::TiledKernel<Element, sm80::ImplicitGemmOperands<Element, kMode, kAligned>, Epilogue, Cfg>;

  struct Plan {
    bool aligned = false;
    gemm::detail::Sm80Tile tile = gemm::detail::Sm80Tile::kLarge;  // which config runs (Sm80AutoConfig only)
    int split_k = 1;          // resolved: args.split_k, or the choice for 0
    std::string why_narrow;
    typename Epilogue::Params epilogue;
  };

  static constexpr char const* op_name() {
    return kMode == ConvMode::kFprop ? "conv2d fprop" : kMode == ConvMode::kDgrad ? "conv2d dgrad" : "conv2d wgrad";
  }

  // The two GEMM operands of the mode, with their names for messages: (A, B).
  struct Operand {
    char const* name;
    Element const* data;
  };
  static Operand operand_a(Arguments const& args) {
    return kMode == ConvMode::kFprop ? Operand{"x", args.x} : Operand{"dy", args.dy};
  }
  static Operand operand_b(Arguments const& args) {
    return kMode == ConvMode::kWgrad ? Operand{"x", args.x} : Operand{"w", args.w};
  }

  // The tile and the split count for the problem: the wave model picks the tile (Sm80AutoConfig),
  // then split_k = 0 picks the splits for that tile.
  struct Resolved {
    gemm::detail::Sm80Tile tile = gemm::detail::Sm80Tile::kLarge;
    int split_k = 1;
  };
  template <class Cfg>
  static int choose_split(GemmCoord const& g) {
    return gemm::detail::choose_split_k(g, Cfg::kTileM, Cfg::kTileN, Cfg::kTileK);
  }
  static Resolved resolve(Arguments const& args) {
    GemmCoord const g = output_matrix(args.problem);
    Resolved r;
    if constexpr (kAuto) r.tile = gemm::detail::choose_sm80_tile(g, args.split_k > 0 ? args.split_k : 1);
    r.split_k = args.split_k;
    if (args.split_k == 0) {
      r.split_k = r.tile == gemm::detail::Sm80Tile::kSmall    ? choose_split<SmallConfig>(g)
                  : r.tile == gemm::detail::Sm80Tile::kNarrow ? choose_split<NarrowConfig>(g)
                                                              : choose_split<LargeConfig>(g);
    }
    return r;
  }

  static Status make_plan(Arguments const& args, Plan* plan) {
    Conv2dProblem const& p = args.problem;
    if (p.mode != kMode) {
      return invalid_argument(op_name(), ": problem.mode is ", mode_name(p.mode), " but this operation is ", op_name(),
                              "; set problem.mode or use Conv2d<..., ConvMode::k", mode_name(p.mode), ", ...>");
    }
    Status const valid = check(p);
    if (!valid.ok()) return {valid.code(), std::string(op_name()) + ": " + valid.message()};
    if (p.groups != 1) {
      return not_supported(op_name(), ": groups = ", p.groups, "; the sm80 implicit-GEMM path runs groups == 1 only ",
                           "(run each group as its own convolution)");
    }
    // The gathers index with 32-bit extents and 64-bit offsets.
    constexpr index_t kIntMax = std::numeric_limits<int>::max();
    GemmCoord const g = output_matrix(p);
    for (index_t extent : {p.N * p.H * p.W * p.C, p.N * p.P() * p.Q() * p.K, p.K * p.R * p.S * p.C, g.m, g.n, g.k}) {
      if (extent > kIntMax) {
        return not_supported(op_name(), ": a tensor or GEMM extent is ", extent, " elements, above 2^31 - 1; ",
                             "split the batch");
      }
    }
    Operand const a = operand_a(args);
    Operand const b = operand_b(args);
    TILEFUSE_RETURN_IF_ERROR(check_device_pointer(op_name(), a.name, a.data));
    TILEFUSE_RETURN_IF_ERROR(check_device_pointer(op_name(), b.name, b.data));
    if (args.split_k < 0) {
      return invalid_argument(op_name(), ": split_k = ", args.split_k, " must be at least 0 (0: choose, 1: no split)");
    }
    Resolved const r = resolve(args);
    plan->tile = r.tile;
    plan->split_k = r.split_k;
    index_t const tiles = ((g.m + NarrowConfig::kTileM - 1) / NarrowConfig::kTileM) *
                          ((g.n + NarrowConfig::kTileN - 1) / NarrowConfig::kTileN);
    if (tiles > kIntMax || plan->split_k > 65535) {
      return not_supported(op_name(), ": ", tiles, " tiles and split_k = ", plan->split_k,
                           " exceed the grid limits (2^31 - 1 tiles, split_k <= 65535)");
    }
    if (epilogue::uses_coordinates<Epilogue>() && std::max(g.m, g.n) >= (index_t{1} << 24)) {
      return not_supported(op_name(), ": the epilogue reads element coordinates, which are exact only below 2^24, ",
                           "but the output matrix is ", g.m, " x ", g.n);
    }
    Status const bound = args.epilogue.bind({g.m, g.n, 1}, &plan->epilogue);
    if (!bound.ok()) return {bound.code(), std::string(op_name()) + " epilogue: " + bound.message()};

    // 16-byte chunks along channels need whole chunks of C and K and aligned tensors.
    auto misaligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0; };
    if (p.C % 8 != 0 || p.K % 8 != 0) {
      plan->why_narrow = status_message("C = ", p.C, " and K = ", p.K, " are not both multiples of 8");
    } else if (misaligned_16(a.data) || misaligned_16(b.data)) {
      plan->why_narrow = status_message(a.name, " or ", b.name, " is not 16-byte aligned");
    }
    plan->aligned = plan->why_narrow.empty();
    return {};
  }

  static char const* mode_name(ConvMode m) {
    return m == ConvMode::kFprop ? "Fprop" : m == ConvMode::kDgrad ? "Dgrad" : "Wgrad";
  }

  template <class Cfg>
  static Status launch_with(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    return plan.aligned ? launch<true, Cfg>(args, plan, workspace, stream) : launch<false, Cfg>(args, plan, workspace, stream);
  }

  template <bool kAligned, class Cfg>
  static Status launch(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    using K = Kernel<kAligned, Cfg>;
    typename K::Params params;
    params.problem = output_matrix(args.problem);
    params.operands.geometry = ConvGeometry::of(args.problem);
    params.operands.a = operand_a(args).data;
    params.operands.b = operand_b(args).data;
    params.epilogue = plan.epilogue;
    return gemm::detail::launch_tiled<K, Epilogue>(params, plan.split_k, workspace, stream);
  }
};

}  // namespace tilefuse::conv
