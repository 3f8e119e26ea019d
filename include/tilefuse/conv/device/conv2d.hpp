// Conv2d: the device-level implicit-GEMM convolution. One class per mode (fprop, dgrad, wgrad); NHWC
// activations, KRSC filters. Every choice is made by the planner, plan_conv2d (conv2d_plan.hpp, where
// the routing between the two kernels is described), which the Python package calls too; this class
// checks the arguments, binds, launches. Two kernels: the sm80 path (mma.sync,
// conv/kernel/implicit_gemm_operands.h; sm_80, sm_89 and sm_90) and the Hopper kernel (TMA + WGMMA,
// conv/kernel/sm90_implicit_gemm.h). Arguments::overrides (ConvOverrides) may force the source, the
// Hopper tile and schedule, the family or the split reduction (tests, the bench). describe() says which
// kernel ran and why.
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
#include <tilefuse/conv/device/conv2d_dgrad_by_phases.hpp>
#include <tilefuse/conv/device/conv2d_describe.hpp>
#include <tilefuse/conv/device/conv2d_output_extents.hpp>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/conv/device/conv2d_sm90_kernels.hpp>
#include <tilefuse/conv/device/conv2d_sm90_launch.hpp>
#include <tilefuse/conv/device/conv2d_sm90_wgrad_launch.hpp>
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
    // (A bare 16-bit strided dgrad runs by phases with workspace_size() bytes of workspace, the phases' filters;
    // given none, it runs the sm80 kernel: conv2d_dgrad_by_phases.hpp.)
    // The Hopper wgrad adds its splits' fp32 sums inside the kernel, in the order they finish (the last
    // bits vary from run to run); true sums fixed partials in a fixed order in a second pass instead.
    bool deterministic = false;
    // With an InputTransform: per-input-channel scale and shift (C floats each, device memory).
    InputTransformParams input_transform;
    // Choices fixed instead of the planner's models (tests, the bench): family, Hopper tile and source,
    // split reduction (conv2d_plan.hpp).
    ConvOverrides overrides;
    // fprop: the output pixels stored where this map says instead of as packed rows (a strided dgrad's
    // phases, conv2d_dgrad_by_phases.hpp); off by default. Only the Hopper kernel's packed epilogue, unsplit,
    // takes one: can_implement refuses it otherwise.
    gemm::sm90::OutputRowMap output_rows;
    // The Hopper kernel (fprop, stride-1 dgrad; ignored elsewhere): this call touches nothing that a kernel
    // still running before it in the stream writes, and writes nothing such a kernel reads (a strided dgrad's
    // later phases), so it may run beside the kernel before it; it still completes after it.
    bool beside_previous = false;
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
    if constexpr (kByPhases) {
      Plan plan;
      if (make_plan(args, &plan).ok() && plan.by_phases.use) {
        auto const phases = phase_run(args, plan);
        if (phases.why_not.empty()) return phases.workspace_bytes();
      }
    }
    if constexpr (kHopperCapable) {
      Plan plan;
      if (make_plan(args, &plan).ok() && plan.hopper()) {  // only its wgrad splits K
        GemmCoord const g = output_matrix(args.problem);
        return plan.split_in_kernel ? conv_sm90_split_sums_bytes(g) : gemm::detail::split_k_workspace_bytes(g, plan.split_k);
      }
    }
    return gemm::detail::split_k_workspace_bytes(output_matrix(args.problem),
                                                     plan_conv2d(plan_input(args)).sm80_split_k);
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if constexpr (kByPhases) {
      if (plan.by_phases.use) {  // else, or where a phase cannot run or no workspace is given: the sm80 kernel
        auto phases = phase_run(args, plan);
        if (phases.why_not.empty() && (workspace != nullptr || phases.workspace_bytes() == 0)) {
          return Phases::run(std::move(phases), args.problem, args.w, plan.epilogue.data, plan.epilogue.ld, workspace,
                             stream, op_name());
        }
      }
    }
    if (plan.split_k > 1 && workspace == nullptr) {
      return invalid_argument(op_name(), ": split_k = ", plan.split_k, " needs a workspace of workspace_size() = ",
                              workspace_size(args), " bytes, but workspace is null");
    }
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::check_split_k_workspace_alignment(op_name(), plan.split_k, workspace));
    GemmCoord const gemm = output_matrix(args.problem);
    TILEFUSE_RETURN_IF_ERROR(gemm::detail::initialize_reductions<Epilogue>(plan.epilogue, gemm, stream));
    if constexpr (kHopperCapable) {
      if (plan.hopper()) {
        return Hopper::dispatch_sm90(plan.sm90_tile, plan.im2col, plan.half_k, [&]<class Cfg, bool kIm2col>() {
          if constexpr (kWgradSm90) {
            return launch_conv_sm90_wgrad<Element, Epilogue, Hopper, Cfg>(op_name(), args.problem, kElement, plan,
                                                                          plan.epilogue, args.dy, args.x, workspace, stream);
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
    std::string not_by_phases;
    if constexpr (kByPhases) {
      if (plan.by_phases.use) {
        auto const phases = phase_run(args, plan);
        if (phases.why_not.empty()) return Phases::describe(plan.by_phases, phases);
        not_by_phases = "not by phases (" + phases.why_not + "): ";
      }
    }
    return not_by_phases + describe_kernel(plan, args.problem);
  }

  // What the planner is told of a call: the problem, the element type, the tree's facts, the current
  // device (the parity test passes made-up ones), whether the operands are 16-byte aligned, and the caller's requests and overrides.
  static ConvPlanInput plan_input(Arguments const& args, DeviceFacts const& device = current_device_facts()) {
    auto const aligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
    ConvPlanInput in;
    in.problem = args.problem;
    in.element = kElement;
    in.tree = {epilogue::reads_memory<Epilogue>, Hopper::kResidualByTma};
    in.device = device;
    in.auto_config = std::is_same_v<Config, gemm::Sm80AutoConfig> && !InputTransform::kEnabled;
    in.operands_aligned = aligned_16(operand_a(args).data) && aligned_16(operand_b(args).data);
    in.split_k = args.split_k;
    in.deterministic = args.deterministic;
    in.overrides = args.overrides;
    return in;
  }

 private:
  template <class Plan>
  static Status run_sm80(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    switch (plan.sm80_tile) {
      case gemm::Sm80Tile::kSmall: return launch_with<SmallConfig>(args, plan, workspace, stream);
      case gemm::Sm80Tile::kNarrow: return launch_with<NarrowConfig>(args, plan, workspace, stream);
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
  using Hopper = ConvSm90Kernels<Element, kMode, Epilogue,
                                 std::is_same_v<Config, gemm::Sm80AutoConfig> && !InputTransform::kEnabled>;
  static constexpr bool k16Bit = Hopper::k16Bit;
  static constexpr bool kDgradSm90 = Hopper::kDgradSm90;
  static constexpr bool kWgradSm90 = Hopper::kWgradSm90;
  static constexpr bool kTmaOnlySm90 = Hopper::kTmaOnlySm90;
  static constexpr bool kHopperCapable = Hopper::kHopperCapable;
  // A 16-byte chunk, in elements.
  static constexpr index_t kChunkElements = 16 / static_cast<index_t>(sizeof(Element));
  using Sm90Tile = ConvSm90Tile;
  static constexpr ConvElement kElement = std::is_same_v<Element, bfloat16_t>     ? ConvElement::kBfloat16
                                          : std::is_same_v<Element, half_t>       ? ConvElement::kFloat16
                                          : std::is_same_v<Element, float_e4m3_t> ? ConvElement::kE4m3
                                          : std::is_same_v<Element, float_e5m2_t> ? ConvElement::kE5m2
                                                                                  : ConvElement::kFloat32;

  static ConvDescribeFacts describe_facts() {
    ConvDescribeFacts f{op_name()};
    f.auto_config = kAuto;
    f.dgrad_sm90 = kDgradSm90;
    f.wgrad_sm90 = kWgradSm90;
    if constexpr (kFp8) f.fp8_element = name_of(data_type_of<Element>);
    f.chunk_elements = kChunkElements;
    return f;
  }

  template <bool kAligned, class Cfg>
  using Kernel =
      gemm::sm80::TiledKernel<Element, sm80::ImplicitGemmOperands<Element, kMode, kAligned, InputTransform>, Epilogue, Cfg>;

  // The planner's choices (conv2d_plan.hpp) and the epilogue bound for them.
  struct Plan : ConvPlan {
    typename Epilogue::Params epilogue;
    DgradPhases by_phases;  // a strided dgrad as stride-1 fprops (kByPhases)
    bool hopper() const { return family == ConvFamily::kSm90; }
  };

  // A bare strided dgrad runs by phases where the planner says so (conv2d_dgrad_by_phases.hpp), each phase an
  // fprop of this element and tree.
  static constexpr bool kByPhases = kHopperCapable && kDgradSm90 && is_bare_store<Epilogue>;
  using Phases = DgradByPhases<Element, Epilogue, Conv2d<Element, ConvMode::kFprop, Epilogue>>;
  static auto phase_run(Arguments const& args, Plan const& plan) {  // auto: instantiated only where used
    return Phases::prepare(plan.by_phases, args.problem, args.epilogue, plan.epilogue.ld, args.dy, args.overrides);
  }

  // describe()'s text of the kernel a plan runs.
  static std::string describe_kernel(Plan const& plan, Conv2dProblem const& problem) {
    GemmCoord const g = output_matrix(problem);
    if constexpr (kHopperCapable) {
      if (plan.hopper()) {
        return Hopper::dispatch_sm90(plan.sm90_tile, plan.im2col, plan.half_k, [&]<class Cfg, bool kIm2col>() {
          return describe_sm90_plan(describe_facts(), plan, g, sm90_kernel_facts<Cfg, Sm90Kernel<Cfg, kIm2col>>());
        });
      }
    }
    if constexpr (kFp8) {
      return "cannot run: FP8 planned off the Hopper kernel";
    } else {
      using gemm::sm80_gemm_kernel_facts;
      ConvDescribeFacts const f = describe_facts();
      switch (plan.sm80_tile) {
        case gemm::Sm80Tile::kSmall: return describe_sm80_plan(f, plan, g, sm80_gemm_kernel_facts<SmallConfig>());
        case gemm::Sm80Tile::kNarrow: return describe_sm80_plan(f, plan, g, sm80_gemm_kernel_facts<NarrowConfig>());
        default: return describe_sm80_plan(f, plan, g, sm80_gemm_kernel_facts<LargeConfig>());
      }
    }
  }

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
    Status const bound = reads_output_coordinates<EpilogueArgs>(kMode)
                             ? with_output_extents(args.epilogue, args.problem).bind({g.m, g.n, 1}, &plan->epilogue)
                             : args.epilogue.bind({g.m, g.n, 1}, &plan->epilogue);
    if (!bound.ok()) return {bound.code(), std::string(op_name()) + " epilogue: " + bound.message()};
    ConvPlanInput in = plan_input(args);
    in.residual_unaligned = residual_unaligned(plan->epilogue);
    static_cast<ConvPlan&>(*plan) = plan_conv2d(in);
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
    if constexpr (kHopperCapable) {
      if (plan->hopper()) verify_hopper(plan);
    } else if (plan->hopper()) {
      fall_back_to_sm80(plan, "no Hopper kernel is instantiated for this operation");
    }
    if constexpr (kByPhases) plan->by_phases = plan_dgrad_phases(in, true);
    if (args.output_rows.pixels_q != 0 && !stores_through_row_map(*plan)) {
      return not_supported(op_name(), ": output_rows is set, but the planned kernel cannot store through a row map ",
                           "(only the Hopper fprop's packed epilogue, unsplit, does)",
                           plan->hopper() ? std::string() : "; not the Hopper kernel: " + plan->why_not_hopper);
    }
    if constexpr (kFp8) {
      if (!plan->hopper()) {
        return not_supported(op_name(), ": ", name_of(data_type_of<Element>),
                             " operands run on the Hopper kernel only (the sm80 kernel has no FP8 path), which cannot "
                             "take this problem: ",
                             plan->why_not_hopper);
      }
    }
    return {};
  }

  // ---- the Hopper kernel ----

  static bool stores_through_row_map(Plan const& plan) {
    if constexpr (kMode == ConvMode::kFprop && kHopperCapable) {
      if (!plan.hopper() || plan.split_k > 1) return false;
      return Hopper::dispatch_sm90(plan.sm90_tile, plan.im2col, plan.half_k,
                                   [&]<class Cfg, bool kIm2col>() { return Sm90Kernel<Cfg, kIm2col>::kRowMap; });
    } else {
      (void)plan;
      return false;
    }
  }

  // What the planner cannot know: whether this binary holds the chosen kernel's sm_90a code (and its
  // shared memory fits). Falls back to the sm80 kernel with the reason otherwise.
  static void verify_hopper(Plan* plan) {
    Status const ready = Hopper::dispatch_sm90(
        plan->sm90_tile, plan->im2col, plan->half_k,
        [&]<class Cfg, bool kIm2col>() { return Hopper::template sm90_ready<Cfg, kIm2col>(); });
    if (!ready.ok()) fall_back_to_sm80(plan, ready.message());
  }

  // The planner's fact ConvPlanInput::residual_unaligned of a bound tree: why TMA cannot read its residual
  // (every config that loads it by TMA stages the same AuxLoad), empty where it can or the tree has none.
  static std::string residual_unaligned(typename Epilogue::Params const& epilogue) {
    if constexpr (Hopper::kResidualByTma) {
      using Large = typename Hopper::template ConfigFor<sm90::Sm90ConvIm2colLargeConfig>;
      return gemm::sm90_aux_unaligned<Sm90Kernel<Large, true>>(epilogue, 1);
    } else {
      (void)epilogue;
      return {};
    }
  }

  // The Hopper kernel of a tile and a source (its dispatch and readiness: Hopper, conv2d_sm90_kernels.hpp).
  template <class Cfg, bool kIm2col>
  using Sm90Kernel = typename Hopper::template Sm90Kernel<Cfg, kIm2col>;


  template <class Cfg, bool kIm2col>
  static Status launch_sm90(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    (void)workspace;
    using K = Sm90Kernel<Cfg, kIm2col>;
    typename K::Params params;
    GemmCoord const g = output_matrix(args.problem);
    Operand const a = operand_a(args);
    Operand const b = operand_b(args);
    if constexpr (kIm2col || kDgradSm90) {
      TILEFUSE_RETURN_IF_ERROR(
          encode_conv_sm90_operands(args.problem, kElement, plan, a.data, b.data, &params.tma_a, &params.tma_b, &params.a_tiled));
    } else {
      int unused = 0;
      TILEFUSE_RETURN_IF_ERROR(encode_conv_sm90_operands(args.problem, kElement, plan, a.data, b.data, nullptr, &params.tma_b, &unused));
      params.x = args.x;
    }
    params.geometry = ConvGeometry::of(kDgradSm90 ? dgrad_as_fprop(args.problem) : args.problem);
    params.problem = g;
    params.epilogue = plan.epilogue;
    TILEFUSE_RETURN_IF_ERROR(gemm::encode_sm90_aux<K>(op_name(), g.m, g.n, 1, &params));
    gemm::encode_sm90_store<K>(g.m, g.n, 1, &params);
    if constexpr (K::kRowMap) {
      if (args.output_rows.pixels_q != 0) {
        params.row_map = args.output_rows;
        if constexpr (K::kTmaStore) params.d_by_tma = 0;  // a mapped row is no TMA box
      }
    }
    params.beside_previous = args.beside_previous ? 1 : 0;
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
    config.after_previous_early = plan.after_previous_early;
    void* kernel_args[] = {&params};
    return host_adapter().launch(config, Hopper::template sm90_kernel_address<Cfg, kIm2col>(), kernel_args);
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
