// Conv2d: the device-level implicit-GEMM convolution. One class per mode (fprop, dgrad, wgrad); NHWC
// activations, KRSC filters. Two kernels:
//   the sm80 path (mma.sync, conv/kernel/implicit_gemm_operands.h; runs on sm_80, sm_89 and sm_90), and
//   the Hopper kernel (TMA + WGMMA, conv/kernel/sm90_implicit_gemm.h: gemm/kernel/sm90_gemm.h with a
//   conv operand source), which the default config (Sm80AutoConfig) picks for fprop when the device
//   is an sm_90, the binary holds the kernel's sm_90a code, the elements are bf16 or fp16, C and K are
//   multiples of 8, x and w are 16-byte aligned and split_k is 0 or 1. Its source of x is TMA im2col
//   (FpropIm2colOperands) when C is a multiple of 64 (the k-tile) and the padding, strides and dilated filter fit
//   an im2col tensor map (validate(TensorMapIm2colArgs)), else the cp.async gathering producer
//   warpgroup (FpropGatherOperands). The environment variable TILEFUSE_CONV_SM90_SOURCE=gather forces
//   the gather (tests and benchmarks compare the two); TILEFUSE_CONV_SM90_TILE forces the Hopper tile
//   and schedule (forced_sm90_tile). dgrad with bf16 or fp16, both strides 1 and K a multiple of 64
//   also runs on the Hopper kernel (sm90::DgradIm2colOperands: an fprop of dy over the flipped,
//   transposed filter, dy by TMA im2col, w read MN-major) when its im2col tensor map is valid; wgrad
//   with bf16 or fp16, C a multiple of 64 and a valid im2col map of x too (sm90::WgradOperands: dy^T
//   and im2col(x) MN-major, split-K as the kernel's batch; split_k = 0 lets the wave model choose,
//   choose_wgrad_tile). Its splits add their fp32 tiles into one sum at L2 and the last applies the tree
//   (gemm::Sm90SplitReduce), or with Arguments::deterministic (or TILEFUSE_CONV_SPLIT_REDUCTION=pass)
//   store fp32 partials that a second pass sums in a fixed order and applies the tree to.
//   Everything else, and every explicit Sm80 config, runs the sm80 path. describe() says which ran
//   and why.
// FP8 fprop (Element float_e4m3_t or float_e5m2_t; x and w of that type, the output and the epilogue's
// inputs whatever the tree says, e.g. bf16 D = relu(acc * scale_x * scale_w + bias + residual) with the
// per-tensor scales as Scalar nodes) runs on the Hopper kernel only: k-tiles of 128 channels, the
// tensor cores accumulating the whole K in fp32 (their FP8 accumulation keeps fewer bits than fp32:
// fast accumulation in torch._scaled_mm's terms), C and K multiples of 16, im2col when C is a
// multiple of 128. What the Hopper kernel cannot take is refused with the reason (the sm80 kernel has
// no FP8 path); dgrad, wgrad, explicit Sm80 configs and input transforms do not compile for FP8.
//
// The output is the implicit GEMM's output matrix, row-major and packed, and the epilogue tree sees it
// as such ("D" and every other named input are set over it):
//   fprop: y  = (N*P*Q) x K      rows: output pixels (n, p, q), cols: output channels
//   dgrad: dx = (N*H*W) x C      rows: input pixels (n, h, w),  cols: input channels
//   wgrad: dw = K x (R*S*C)      rows: filters,                 cols: filter taps (r, s, c)
// so a per-channel bias of fprop is a RowBroadcast (one value per column) and a residual is an AuxLoad
// of the same shape as y. Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only; every encode goes through the host adapter
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/conv/input_transform.h>
#include <tilefuse/conv/kernel/implicit_gemm_operands.h>
#include <tilefuse/conv/kernel/sm90_implicit_gemm.h>
#include <tilefuse/core/data_type.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/tree_traits.h>
#include <tilefuse/epilogue/tree_walk.hpp>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/runtime/host_adapter.hpp>
#include <tilefuse/runtime/device_query.hpp>
#include <tilefuse/runtime/pointer_check.hpp>
#include <tilefuse/runtime/tensor_map.hpp>

// The wgrad wave model's efficiencies of its 64-row tiles (choose_wgrad_tile; 0: not offered).
#ifndef TILEFUSE_CONV_WGRAD_SHORT_EFFICIENCY
#define TILEFUSE_CONV_WGRAD_SHORT_EFFICIENCY 0.44
#endif
#ifndef TILEFUSE_CONV_WGRAD_SHORT_WIDE_EFFICIENCY
#define TILEFUSE_CONV_WGRAD_SHORT_WIDE_EFFICIENCY 0.84
#endif
// The fprop wave model's efficiency of its 64x256 tile (choose_sm90_tile; 0: not offered).
#ifndef TILEFUSE_CONV_FPROP_SHORT_EFFICIENCY
#define TILEFUSE_CONV_FPROP_SHORT_EFFICIENCY 0.6
#endif

namespace tilefuse::conv {

// Config: an Sm80TileConfig, or Sm80AutoConfig to let run() pick the large or the small tile per problem.
// InputTransform (fprop only): NoInputTransform, or ScaleShiftActivation<Act> for mainloop fusion
// (conv/input_transform.h): x is transformed per input channel as its tiles load; sm80 path only.
template <class Element, ConvMode kMode, class Epilogue, class Config = gemm::Sm80AutoConfig,
          class InputTransform = NoInputTransform>
class Conv2d {
  static_assert(!InputTransform::kEnabled || kMode == ConvMode::kFprop,
                "an InputTransform (mainloop fusion) applies to fprop's activation x");
  static constexpr bool kFp8 = std::is_same_v<Element, float_e4m3_t> || std::is_same_v<Element, float_e5m2_t>;
  static_assert(!kFp8 || (kMode == ConvMode::kFprop && std::is_same_v<Config, gemm::Sm80AutoConfig> &&
                          !InputTransform::kEnabled),
                "FP8 Conv2d: fprop on the Hopper kernel only (the default Sm80AutoConfig, no InputTransform); "
                "dgrad and wgrad take bf16 or fp16");

 public:
  using EpilogueArgs = epilogue::EpilogueArguments<Epilogue>;

  struct Arguments {
    Conv2dProblem problem;        // problem.mode must be kMode
    Element const* x = nullptr;   // fprop, wgrad: input activation (N, H, W, C), packed NHWC
    Element const* w = nullptr;   // fprop, dgrad: filter (K, R, S, C), packed KRSC
    Element const* dy = nullptr;  // dgrad, wgrad: output gradient (N, P, Q, K), packed NHWC
    EpilogueArgs epilogue;        // "D" and every named input, over output_matrix(problem)
    int split_k = 1;              // > 1: parallel split-K through workspace_size() bytes; 0: let run() choose
    // The Hopper wgrad adds its splits' fp32 sums inside the kernel, in the order they finish (the last
    // bits vary from run to run); true sums fixed partials in a fixed order in a second pass instead.
    bool deterministic = false;
    // With an InputTransform: per-input-channel scale and shift (C floats each, device memory).
    InputTransformParams input_transform;
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
    if constexpr (kHopperCapable) {
      Plan plan;
      if (make_plan(args, &plan).ok() && plan.hopper) {  // only its wgrad splits K
        GemmCoord const g = output_matrix(args.problem);
        return plan.sm90_split_in_kernel ? split_sums_bytes(g) : gemm::detail::split_k_workspace_bytes(g, plan.split_k);
      }
    }
    return gemm::detail::split_k_workspace_bytes(output_matrix(args.problem), resolve(args).split_k);
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if (plan.split_k > 1 && workspace == nullptr) {
      return invalid_argument(op_name(), ": split_k = ", plan.split_k, " needs a workspace of workspace_size() = ",
                              workspace_size(args), " bytes, but workspace is null");
    }
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::check_split_k_workspace_alignment(op_name(), plan.split_k, workspace));
    GemmCoord const gemm = output_matrix(args.problem);
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::initialize_reductions<Epilogue>(plan.epilogue, gemm, stream));
    if constexpr (kHopperCapable) {
      if (plan.hopper) {
        return dispatch_sm90(plan.sm90_tile, plan.sm90_im2col, plan.sm90_half_k, [&]<class Cfg, bool kIm2col>() {
          if constexpr (kWgradSm90) {
            return launch_wgrad<Cfg>(args, plan, workspace, stream);
          } else {
            return launch_sm90<Cfg, kIm2col>(args, plan, workspace, stream);
          }
        });
      }
    }
    if constexpr (kFp8) {
      return not_supported(op_name(), ": FP8 planned off the Hopper kernel");  // make_plan refuses that first
    } else {
      return run_sm80(args, plan, workspace, stream);
    }
  }

  // Which kernel runs the problem and why (fast 16-byte path or element-wise path, split-K).
  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = make_plan(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    GemmCoord const g = output_matrix(args.problem);
    if constexpr (kHopperCapable) {
      if (plan.hopper) {
        return dispatch_sm90(plan.sm90_tile, plan.sm90_im2col, plan.sm90_half_k, [&]<class Cfg, bool kIm2col>() {
          return describe_sm90<Cfg, kIm2col>(plan, g);
        });
      }
    }
    if constexpr (kFp8) {
      return "cannot run: FP8 planned off the Hopper kernel";
    } else {
      switch (plan.tile) {
        case gemm::detail::Sm80Tile::kSmall: return describe_with<SmallConfig>(args, plan, g);
        case gemm::detail::Sm80Tile::kNarrow: return describe_with<NarrowConfig>(args, plan, g);
        default: return describe_with<LargeConfig>(args, plan, g);
      }
    }
  }

 private:
  template <class Plan>
  static Status run_sm80(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    switch (plan.tile) {
      case gemm::detail::Sm80Tile::kSmall: return launch_with<SmallConfig>(args, plan, workspace, stream);
      case gemm::detail::Sm80Tile::kNarrow: return launch_with<NarrowConfig>(args, plan, workspace, stream);
      default: return launch_with<LargeConfig>(args, plan, workspace, stream);
    }
  }

  static constexpr bool kAuto =
      std::is_same_v<Config, gemm::Sm80AutoConfig> || std::is_same_v<Config, gemm::Sm80PathAutoConfig>;
  using LargeConfig = std::conditional_t<kAuto, gemm::Sm80LargeConfig, Config>;
  using SmallConfig = std::conditional_t<kAuto, gemm::Sm80SmallConfig, Config>;
  using NarrowConfig = std::conditional_t<kAuto, gemm::Sm80NarrowConfig, Config>;

  // The Hopper kernel: fprop (16-bit or FP8 elements) and dgrad (16-bit, stride 1: an fprop of dy over
  // the flipped, transposed filter, sm90::DgradIm2colOperands); auto config only (an explicit Sm80
  // config forces the sm80 path).
  static constexpr bool k16Bit = std::is_same_v<Element, bfloat16_t> || std::is_same_v<Element, half_t>;
  static constexpr bool kDgradSm90 = kMode == ConvMode::kDgrad && k16Bit;
  // wgrad (16-bit): dy^T x im2col(x), both operands MN-major, split-K as a batch of fp32 partials
  // (sm90::WgradOperands).
  static constexpr bool kWgradSm90 = kMode == ConvMode::kWgrad && k16Bit;
  static constexpr bool kTmaOnlySm90 = kDgradSm90 || kWgradSm90;  // no gathering source
  static constexpr bool kHopperCapable = std::is_same_v<Config, gemm::Sm80AutoConfig> && !InputTransform::kEnabled &&
                                         ((kMode == ConvMode::kFprop && (k16Bit || kFp8)) || kTmaOnlySm90);
  // The Hopper kernel's k-tile (one 128-byte row of channels) and its 16-byte chunk, in elements.
  static constexpr index_t kSm90TileK = 128 / static_cast<index_t>(sizeof(Element));
  static constexpr index_t kChunkElements = 16 / static_cast<index_t>(sizeof(Element));
  // 128x256, 128x128, 128x64 cooperative; 128x64 and 128x128 per warpgroup ping-pong (im2col source;
  // with the gather source they run as their cooperative tile).
  // kShort / kShortWide: the wgrad's 64-row ping-pong tiles (64x64, 64x128); kShortLarge: 16-bit fprop's
  // (64x256).
  enum class Sm90Tile { kLarge, kMedium, kNarrow, kPingPongNarrow, kPingPongMedium, kWide, kShort, kShortWide, kShortLarge };
  // The tiles the wave models (choose_sm90_tile, choose_wgrad_tile) weigh: TileN, the relative mainloop
  // efficiency measured on the H200, a name for describe(), and TileM (128, or 64 for the ping-pong
  // 64-row tiles).
  struct Sm90TileCandidate {
    Sm90Tile tile;
    int n;
    double efficiency;
    char const* name;
    int m = 128;
  };
  static constexpr std::array<Sm90TileCandidate, 3> kSm90TileCandidates{{{Sm90Tile::kLarge, 256, 1.0, "128x256"},
                                                                        {Sm90Tile::kMedium, 128, 0.92, "128x128"},
                                                                        {Sm90Tile::kNarrow, 64, 0.75, "128x64"}}};
  // 128x160 (Sm90ConvIm2colWideConfig): 16-bit fprop by im2col, trees without the TMA residual (its
  // conditions), and only where N is not a multiple of 128, i.e. where 128 and 256 leave a part-empty
  // last tile (v127f: UNet's N = 320 layers 23% and 43% faster than 128x128; where the model also took it
  // for N = 640, 1280, 2048 it ran 5-17% slower than 128x128 / 128x256). Its efficiency between
  // 128x128's and 128x256's, as its wgmma width is.
  static constexpr Sm90TileCandidate kSm90WideCandidate{Sm90Tile::kWide, 160, 0.96, "128x160"};
  // The wgrad's 64-row tiles (Sm90ConvIm2colPingPongShort*Config), weighed by choose_wgrad_tile beside
  // the 128-row ones; an efficiency of 0 leaves a tile out (unless forced), for A/B builds.
  static constexpr std::array<Sm90TileCandidate, 2> kSm90ShortCandidates{
      {{Sm90Tile::kShort, 64, TILEFUSE_CONV_WGRAD_SHORT_EFFICIENCY, "64x64", 64},
       {Sm90Tile::kShortWide, 128, TILEFUSE_CONV_WGRAD_SHORT_WIDE_EFFICIENCY, "64x128", 64}}};
  // 16-bit fprop's 64-row tile (Sm90ConvIm2colPingPongShortLargeConfig), weighed by choose_sm90_tile.
  static constexpr Sm90TileCandidate kSm90ShortLargeCandidate{Sm90Tile::kShortLarge, 256, TILEFUSE_CONV_FPROP_SHORT_EFFICIENCY,
                                                              "64x256", 64};
  // How many 128-row tiles' time a wgrad block takes for `per_block` tiles of `tile_m` rows: a block runs
  // 64-row (ping-pong) tiles two at a time, one per consumer warpgroup, at about a 128-row tile's cost
  // per pair, and a lone one at about half that (conv_sm90.md v128e).
  static double tile_rounds(int tile_m, index_t per_block) {
    if (tile_m == 128) return static_cast<double>(per_block);
    return per_block == 1 ? 0.5 : static_cast<double>((per_block + 1) / 2);
  }

  template <class Cfg, class Plan>
  static std::string describe_with(Arguments const& args, Plan const& plan, GemmCoord const& g) {
    if (!plan.why_not_hopper.empty()) {
      return describe_with_sm80<Cfg>(args, plan, g) + " [Hopper kernel not used: " + plan.why_not_hopper + "]";
    }
    return describe_with_sm80<Cfg>(args, plan, g);
  }

  template <class Cfg, class Plan>
  static std::string describe_with_sm80(Arguments const& args, Plan const& plan, GemmCoord const& g) {
    (void)args;
    return status_message("sm80 mma.sync implicit-GEMM ", op_name(), " (GEMM ", g.m, " x ", g.n, " x ", g.k,
                          "), tile ", Cfg::kTileM, "x", Cfg::kTileN, "x", Cfg::kTileK, kAuto ? " (chosen by the wave model)" : "", ", ",
                          Cfg::kWarpsM * Cfg::kWarpsN, " warps, ", Cfg::kStages, " stages, ",
                          plan.aligned ? "16-byte cp.async gathers" : "element-wise gathers (", plan.why_narrow,
                          plan.aligned ? "" : ")", plan.split_k > 1 ? status_message(", split-K ", plan.split_k) : "");
  }

  template <bool kAligned, class Cfg>
  using Kernel =
      gemm::sm80::TiledKernel<Element, sm80::ImplicitGemmOperands<Element, kMode, kAligned, InputTransform>, Epilogue, Cfg>;

  struct Plan {
    bool aligned = false;
    gemm::detail::Sm80Tile tile = gemm::detail::Sm80Tile::kLarge;  // which config runs (Sm80AutoConfig only)
    int split_k = 1;          // resolved: args.split_k, or the choice for 0
    std::string why_narrow;
    typename Epilogue::Params epilogue;
    // The Hopper kernel (kHopperCapable only): whether it runs, its tile and why, or why not.
    bool hopper = false;
    Sm90Tile sm90_tile = Sm90Tile::kLarge;
    std::string why_sm90_tile;
    std::string why_not_hopper;
    int sm_count = 0;
    // Its source of x: TMA im2col, or the cp.async gather, and why.
    bool sm90_im2col = false;
    bool sm90_half_k = false;  // FP8 im2col with k-tiles of 64 channels (C a multiple of 64, not of 128)
    int sm90_split = 1;        // wgrad: the K splits
    // wgrad with sm90_split > 1: the splits add into one fp32 sum inside the kernel (Sm90SplitReduce),
    // or (args.deterministic, TILEFUSE_CONV_SPLIT_REDUCTION=pass) store fp32 partials that a second pass sums.
    bool sm90_split_in_kernel = false;
    // 1x1 filter, stride 1, no padding: the activation operand (fprop's x, dgrad's dy, wgrad's x) is its
    // own im2col matrix, so it loads by a tiled tensor map in place of the im2col one (same boxes).
    bool sm90_pointwise = false;
    std::string why_sm90_source;
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
    if constexpr (InputTransform::kEnabled) {
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer(op_name(), "input_transform.scale", args.input_transform.scale));
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer(op_name(), "input_transform.shift", args.input_transform.shift));
    } else if (args.input_transform.scale != nullptr || args.input_transform.shift != nullptr) {
      return invalid_argument(op_name(), ": input_transform is set but this Conv2d has no InputTransform; ",
                              "instantiate Conv2d<..., ScaleShiftActivation<Act>> for mainloop fusion");
    }
    Status const bound = reads_output_coordinates()
                             ? with_coordinate_extents(args).bind({g.m, g.n, 1}, &plan->epilogue)
                             : args.epilogue.bind({g.m, g.n, 1}, &plan->epilogue);
    if (!bound.ok()) return {bound.code(), std::string(op_name()) + " epilogue: " + bound.message()};

    // 16-byte chunks along channels need whole chunks of C and K and aligned tensors (8 channels of
    // 16 bits, 16 of FP8).
    auto misaligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0; };
    if (p.C % kChunkElements != 0 || p.K % kChunkElements != 0) {
      plan->why_narrow = status_message("C = ", p.C, " and K = ", p.K, " are not both multiples of ", kChunkElements);
    } else if (misaligned_16(a.data) || misaligned_16(b.data)) {
      plan->why_narrow = status_message(a.name, " or ", b.name, " is not 16-byte aligned");
    }
    plan->aligned = plan->why_narrow.empty();
    if constexpr (kHopperCapable) plan_hopper(args, plan);
    if constexpr (kFp8) {
      if (!plan->hopper) {
        return not_supported(op_name(), ": ", name_of(data_type_of<Element>),
                             " operands run on the Hopper kernel only (the sm80 kernel has no FP8 path), which cannot "
                             "take this problem: ",
                             plan->why_not_hopper);
      }
    }
    return {};
  }

  // ---- the Hopper kernel ----

  // Decides whether the Hopper kernel runs the (valid, bound) problem, and its tile; fills
  // plan->why_not_hopper otherwise.
  static void plan_hopper(Arguments const& args, Plan* plan) {
    Conv2dProblem const& p = args.problem;
    GemmCoord const g = output_matrix(p);
    if (!plan->aligned) {
      plan->why_not_hopper = status_message("its gathers need C and K multiples of ", kChunkElements,
                                            " and 16-byte-aligned x and w (", plan->why_narrow, ")");
      return;
    }
    if (args.split_k > 1 && !kWgradSm90) {
      plan->why_not_hopper = status_message("split_k = ", args.split_k, " was asked for, and the Hopper kernel splits K for wgrad only");
      return;
    }
    if (g.m > std::numeric_limits<int>::max() - 256) {
      plan->why_not_hopper = status_message(kDgradSm90 ? "N*H*W = " : "N*P*Q = ", g.m,
                                            " is too close to 2^31 for its 32-bit pixel indices");
      return;
    }
    bool const im2col = choose_sm90_source(args, plan);
    if constexpr (kTmaOnlySm90) {
      if (!im2col) {  // dgrad and wgrad have no gathering source
        plan->why_not_hopper = status_message("its ", kDgradSm90 ? "dgrad loads dy" : "wgrad loads x",
                                              " by TMA im2col only, and ", plan->why_sm90_source);
        return;
      }
    }
    std::optional<Sm90Tile> forced = forced_sm90_tile();
    if (char const* why = forced ? why_no_tile(*forced, im2col) : nullptr) {
      plan->why_sm90_tile = status_message("TILEFUSE_CONV_SM90_TILE=", why, " ");
      forced.reset();
    }
    Sm90Tile tile = kWgradSm90 ? choose_wgrad_tile(g, args.split_k, forced, plan)
                               : choose_sm90_tile(g, kWideTile && im2col, kShortFpropTile && im2col, plan);
    if (forced) {
      plan->why_sm90_tile += "; forced by TILEFUSE_CONV_SM90_TILE";
      tile = *forced;
    } else {
      tile = choose_sm90_schedule(tile, im2col, plan);
    }
    bool const half_k = plan->sm90_half_k;
    Status const ready =
        dispatch_sm90(tile, im2col, half_k, [&]<class Cfg, bool kIm2col>() { return sm90_ready<Cfg, kIm2col>(); });
    if (!ready.ok()) {
      plan->why_not_hopper = ready.message();
      return;
    }
    // A residual loaded by TMA needs a 16-byte-aligned base and a leading dimension of whole 16 bytes.
    std::string const residual = dispatch_sm90(tile, im2col, half_k, [&]<class Cfg, bool kIm2col>() {
      return gemm::sm90_aux_unaligned<Sm90Kernel<Cfg, kIm2col>>(plan->epilogue, 1);
    });
    if (!residual.empty()) {
      plan->why_not_hopper = residual;
      return;
    }
    plan->hopper = true;
    plan->sm90_tile = tile;
    plan->sm90_im2col = im2col;
    plan->split_k = kWgradSm90 ? plan->sm90_split : 1;
    plan->sm90_split_in_kernel = kWgradSm90 && plan->split_k > 1 && reduce_splits_in_kernel(args, plan->split_k);
  }

  // Why the tile (forced by TILEFUSE_CONV_SM90_TILE) does not exist for this operation and source, or
  // nullptr where it does.
  static char const* why_no_tile(Sm90Tile tile, bool im2col) {
    if (tile == Sm90Tile::kWide && !(kWideTile && im2col)) {
      return "wide ignored: 128x160 is for 16-bit fprop by im2col whose tree loads no residual by TMA.";
    }
    if ((tile == Sm90Tile::kShort || tile == Sm90Tile::kShortWide) && !kWgradSm90) {
      return "64x64 / 64x128 ignored: those 64-row tiles are wgrad's.";
    }
    if (tile == Sm90Tile::kShortLarge && !(kShortFpropTile && im2col)) return "64x256 ignored: 64x256 is for 16-bit fprop by im2col.";
    return nullptr;
  }

  // Whether the Hopper wgrad's splits are summed inside the kernel: with 12 or more splits, unless
  // args.deterministic. TILEFUSE_CONV_SPLIT_REDUCTION=kernel or pass forces either (measurements, tests).
  // NOTES: v128a (ResNet-50, same run): in the kernel 3-5% faster than the pass at 26 splits (#1), 1-3% at
  // 14-33 (#4-#6), but 4-8% slower at 4-8 (#7-#9): a split's tail (fence, count, read-back) runs after
  // every block's mainloop, where the pass's partial stores do not wait; few splits leave the pass little
  // to read.
  static bool reduce_splits_in_kernel(Arguments const& args, int splits) {
    char const* value = std::getenv("TILEFUSE_CONV_SPLIT_REDUCTION");
    std::string_view const v(value == nullptr ? "" : value);
    if (v == "pass") return false;
    if (v == "kernel") return true;
    return !args.deterministic && splits >= 12;
  }

  // The workspace of the in-kernel split-K: the m x n fp32 sums, then a ticket per 16-row slice of every
  // tile (128 rows, at least 64 columns: enough for every Hopper wgrad tile).
  static std::size_t split_sums_bytes(GemmCoord const& g) {
    auto const tickets = static_cast<std::size_t>((g.m + 127) / 128 * 8 * ((g.n + 63) / 64));
    return static_cast<std::size_t>(g.m * g.n) * sizeof(float) + tickets * sizeof(int);
  }

  // Calls f.template operator()<Cfg, kIm2col>() for the Hopper kernel of the tile and the source (the
  // config for Element: FP8 k-tiles are 128 channels, or 64 with half_k).
  template <class Cfg>
  using ConfigFor = sm90::Sm90ConvConfigFor<Element, Cfg>;
  template <class Cfg>
  using HalfKConfigFor = sm90::Sm90ConvHalfK<ConfigFor<Cfg>>;
  template <class F>
  static auto dispatch_sm90(Sm90Tile tile, bool im2col, bool half_k, F&& f) {
    if constexpr (kFp8) {
      if (im2col && half_k) return dispatch_im2col<HalfKConfigFor>(tile, f);
    } else {
      (void)half_k;
    }
    if constexpr (kTmaOnlySm90) {
      (void)im2col;  // dgrad and wgrad have the im2col source only (plan_hopper)
      return dispatch_im2col<ConfigFor>(tile, f);
    } else {
      if (im2col) return dispatch_im2col<ConfigFor>(tile, f);
      switch (tile) {
        case Sm90Tile::kNarrow:
        case Sm90Tile::kPingPongNarrow: return f.template operator()<ConfigFor<sm90::Sm90ConvNarrowConfig>, false>();
        case Sm90Tile::kMedium:
        case Sm90Tile::kPingPongMedium: return f.template operator()<ConfigFor<sm90::Sm90ConvMediumConfig>, false>();
        default: return f.template operator()<ConfigFor<sm90::Sm90ConvLargeConfig>, false>();
      }
    }
  }
  // The im2col source's tiles, each config mapped by Of (ConfigFor, or HalfKConfigFor).
  template <template <class> class Of, class F>
  static auto dispatch_im2col(Sm90Tile tile, F& f) {
    switch (tile) {
      case Sm90Tile::kNarrow: return f.template operator()<Of<sm90::Sm90ConvIm2colNarrowConfig>, true>();
      case Sm90Tile::kMedium: return f.template operator()<Of<sm90::Sm90ConvIm2colMediumConfig>, true>();
      case Sm90Tile::kPingPongNarrow: return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongNarrowConfig>, true>();
      case Sm90Tile::kPingPongMedium: return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongMediumConfig>, true>();
      case Sm90Tile::kWide:
        if constexpr (kWideTile) return f.template operator()<Of<sm90::Sm90ConvIm2colWideConfig>, true>();
        [[fallthrough]];  // never planned where it does not exist (plan_hopper)
      case Sm90Tile::kShort:
        if constexpr (kWgradSm90) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortConfig>, true>();
        [[fallthrough]];  // wgrad only (choose_wgrad_tile, forced_sm90_tile)
      case Sm90Tile::kShortWide:
        if constexpr (kWgradSm90) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortWideConfig>, true>();
        [[fallthrough]];
      case Sm90Tile::kShortLarge:
        if constexpr (kShortFpropTile) return f.template operator()<Of<sm90::Sm90ConvIm2colPingPongShortLargeConfig>, true>();
        [[fallthrough]];  // 16-bit fprop only (choose_sm90_tile, plan_hopper)
      default: return f.template operator()<Of<sm90::Sm90ConvIm2colLargeConfig>, true>();
    }
  }

  // The source of x: TMA im2col when C is a multiple of the k-tile (64 channels; FP8: 128, or 64 with
  // k-tiles of 64 channels, plan->sm90_half_k) and x's
  // im2col tensor map is valid (corners -pad and pad - (filter - 1) * dilation within [-128, 127],
  // strides at most 8, ...: validate() runs the host adapter's checks without encoding), unless
  // TILEFUSE_CONV_SM90_SOURCE=gather; else the cp.async gather. Fills plan->why_sm90_source, and
  // plan->sm90_pointwise for a 1x1 problem with stride 1 and no padding (tiled map, same boxes).
  static bool choose_sm90_source(Arguments const& args, Plan* plan) {
    bool const im2col = choose_sm90_im2col(args, plan);
    plan->sm90_pointwise = im2col && is_pointwise(args.problem);
    if (plan->sm90_pointwise) plan->why_sm90_source += "; 1x1, stride 1, no padding: its im2col matrix is the tensor, loaded by a tiled map";
    return im2col;
  }
  static bool choose_sm90_im2col(Arguments const& args, Plan* plan) {
    if constexpr (kDgradSm90) return choose_dgrad_source(args, plan);
    if constexpr (kWgradSm90) return choose_wgrad_source(args, plan);
    Conv2dProblem const& p = args.problem;
    char const* const forced = std::getenv("TILEFUSE_CONV_SM90_SOURCE");
    if (forced != nullptr && std::strcmp(forced, "gather") == 0) {
      plan->why_sm90_source = "TILEFUSE_CONV_SM90_SOURCE=gather";
      return false;
    }
    plan->sm90_half_k = kFp8 && p.C % kSm90TileK != 0 && p.C % 64 == 0;
    if (p.C % kSm90TileK != 0 && !plan->sm90_half_k) {
      plan->why_sm90_source = status_message("C = ", p.C, " is not a multiple of ", kSm90TileK, kFp8 ? " or of 64" : "",
                                             ", so a k-tile spans two filter taps");
      return false;
    }
    // Any box width gives the same verdict on the geometry (the tile's pixel count is checked too).
    Status const valid = validate(im2col_args(p, args.x, 128, 64));
    if (!valid.ok()) {
      plan->sm90_half_k = false;
      plan->why_sm90_source = "x's im2col tensor map is refused: " + valid.message();
      return false;
    }
    plan->why_sm90_source = status_message(
        "C a multiple of ", plan->sm90_half_k ? 64 : kSm90TileK,
        plan->sm90_half_k ? " (not of 128: FP8 k-tiles of 64 channels in 64-byte swizzled rows, twice the stages)" : "",
        ", padding, strides and dilated filter within the im2col tensor map's limits");
    return true;
  }

  // wgrad's sources: x by TMA im2col in blocks of 64 channels of one tap (C a multiple of 64) when x's
  // im2col tensor map of 64 pixels is valid; dy by tiled TMA.
  static bool choose_wgrad_source(Arguments const& args, Plan* plan) {
    Conv2dProblem const& p = args.problem;
    if (p.C % 64 != 0) {
      plan->why_sm90_source = status_message("C = ", p.C, " is not a multiple of 64, so a 64-column block of r*s*c spans two filter taps");
      return false;
    }
    Status const valid = validate(im2col_args(p, args.x, 64, 64));
    if (!valid.ok()) {
      plan->why_sm90_source = "x's im2col tensor map is refused: " + valid.message();
      return false;
    }
    plan->why_sm90_source = "C a multiple of 64, padding, strides and dilated filter within the im2col tensor map's limits";
    return true;
  }

  // A 1x1 filter with stride 1 and no padding: im2col(activation) is the activation (any dilation).
  static bool is_pointwise(Conv2dProblem const& p) {
    return p.R == 1 && p.S == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
  }

  // The wgrad tile and split count by the wave model of choose_sm90_tile, with K split into s parts:
  //   ceil(tiles * s / SMs) x TileN x (k-tiles / s + 3) / efficiency
  // for the 128-row tiles; a block runs the 64-row (ping-pong) tiles two at a time, one per consumer
  // warpgroup, at about a 128-row tile's cost per pair, and a lone one (one tile per block) at half that:
  //   (tiles per block = 1 ? 1/2 : ceil(tiles per block / 2)) x TileN x (k-tiles / s + 3) / efficiency
  // (fitted to v128e: with the efficiencies 0.44 (64x64) and 0.84 (64x128) the pick is within 5% of the
  // fastest measured tile on 11 of ResNet-50's 12 layers; #2 takes 128x64, 11% slower than 64x64); plus,
  // for s > 1, the reduction pass (s fp32 partials read and D written at ~3000 bytes/ns, and ~3 us
  // for the launch and its tail) in the same units (one unit ~ 3 ns: a 128 x 1 x 64 slice of a k-tile at
  // the H200's wgmma rate). requested > 1 fixes s (capped at the k-tiles); forced fixes the tile. Fills
  // plan->sm90_split and plan->why_sm90_tile.
  static Sm90Tile choose_wgrad_tile(GemmCoord const& g, int requested, std::optional<Sm90Tile> forced, Plan* plan) {
    int const sms = std::max(1, sm_count());
    plan->sm_count = sms;
    index_t const k_tiles = std::max<index_t>(1, (g.k + 63) / 64);
    // A forced tile's candidate: the one of its shape (a ping-pong tile's is its cooperative twin's).
    auto const same_shape = [](Sm90Tile t, Sm90TileCandidate const& c) {
      int const n = t == Sm90Tile::kLarge                                                                   ? 256
                    : t == Sm90Tile::kMedium || t == Sm90Tile::kPingPongMedium || t == Sm90Tile::kShortWide ? 128
                                                                                                            : 64;
      int const m = t == Sm90Tile::kShort || t == Sm90Tile::kShortWide ? 64 : 128;
      return c.n == n && c.m == m;
    };
    std::array<Sm90TileCandidate, 5> const candidates{kSm90TileCandidates[0], kSm90TileCandidates[1], kSm90TileCandidates[2],
                                                      kSm90ShortCandidates[0], kSm90ShortCandidates[1]};
    index_t const max_split = requested > 1 ? std::min<index_t>(requested, k_tiles) : std::min<index_t>(k_tiles, 256);
    index_t const min_split = requested > 1 ? max_split : 1;
    double best_cost = 0.0;
    Sm90Tile best = Sm90Tile::kLarge;
    int best_split = 1;
    std::string why;
    for (Sm90TileCandidate const& c : candidates) {
      if (forced ? !same_shape(*forced, c) : c.efficiency <= 0.0) continue;
      double const efficiency = c.efficiency > 0.0 ? c.efficiency : 0.75;  // (a tile forced where not offered)
      index_t const tiles = ((g.m + c.m - 1) / c.m) * ((g.n + c.n - 1) / c.n);
      double cost_here = 0.0;
      int split_here = 1;
      for (index_t split = min_split; split <= (requested == 1 ? 1 : max_split); ++split) {
        index_t const per_block = (tiles * split + sms - 1) / sms;
        index_t const k_per_split = (k_tiles + split - 1) / split;
        double cost = tile_rounds(c.m, per_block) * c.n * (static_cast<double>(k_per_split) + 3.0) / efficiency;
        if (split > 1) cost += (static_cast<double>(split + 1) * g.m * g.n * 4.0 / 3000.0 + 3000.0) / 3.0;
        if (cost_here == 0.0 || cost < cost_here * 0.999) {
          cost_here = cost;
          split_here = static_cast<int>(split);
        }
      }
      why += status_message(why.empty() ? "" : ", ", c.name, ": ", tiles, " tiles x split ", split_here, ", cost ",
                            static_cast<index_t>(cost_here));
      if (best_cost == 0.0 || cost_here < best_cost * 0.999) {
        best = c.tile;
        best_cost = cost_here;
        best_split = split_here;
      }
    }
    plan->why_sm90_tile = why;
    plan->sm90_split = best_split;
    return best;
  }

  // dgrad's source: dy by TMA im2col as the equivalent fprop's x (dgrad_as_fprop) when the strides are 1,
  // K (dy's channels) is a multiple of 64 and that im2col tensor map is valid; there is no gather.
  static bool choose_dgrad_source(Arguments const& args, Plan* plan) {
    Conv2dProblem const& p = args.problem;
    if (p.stride_h != 1 || p.stride_w != 1) {
      plan->why_sm90_source = status_message("the strides are ", p.stride_h, "x", p.stride_w,
                                             " (the Hopper dgrad runs stride 1: an fprop of dy over the flipped filter)");
      return false;
    }
    if (p.K % 64 != 0) {
      plan->why_sm90_source = status_message("K = ", p.K, " is not a multiple of 64, so a k-tile of dy spans two filter taps");
      return false;
    }
    Status const valid = validate(im2col_args(dgrad_as_fprop(p), args.dy, 128, 64));
    if (!valid.ok()) {
      plan->why_sm90_source = "dy's im2col tensor map is refused: " + valid.message();
      return false;
    }
    plan->why_sm90_source = "stride 1, K a multiple of 64, padding and dilated filter within the im2col tensor map's limits";
    return true;
  }

  // x (N, H, W, C) of fprop problem p as the 4D im2col tensor map {C, W, H, N}: k-tile channels x
  // `pixels` pixels per copy, 128-byte swizzle, the pixel box of filter-window origins (see
  // FpropIm2colOperands), walked with the convolution's strides. (dgrad: p = dgrad_as_fprop, x = dy.)
  static TensorMapIm2colArgs im2col_args(Conv2dProblem const& p, Element const* x, int pixels, int channels) {
    constexpr auto kBytes = static_cast<std::uint64_t>(sizeof(Element));
    TensorMapIm2colArgs t;
    t.data_type = tensor_map_type();
    t.rank = 4;
    t.global_address = const_cast<Element*>(x);
    t.global_dim[0] = static_cast<cuuint64_t>(p.C);
    t.global_dim[1] = static_cast<cuuint64_t>(p.W);
    t.global_dim[2] = static_cast<cuuint64_t>(p.H);
    t.global_dim[3] = static_cast<cuuint64_t>(p.N);
    t.global_strides[0] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.C) * kBytes);
    t.global_strides[1] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.W * p.C) * kBytes);
    t.global_strides[2] = static_cast<cuuint64_t>(static_cast<std::uint64_t>(p.H * p.W * p.C) * kBytes);
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
    t.swizzle = swizzle_of(channels);
    t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    return t;
  }

  // The swizzle of a k-tile row of `channels` elements: what the kernel's wgmma descriptors read.
  static CUtensorMapSwizzle swizzle_of(int channels) {
    return channels * static_cast<int>(sizeof(Element)) == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
  }

  static CUtensorMapDataType tensor_map_type() {
    return std::is_same_v<Element, bfloat16_t> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
           : std::is_same_v<Element, half_t>   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                               : CU_TENSOR_MAP_DATA_TYPE_UINT8;  // FP8: TMA moves bytes
  }

  // The tile by a wave model of the persistent kernel (the GEMM's, docs/notes/gemm_sm90.md): the SM
  // with the most tiles finishes last, so a tile config costs
  //   ceil(tiles / SMs) x TileN x (k-tiles + 3) / efficiency
  // where 3 k-tiles is about what a tile's epilogue costs, and the efficiency the relative mainloop
  // throughput of the tile (1, 0.92, 0.75 for 128x256, 128x128, 128x64 on the H200: narrower wgmmas
  // read more shared memory per flop). Ties go to the wider tile, which gathers each row of x for
  // more output channels. Fills plan->sm_count.
  // With `wide` and N not a multiple of 128, 128x160 is a candidate too (kSm90WideCandidate).
  // With `short_tile`, 64x256 too (kSm90ShortLargeCandidate) where its efficiency is above 0, at
  //   ceil(tiles / SMs) x 64 / 128 x TileN x k-tiles / efficiency
  // (no epilogue term: ping-pong runs one warpgroup's epilogue under the other's mainloop). Fitted to
  // v128g with efficiency 0.6: it takes ResNet-50's short-K 1x1 layers #2, #5, #8, #11 (7-17% faster
  // there, #2 within 1%), and none of the layers where it measured slower (3x3, N < 256, long K).
  // A tree that reads its residual by TMA has an epilogue of about kResidualEpilogueKTiles k-tiles, which
  // the other warpgroup's mainloop hides only as far as it lasts: 64x256 then costs max(k-tiles, that).
  // (v130c, fused: 64x256 7% and 11% faster on #8, #11 with 4 and 8 k-tiles, 1-4% slower on #2, #5 with 1, 2.)
  static constexpr double kResidualEpilogueKTiles = 3.5;
  static Sm90Tile choose_sm90_tile(GemmCoord const& g, bool wide, bool short_tile, Plan* plan) {
    int const sms = std::max(1, sm_count());
    plan->sm_count = sms;
    index_t const k_tiles = (g.k + kSm90TileK - 1) / kSm90TileK;
    wide = wide && g.n % 128 != 0;
    Sm90Tile best = Sm90Tile::kLarge;
    double best_cost = 0.0;
    std::string why;
    std::array<Sm90TileCandidate, 5> const candidates{kSm90TileCandidates[0], kSm90WideCandidate, kSm90TileCandidates[1],
                                                      kSm90TileCandidates[2], kSm90ShortLargeCandidate};
    // What a 64-row ping-pong tile's time is counted in: its k-tiles, or its residual epilogue if longer.
    double const short_k_tiles =
        kResidualByTma ? std::max(static_cast<double>(k_tiles), kResidualEpilogueKTiles) : static_cast<double>(k_tiles);
    for (Sm90TileCandidate const& c : candidates) {
      if (c.tile == Sm90Tile::kWide && !wide) continue;
      if (c.tile == Sm90Tile::kShortLarge && !(short_tile && c.efficiency > 0.0)) continue;
      index_t const tiles = ((g.m + c.m - 1) / c.m) * ((g.n + c.n - 1) / c.n);
      index_t const per_block = (tiles + sms - 1) / sms;
      double const cost = c.m == 128 ? static_cast<double>(per_block) * c.n * (static_cast<double>(k_tiles) + 3.0) / c.efficiency
                                     : static_cast<double>(per_block) * c.m / 128.0 * c.n * short_k_tiles / c.efficiency;
      why += status_message(why.empty() ? "" : ", ", c.name, ": ", tiles, " tiles, ", per_block, " per SM, cost ",
                            static_cast<index_t>(cost));
      if (best_cost == 0.0 || cost < best_cost * 0.999) {
        best = c.tile;
        best_cost = cost;
      }
    }
    plan->why_sm90_tile += why;
    return best;
  }

  // Ping-pong consumers where they measured faster (docs/notes/conv_sm90.md, v52), with the im2col
  // source: the 128x64 tile unless the residual comes by TMA (ResNet-50 layers 0-1: 8-15% bare; fused,
  // the cooperative tile with the TMA residual is faster, v90: layer 0 0.0464 -> 0.0297 ms, layer 1
  // 0.0638 -> 0.0618); the 128x128 tile when the epilogue reads no memory (bare: 0-5% on ResNet-50 and
  // UNet; with a residual the cooperative kernel's staged epilogue loads, which ping-pong has not, win:
  // layer 3 15% slower).
  static Sm90Tile choose_sm90_schedule(Sm90Tile tile, bool im2col, Plan* plan) {
    if (!im2col) return tile;
    if (tile == Sm90Tile::kNarrow && kResidualByTma) {
      plan->why_sm90_tile += "; cooperative consumers (the residual by TMA)";
      return tile;
    }
    if (tile == Sm90Tile::kNarrow) {
      plan->why_sm90_tile += "; ping-pong consumers (128x64 tiles)";
      return Sm90Tile::kPingPongNarrow;
    }
    if (tile == Sm90Tile::kMedium && !epilogue::reads_memory<Epilogue>) {
      plan->why_sm90_tile += "; ping-pong consumers (128x128 tiles, an epilogue that reads no memory)";
      return Sm90Tile::kPingPongMedium;
    }
    return tile;
  }

  // TILEFUSE_CONV_SM90_TILE = large | medium | narrow | pingpong-narrow | pingpong-medium | wide | 64x64 |
  // 64x128 (wgrad only) | 64x256 (16-bit fprop only) forces the
  // Hopper tile (for measurements and tests); unset or anything else: the model's choice.
  static std::optional<Sm90Tile> forced_sm90_tile() {
    char const* value = std::getenv("TILEFUSE_CONV_SM90_TILE");
    if (value == nullptr) return std::nullopt;
    std::string_view const v(value);
    if (v == "large") return Sm90Tile::kLarge;
    if (v == "medium") return Sm90Tile::kMedium;
    if (v == "narrow") return Sm90Tile::kNarrow;
    if (v == "pingpong-narrow") return Sm90Tile::kPingPongNarrow;
    if (v == "pingpong-medium") return Sm90Tile::kPingPongMedium;
    if (v == "wide") return Sm90Tile::kWide;
    if (v == "64x64") return Sm90Tile::kShort;
    if (v == "64x128") return Sm90Tile::kShortWide;
    if (v == "64x256") return Sm90Tile::kShortLarge;
    return std::nullopt;
  }

  static int sm_count() { return current_device_sm_count(); }

  template <class Cfg, bool kIm2col>
  using Sm90KernelOf = std::conditional_t<
      kWgradSm90, sm90::WgradKernel<Element, Epilogue, Cfg>,
      std::conditional_t<kDgradSm90, sm90::DgradIm2colKernel<Element, Epilogue, Cfg>,
      std::conditional_t<kIm2col, sm90::FpropIm2colKernel<Element, Epilogue, Cfg>, sm90::FpropKernel<Element, Epilogue, Cfg>>>>;
  // Trees with one 16-bit residual (conv + bias + residual + ReLU) load it by TMA on the cooperative
  // tiles and fprop's 64x256 ping-pong tile (Sm90ConvTmaAux; the residual must be 16-byte aligned,
  // plan_hopper checks); others, and the 128-row ping-pong tiles, as configured.
  static constexpr bool residual_by_tma() {
    if constexpr (kHopperCapable) {
      return Sm90KernelOf<sm90::Sm90ConvTmaAux<ConfigFor<sm90::Sm90ConvIm2colLargeConfig>>, true>::kTmaAux;
    } else {
      return false;
    }
  }
  static constexpr bool kResidualByTma = residual_by_tma();
  // Where the 128x160 tile exists (Sm90ConvIm2colWideConfig): 16-bit fprop, no TMA residual.
  static constexpr bool kWideTile = kHopperCapable && !kFp8 && !kTmaOnlySm90 && !kResidualByTma;
  // Where the 64x256 tile exists (Sm90ConvIm2colPingPongShortLargeConfig): 16-bit fprop (a residual
  // comes by TMA there too, its sub-tiles read by the warpgroup that owns the tile).
  static constexpr bool kShortFpropTile = kHopperCapable && !kFp8 && !kTmaOnlySm90;
  template <class Cfg>
  using Sm90ConfigFor =
      std::conditional_t<kResidualByTma && (Cfg::kSchedule == gemm::Sm90Schedule::kCooperative ||
                                            (kMode == ConvMode::kFprop && Cfg::kTileM == 64)),
                         sm90::Sm90ConvTmaAux<Cfg>, Cfg>;
  template <class Cfg, bool kIm2col>
  using Sm90Kernel = Sm90KernelOf<Sm90ConfigFor<Cfg>, kIm2col>;

  template <class Cfg, bool kIm2col>
  static void const* sm90_kernel_address() {
    return reinterpret_cast<void const*>(&gemm::sm90::sm90_gemm_kernel<Sm90Kernel<Cfg, kIm2col>>);
  }

  // The current device is an sm_90, the binary holds the kernel's sm_90a code, and its shared memory
  // fits. Cached per thread and device (attribute queries only).
  template <class Cfg, bool kIm2col>
  static Status sm90_ready() {
    thread_local int cached_device = -1;
    thread_local Status cached;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return not_supported("no CUDA device is available");
    }
    if (device == cached_device) return cached;
    auto const check = [device]() -> Status {
      int major = 0, minor = 0, smem_optin = 0;
      if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
          cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
          cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return not_supported("the device's attributes could not be read");
      }
      if (major != 9 || minor != 0) {
        return not_supported("device ", device, " is sm_", major, minor, ", and the Hopper kernel runs on sm_90 only");
      }
      cudaFuncAttributes attributes{};
      if (cudaFuncGetAttributes(&attributes, sm90_kernel_address<Cfg, kIm2col>()) != cudaSuccess) {
        (void)cudaGetLastError();
        return not_supported("this binary has no code of the Hopper kernel for device ", device,
                             " (build with 90a in TILEFUSE_CUDA_ARCHS)");
      }
      if (attributes.binaryVersion != 90) {
        return not_supported("the Hopper kernel's code is for sm_", attributes.binaryVersion,
                             ", not sm_90a (build with 90a in TILEFUSE_CUDA_ARCHS)");
      }
      if (Sm90Kernel<Cfg, kIm2col>::kSmemBytes > smem_optin) {
        return not_supported("the Hopper kernel needs ", Sm90Kernel<Cfg, kIm2col>::kSmemBytes,
                             " bytes of shared memory, and device ", device, " allows ", smem_optin);
      }
      return {};
    };
    Status const s = check();
    cached_device = device;
    cached = s;
    return s;
  }

  template <class Cfg, bool kIm2col>
  static std::string describe_sm90(Plan const& plan, GemmCoord const& g) {
    index_t const tiles = ((g.m + Cfg::kTileM - 1) / Cfg::kTileM) * ((g.n + Cfg::kTileN - 1) / Cfg::kTileN) *
                          (kWgradSm90 ? plan.split_k : 1);
    std::string loads;
    if constexpr (kWgradSm90) {
      loads = status_message("dy by TMA in boxes of 64 channels x 64 pixels (A MN-major), x by ",
                             plan.sm90_pointwise ? "TMA in boxes of 64 channels x 64 pixels"
                                               : "TMA im2col in copies of 64 pixels x 64 channels of one tap",
                             " (B MN-major) (",
                             plan.why_sm90_source, "), ",
                             plan.split_k <= 1 ? std::string("no split-K, ")
                             : plan.sm90_split_in_kernel
                                 ? status_message("split-K ", plan.split_k,
                                                  " (summed in the kernel: each split adds its fp32 tile into the workspace "
                                                  "at L2 and the last one applies the epilogue; not bitwise reproducible, "
                                                  "deterministic = true sums in a second pass), ")
                                 : status_message("split-K ", plan.split_k,
                                                  " (fp32 partials in the workspace, then a reduction pass that applies the "
                                                  "epilogue), "));
    } else {
      loads = status_message(
          kIm2col ? status_message(kDgradSm90 ? "dy" : "x",
                                   plan.sm90_pointwise ? " by tiled TMA (one box of " : " by TMA im2col (one copy of ",
                                   Cfg::kTileM, " pixels x ", Cfg::kTileK, " channels per filter tap and k-tile)")
                  : std::string("x by 16-byte cp.async gathers of the producer warpgroup"),
          " (", plan.why_sm90_source, "), ",
          kDgradSm90 ? "w by TMA in boxes of 64 channels x 64 filters of the flipped tap (B MN-major), " : "w by TMA, ");
    }
    return status_message("sm90 TMA + WGMMA implicit-GEMM ", op_name(), " (GEMM ", g.m, " x ", g.n, " x ", g.k,
                          "; warp-specialized, persistent", Cfg::kSchedule == gemm::Sm90Schedule::kPingPong ? ", ping-pong" : "",
                          "), tile ", Cfg::kTileM, "x", Cfg::kTileN, "x", Cfg::kTileK,
                          " (wave model: ", plan.why_sm90_tile, "), ", Sm90Kernel<Cfg, kIm2col>::kStages, " stages, ",
                          Sm90Kernel<Cfg, kIm2col>::kTmaAux ? "residual by TMA beside the operands, " : "", loads, tiles,
                          " tiles on ", std::min<index_t>(tiles, plan.sm_count), " blocks; ",
                          kFp8 ? status_message(name_of(data_type_of<Element>), " operands, fp32 accumulation in the tensor cores; ")
                               : std::string(),
                          "chosen: sm_90 device with sm_90a code, C and K multiples of ", kChunkElements,
                          kDgradSm90   ? ", 16-byte-aligned dy and w, no split-K"
                          : kWgradSm90 ? ", 16-byte-aligned dy and x"
                                       : ", 16-byte-aligned x and w, no split-K");
  }

  // w (K x R*S*C, row-major) as the 3D tensor map (r*s*c, k', 1), box (TileK, TileN, 1), TileK's swizzle.
  template <class Cfg>
  static Status encode_filter(Arguments const& args, arch::TmaDescriptor* out) {
    Conv2dProblem const& p = args.problem;
    auto const rsc = static_cast<std::uint64_t>(p.R * p.S * p.C);
    auto const k = static_cast<std::uint64_t>(p.K);
    return encode_tiled("w", args.w, {rsc, k, 1}, {rsc, rsc * k},
                        {static_cast<cuuint32_t>(Cfg::kTileK), static_cast<cuuint32_t>(Cfg::kTileN), 1},
                        swizzle_of(Cfg::kTileK), out);
  }

  // One 3D tiled tensor map of `data` through the host adapter: extents and the strides of dims 1 and 2 in
  // elements, innermost first; L2 promotion 256 B, zero fill. `name` is the operand's, for messages.
  static Status encode_tiled(char const* name, Element const* data, std::array<std::uint64_t, 3> extent,
                             std::array<std::uint64_t, 2> stride, std::array<cuuint32_t, 3> box,
                             CUtensorMapSwizzle swizzle, arch::TmaDescriptor* out) {
    static_assert(sizeof(CUtensorMap) == sizeof(arch::TmaDescriptor), "a tensor map is 128 bytes");
    constexpr auto kBytes = static_cast<std::uint64_t>(sizeof(Element));
    TensorMapTiledArgs t;
    t.data_type = tensor_map_type();
    t.rank = 3;
    t.global_address = const_cast<Element*>(data);
    for (int d = 0; d < 3; ++d) {
      t.global_dim[d] = static_cast<cuuint64_t>(extent[d]);
      t.box_dim[d] = box[d];
    }
    t.global_strides[0] = static_cast<cuuint64_t>(stride[0] * kBytes);
    t.global_strides[1] = static_cast<cuuint64_t>(stride[1] * kBytes);
    t.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
    t.swizzle = swizzle;
    t.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    t.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    CUtensorMap map;
    Status const s = make_tensor_map_tiled(t, &map);
    if (!s.ok()) return {s.code(), status_message(op_name(), ": tensor map of ", name, ": ", s.message())};
    std::memcpy(out, &map, sizeof(map));
    return {};
  }

  // dgrad's w (K, R, S, C) as the 3D tensor map (C, R*S, K), box (64 channels, 1 tap, 64 filters), 128-byte
  // swizzle: B MN-major, TileN / 64 boxes per k-tile (sm90::DgradIm2colOperands).
  static Status encode_filter_mn_major(Arguments const& args, arch::TmaDescriptor* out) {
    Conv2dProblem const& p = args.problem;
    auto const c = static_cast<std::uint64_t>(p.C);
    auto const rs = static_cast<std::uint64_t>(p.R * p.S);
    return encode_tiled("w", args.w, {c, rs, static_cast<std::uint64_t>(p.K)}, {c, rs * c}, {64, 1, 64},
                        CU_TENSOR_MAP_SWIZZLE_128B, out);
  }

  // wgrad's dy (N*P*Q x K, row-major) as the 3D tensor map (K, N*P*Q, 1), box (64 channels, 64 pixels, 1),
  // 128-byte swizzle: A MN-major (sm90::WgradOperands).
  static Status encode_dy_mn_major(Arguments const& args, arch::TmaDescriptor* out) {
    Conv2dProblem const& p = args.problem;
    auto const k = static_cast<std::uint64_t>(p.K);
    auto const pixels = static_cast<std::uint64_t>(p.N * p.P() * p.Q());
    return encode_tiled("dy", args.dy, {k, pixels, 1}, {k, k * pixels}, {64, 64, 1}, CU_TENSOR_MAP_SWIZZLE_128B, out);
  }

  // The im2col tensor map of `data` (named `name` in messages) for `problem`: boxes of `pixels` x `channels`.
  static Status encode_im2col(char const* name, Conv2dProblem const& problem, Element const* data, int pixels,
                              int channels, arch::TmaDescriptor* out) {
    CUtensorMap map;
    Status const s = make_tensor_map_im2col(im2col_args(problem, data, pixels, channels), &map);
    if (!s.ok()) return {s.code(), status_message(op_name(), ": im2col tensor map of ", name, ": ", s.message())};
    std::memcpy(out, &map, sizeof(map));
    return {};
  }

  // A pointwise problem's activation (fprop's x, dgrad's dy, wgrad's x: N*H*W pixels of `channels`,
  // row-major; stride 1 so the output has as many pixels) as the 3D tensor map (channels, N*H*W, 1), box
  // (the k-tile's channels, `pixels`, 1): what the im2col copy of the same box would load (plan.sm90_pointwise).
  static Status encode_pointwise(Arguments const& args, char const* name, Element const* data, index_t channels,
                                 int pixels, arch::TmaDescriptor* out, int box_channels) {
    Conv2dProblem const& p = args.problem;
    auto const c = static_cast<std::uint64_t>(channels);
    auto const count = static_cast<std::uint64_t>(p.N * p.H * p.W);
    return encode_tiled(name, data, {c, count, 1}, {c, c * count},
                        {static_cast<cuuint32_t>(box_channels), static_cast<cuuint32_t>(pixels), 1}, swizzle_of(box_channels), out);
  }

  // The activation operand's tensor map (fprop's x, dgrad's dy over `problem`, the equivalent fprop,
  // wgrad's x), boxes of `pixels` x `box_channels`: the tiled map for a pointwise problem
  // (plan.sm90_pointwise; `channels` per pixel), else the im2col one.
  static Status encode_activation(Arguments const& args, Plan const& plan, char const* name, Conv2dProblem const& problem,
                                  Element const* data, index_t channels, int pixels, int box_channels,
                                  arch::TmaDescriptor* out) {
    return plan.sm90_pointwise ? encode_pointwise(args, name, data, channels, pixels, out, box_channels)
                               : encode_im2col(name, problem, data, pixels, box_channels, out);
  }

  // The Hopper wgrad: with plan.split_k = s > 1, either the kernel adds the s splits' fp32 tiles into
  // the workspace's sums and the last split of each tile applies the tree (plan.sm90_split_in_kernel:
  // the workspace zeroed first), or it stores s fp32 partials ([split][K][R*S*C], each over its own
  // range of pixels) and split_k_epilogue_kernel sums them and applies the tree; with s = 1 the kernel
  // applies the tree itself.
  template <class Cfg>
  static Status launch_wgrad(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    GemmCoord const g = output_matrix(args.problem);
    index_t const k_tiles = (g.k + 63) / 64;
    index_t const k_per_split = ((k_tiles + plan.split_k - 1) / plan.split_k) * 64;
    index_t const splits = (g.k + k_per_split - 1) / k_per_split;  // <= plan.split_k: no split past the pixels
    // K's batch is the split; D's (out_batch) is the number of outputs the epilogue writes.
    auto const launch = [&]<class K>(auto const& epilogue, index_t batch, index_t out_batch, auto const& finish) -> Status {
      typename K::Params params;
      TILEFUSE_RETURN_IF_ERROR(encode_dy_mn_major(args, &params.tma_a));
      params.x_tiled = plan.sm90_pointwise ? 1 : 0;
      TILEFUSE_RETURN_IF_ERROR(encode_activation(args, plan, "x", args.problem, args.x, args.problem.C, 64, 64, &params.tma_b));
      params.geometry = ConvGeometry::of(args.problem);
      params.k_per_split = static_cast<int>(k_per_split);
      params.problem = GemmCoord{g.m, g.n, k_per_split, batch};
      params.epilogue = epilogue;
      TILEFUSE_RETURN_IF_ERROR(gemm::encode_sm90_aux<K>(op_name(), g.m, g.n, out_batch, &params));
      gemm::encode_sm90_store<K>(g.m, g.n, out_batch, &params);
      index_t const tiles_m = (g.m + Cfg::kTileM - 1) / Cfg::kTileM;
      index_t const tiles_n = (g.n + Cfg::kTileN - 1) / Cfg::kTileN;
      params.tiles_m = static_cast<int>(tiles_m);
      params.tiles_n = static_cast<int>(tiles_n);
      index_t const tiles = tiles_m * tiles_n * batch;
      params.tiles = static_cast<int>(tiles);
      finish(params);
      LaunchConfig config;
      config.grid = dim3(static_cast<unsigned>(std::min<index_t>(tiles, plan.sm_count)));
      config.block = dim3(K::kThreads);
      config.dynamic_smem_bytes = K::kSmemBytes;
      config.stream = stream;
      void* kernel_args[] = {&params};
      return host_adapter().launch(config, reinterpret_cast<void const*>(&gemm::sm90::sm90_gemm_kernel<K>), kernel_args);
    };
    auto const nothing = [](auto&) {};
    if (splits == 1) return launch.template operator()<Sm90Kernel<Cfg, true>>(plan.epilogue, 1, 1, nothing);
    if (plan.sm90_split_in_kernel) {
      using Reduced = sm90::WgradKernel<Element, Epilogue, gemm::Sm90SplitReduce<Cfg>>;
      static_assert(Reduced::split_ticket_count(1, 1) <= 8, "split_sums_bytes counts 8 tickets per 128 rows");
      std::size_t const bytes = split_sums_bytes(g);
      if (cudaError_t const e = cudaMemsetAsync(workspace, 0, bytes, stream); e != cudaSuccess) {
        return {StatusCode::kCudaError, status_message(op_name(), ": zeroing the split-K sums (", bytes,
                                                       " bytes of the workspace) failed: ", cudaGetErrorString(e))};
      }
      auto* const sums = static_cast<float*>(workspace);
      auto* const tickets = reinterpret_cast<int*>(sums + g.m * g.n);
      return launch.template operator()<Reduced>(plan.epilogue, splits, 1, [&](auto& params) {
        params.split_sums = sums;
        params.split_tickets = tickets;
      });
    }
    using Partial = sm90::WgradKernel<Element, WgradPartialTree, Cfg>;
    epilogue::EpilogueArguments<WgradPartialTree> partial_args;
    partial_args.set("D", static_cast<float*>(workspace));
    typename WgradPartialTree::Params partial;
    Status const bound = partial_args.bind({g.m, g.n, splits}, &partial);
    if (!bound.ok()) return {bound.code(), status_message(op_name(), " split-K partials: ", bound.message())};
    TILEFUSE_RETURN_IF_ERROR(launch.template operator()<Partial>(partial, splits, splits, nothing));
    return gemm::detail::launch_split_k_epilogue<Epilogue>(GemmCoord{g.m, g.n, g.k, 1}, static_cast<int>(splits),
                                                          static_cast<float const*>(workspace), plan.epilogue, stream);
  }
  using WgradPartialTree = epilogue::Store<"D", float, epilogue::Acc>;

  template <class Cfg, bool kIm2col>
  static Status launch_sm90(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    (void)workspace;
    using K = Sm90Kernel<Cfg, kIm2col>;
    typename K::Params params;
    GemmCoord const g = output_matrix(args.problem);
    if constexpr (kDgradSm90) {
      TILEFUSE_RETURN_IF_ERROR(encode_filter_mn_major(args, &params.tma_b));
      Conv2dProblem const f = dgrad_as_fprop(args.problem);
      params.geometry = ConvGeometry::of(f);
      params.a_tiled = plan.sm90_pointwise ? 1 : 0;
      TILEFUSE_RETURN_IF_ERROR(
          encode_activation(args, plan, "dy", f, args.dy, args.problem.K, Cfg::kTileM, Cfg::kTileK, &params.tma_a));
    } else if constexpr (kIm2col) {
      TILEFUSE_RETURN_IF_ERROR(encode_filter<Cfg>(args, &params.tma_b));
      params.geometry = ConvGeometry::of(args.problem);
      params.a_tiled = plan.sm90_pointwise ? 1 : 0;
      TILEFUSE_RETURN_IF_ERROR(
          encode_activation(args, plan, "x", args.problem, args.x, args.problem.C, Cfg::kTileM, Cfg::kTileK, &params.tma_a));
    } else {
      TILEFUSE_RETURN_IF_ERROR(encode_filter<Cfg>(args, &params.tma_b));
      params.geometry = ConvGeometry::of(args.problem);
      params.x = args.x;
    }
    params.problem = g;
    params.epilogue = plan.epilogue;
    TILEFUSE_RETURN_IF_ERROR(gemm::encode_sm90_aux<K>(op_name(), g.m, g.n, 1, &params));
    gemm::encode_sm90_store<K>(g.m, g.n, 1, &params);
    index_t const tiles_m = (g.m + Cfg::kTileM - 1) / Cfg::kTileM;
    index_t const tiles_n = (g.n + Cfg::kTileN - 1) / Cfg::kTileN;
    params.tiles_m = static_cast<int>(tiles_m);
    params.tiles_n = static_cast<int>(tiles_n);
    params.tiles = static_cast<int>(tiles_m * tiles_n);
    LaunchConfig config;
    config.grid = dim3(static_cast<unsigned>(std::min<index_t>(tiles_m * tiles_n, plan.sm_count)));
    config.block = dim3(K::kThreads);
    config.dynamic_smem_bytes = K::kSmemBytes;
    config.stream = stream;
    void* kernel_args[] = {&params};
    return host_adapter().launch(config, sm90_kernel_address<Cfg, kIm2col>(), kernel_args);
  }

  // Whether the tree reads the output coordinate (conv/epilogue_coordinates.h: scalars "conv_P",
  // "conv_Q", "conv_PQ"); only then are the arguments copied to add the extents.
  static bool reads_output_coordinates() {
    return kMode != ConvMode::kWgrad &&
           (EpilogueArgs::takes("conv_P") || EpilogueArgs::takes("conv_Q") || EpilogueArgs::takes("conv_PQ"));
  }
  // The epilogue arguments plus the output's spatial extents, unless the caller set them.
  static EpilogueArgs with_coordinate_extents(Arguments const& args) {
    EpilogueArgs e = args.epilogue;
    Conv2dProblem const& p = args.problem;
    index_t const rows = kMode == ConvMode::kDgrad ? p.H : p.P();
    index_t const cols = kMode == ConvMode::kDgrad ? p.W : p.Q();
    auto set = [&](char const* name, index_t value) {
      if (EpilogueArgs::takes(name) && !e.is_set(name)) e.set(name, static_cast<float>(value));
    };
    set("conv_P", rows);
    set("conv_Q", cols);
    set("conv_PQ", rows * cols);
    return e;
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
    params.operands.input_transform = args.input_transform;
    params.epilogue = plan.epilogue;
    return gemm::detail::launch_tiled<K, Epilogue>(params, plan.split_k, workspace, stream);
  }
};

}  // namespace tilefuse::conv
