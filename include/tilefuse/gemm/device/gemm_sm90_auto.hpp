// GemmSm90 with Sm90AutoConfig: the Hopper GEMM whose kernel config the planner picks per problem
// (gemm_plan.hpp: plan_gemm_sm90): the tile, the in-kernel split and the TMA residual.
// Host code: include from .cu files compiled by nvcc.
#pragma once

#include <optional>
#include <string>
#include <type_traits>

#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm90.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_epilogue_path.h>
#include <tilefuse/runtime/device_query.hpp>

namespace tilefuse::gemm {

// GemmSm90 with Sm90AutoConfig: the same interface, the tile picked per problem by the planner
// (gemm_plan.hpp: plan_gemm_sm90; 128x256, 128x128, 128x64, 64x64 ping-pong, 128x96 or 128x160, one kernel
// instantiation each) and, for
// 16-bit operands with split_k = 0 (choose) or >= 2, K split and summed in the kernel on the 128x128 tile or,
// where the planner picks it, the 64x64 one (Sm90SplitReduce: a workspace of workspace_size(args) bytes). A Plan
// remembers which one it holds.
template <class ElementAB, class LayoutA, class LayoutB, class Epilogue, class ElementB>
class GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90AutoConfig, ElementB> {
  // The three tiles in bytes are the same for every element type; FP8 has twice the elements of K.
  static constexpr bool kFp8 = sizeof(ElementAB) == 1;
  using Large = GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue,
                         std::conditional_t<kFp8, Sm90Fp8LargeConfig, Sm90LargeConfig>, ElementB>;
  using Medium = GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue,
                          std::conditional_t<kFp8, Sm90Fp8MediumConfig, Sm90MediumConfig>, ElementB>;
  using Narrow = GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue,
                          std::conditional_t<kFp8, Sm90Fp8NarrowConfig, Sm90NarrowConfig>, ElementB>;
  // The 64x64 ping-pong tile is 16-bit only (named as Narrow for FP8, which the planner never gives it).
  using Short = std::conditional_t<kFp8, Narrow, GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90ShortConfig, ElementB>>;
  // The 128x96 and 128x160 tiles are 16-bit only too (named as Medium for FP8).
  using Mid = std::conditional_t<kFp8, Medium, GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90MidConfig, ElementB>>;
  using Wide = std::conditional_t<kFp8, Medium, GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90WideConfig, ElementB>>;
  // FP8 does not split (named as Medium so that nothing of a split FP8 kernel is instantiated).
  using Split = std::conditional_t<
      kFp8, Medium, GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90SplitReduce<Sm90MediumConfig>, ElementB>>;
  using SplitShort = std::conditional_t<
      kFp8, Medium, GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90SplitReduce<Sm90ShortConfig>, ElementB>>;
  // Trees with one 16-bit residual the kernel can stage load it by TMA where it is aligned for it (the planner's
  // GemmRequest::residual_by_tma): the three tiles' Sm90TmaResidual twins. Other trees name the plain tiles
  // again, so that nothing of a twin is instantiated.
  static constexpr bool kTreeResidual = !kFp8 && sm90::EpiloguePath<Epilogue, Sm90TmaResidual<Sm90LargeConfig>>::kTmaAux;
  template <class Cfg, class Plain>
  using TmaTwin = std::conditional_t<kTreeResidual,
                                     GemmSm90<ElementAB, LayoutA, LayoutB, Epilogue, Sm90TmaResidual<Cfg>, ElementB>, Plain>;
  using LargeTma = TmaTwin<Sm90LargeConfig, Large>;
  using MediumTma = TmaTwin<Sm90MediumConfig, Medium>;
  using NarrowTma = TmaTwin<Sm90NarrowConfig, Narrow>;
  using ShortTma = TmaTwin<Sm90ShortConfig, Short>;
  using MidTma = TmaTwin<Sm90MidConfig, Mid>;
  using WideTma = TmaTwin<Sm90WideConfig, Wide>;

 public:
  using EpilogueArgs = epilogue::EpilogueArguments<Epilogue>;
  using Arguments = GemmSm90Arguments<ElementAB, Epilogue, ElementB>;

  struct Plan {
    Sm90Tile tile = Sm90Tile::kLarge;
    int split_k = 1;               // >= 2: the split plan below
    bool residual_by_tma = false;  // the *_tma plans below (split_k == 1)
    typename Large::Plan large;    // valid when tile == kLarge and split_k == 1
    typename Medium::Plan medium;  // ... kMedium
    typename Narrow::Plan narrow;  // ... kNarrow
    typename Short::Plan short_;   // ... kShort
    typename Mid::Plan mid;        // ... kMid
    typename Wide::Plan wide;      // ... kWide
    typename Split::Plan split;    // ... split_k >= 2 on the 128x128 tile
    typename SplitShort::Plan split_short;  // ... split_k >= 2 on the 64x64 tile
    typename LargeTma::Plan large_tma;
    typename MediumTma::Plan medium_tma;
    typename NarrowTma::Plan narrow_tma;
    typename ShortTma::Plan short_tma;
    typename MidTma::Plan mid_tma;
    typename WideTma::Plan wide_tma;
  };

  static Status can_implement(Arguments const& args) {
    Plan plan;
    return initialize(args, &plan);
  }

  static std::size_t workspace_size(Arguments const& args) {
    Plan plan;
    adopt(planned(args), &plan);
    Arguments const resolved = split_arguments(args, plan.split_k);
    return visit(plan, [&](auto op, auto const&) { return decltype(op)::type::workspace_size(resolved); });
  }

  // The planner's choice on the current device (the model needs the SM count).
  static Sm90GemmPlan planned(Arguments const& args) {
    DeviceFacts facts = current_device_facts();
    if (facts.sm_count == 0) facts.sm_count = 132;  // initialize() then reports the missing device
    bool const splits = !kFp8 && (args.split_k == 0 || sm90_can_split(args.problem, args.split_k));
    return plan_gemm_sm90(args.problem, facts, kFp8, std::nullopt, splits ? args.split_k : 1,
                          residual_by_tma(args.problem, args.epilogue));
  }

  // Whether the tree stages a 16-bit residual and this call's residual is one TMA can read (a 16-byte-aligned
  // base, leading dimension and batch stride): the planner's GemmRequest::residual_by_tma. False where the
  // epilogue's arguments do not bind (initialize() then says why).
  static bool residual_by_tma(GemmCoord const& p, EpilogueArgs const& arguments) {
    if constexpr (kTreeResidual) {
      typename Epilogue::Params epilogue{};
      if (!arguments.bind({p.m, p.n, p.batch}, &epilogue).ok()) return false;
      return sm90_aux_unaligned<typename LargeTma::Kernel>(epilogue, p.batch).empty();
    } else {
      (void)p, (void)arguments;
      return false;
    }
  }

  // Checks `args` and fills *plan (a split plan takes its workspace here; without one, run(plan) refuses).
  static Status initialize(Arguments const& args, Plan* plan, void* workspace = nullptr) {
    if (args.split_k < 0) return invalid_argument("gemm_sm90: split_k = ", args.split_k, " must be 0, 1 or more");
    if (args.split_k >= 2 && (kFp8 || !sm90_can_split(args.problem, args.split_k))) {
      return not_supported("gemm_sm90: split_k = ", args.split_k, " cannot split k = ", args.problem.k,
                           kFp8 ? " of FP8 operands (the split runs on 16-bit operands)"
                                : " (batch 1, parts of whole 16-byte pieces)");
    }
    adopt(planned(args), plan);
    Arguments const resolved = split_arguments(args, plan->split_k);
    return visit(*plan, [&](auto op, auto& op_plan) {
      return decltype(op)::type::initialize(resolved, &op_plan, workspace);  // (unsplit configs take no workspace)
    });
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(initialize(args, &plan, workspace));
    return run(plan, stream);
  }

  static Status run(Plan const& plan, cudaStream_t stream) {
    return visit(plan, [&](auto op, auto const& op_plan) { return decltype(op)::type::run(op_plan, stream); });
  }

  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = initialize(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    return describe(plan);
  }

  // describe() for a plan already made (no driver work, no re-validation).
  static std::string describe(Plan const& plan) {
    return visit(plan, [](auto op, auto const& op_plan) { return decltype(op)::type::describe(op_plan); }) +
           (plan.split_k > 1 ? " (tile and split picked per problem)" : " (tile picked per problem)");
  }

 private:
  // f(std::type_identity<Op>{}, op_plan) for the operation the plan runs (a tile, its TMA residual twin, or the
  // split) and its part of the plan.
  template <class PlanRef, class F>
  static auto visit(PlanRef& plan, F&& f) {
    if (plan.split_k > 1) {
      if (plan.tile == Sm90Tile::kShort) return f(std::type_identity<SplitShort>{}, plan.split_short);
      return f(std::type_identity<Split>{}, plan.split);
    }
    if (plan.residual_by_tma) {
      switch (plan.tile) {
        case Sm90Tile::kMedium: return f(std::type_identity<MediumTma>{}, plan.medium_tma);
        case Sm90Tile::kNarrow: return f(std::type_identity<NarrowTma>{}, plan.narrow_tma);
        case Sm90Tile::kShort: return f(std::type_identity<ShortTma>{}, plan.short_tma);
        case Sm90Tile::kMid: return f(std::type_identity<MidTma>{}, plan.mid_tma);
        case Sm90Tile::kWide: return f(std::type_identity<WideTma>{}, plan.wide_tma);
        default: return f(std::type_identity<LargeTma>{}, plan.large_tma);
      }
    }
    switch (plan.tile) {
      case Sm90Tile::kMedium: return f(std::type_identity<Medium>{}, plan.medium);
      case Sm90Tile::kNarrow: return f(std::type_identity<Narrow>{}, plan.narrow);
      case Sm90Tile::kShort: return f(std::type_identity<Short>{}, plan.short_);
      case Sm90Tile::kMid: return f(std::type_identity<Mid>{}, plan.mid);
      case Sm90Tile::kWide: return f(std::type_identity<Wide>{}, plan.wide);
      default: return f(std::type_identity<Large>{}, plan.large);
    }
  }

  // The planner's choice as the Plan's selector (which operation visit() runs).
  static void adopt(Sm90GemmPlan const& chosen, Plan* plan) {
    plan->tile = chosen.kind;
    plan->split_k = chosen.split_k;
    plan->residual_by_tma = chosen.residual_by_tma;
  }

  // args with the plan's split count (1: unsplit), what the chosen operation checks.
  static Arguments split_arguments(Arguments const& args, int split) {
    Arguments a = args;
    a.split_k = split;
    return a;
  }
};

}  // namespace tilefuse::gemm
