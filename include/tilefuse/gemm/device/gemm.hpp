// Gemm: the device-level GEMM, D[l] = epilogue(A[l] * B[l]) for l < batch, A: m x k, B: k x n, in any of the
// four layouts; bf16 / fp16 (mma.m16n8k16) or tf32 (mma.m16n8k8.tf32: float rounded in the fragments, or
// tfloat32_t as given), fp32 accumulation. can_implement() checks every argument and explains a refusal.
// Kernel selection (Config):
//   GemmAutoConfig (the default)  the planner's choice (gemm_plan.hpp: plan_gemm): on an sm_90 device with
//                                 bf16/fp16 operands the Hopper kernel (GemmSm90, Sm90AutoConfig), the
//                                 operands first packed into the workspace where TMA cannot read them and
//                                 K split in the kernel where the planner splits, or the skinny kernel;
//                                 else the sm_80 kernel with Sm80DefaultConfig. describe() says which and why.
//   an Sm80TileConfig             always the sm_80 kernel (mma.sync; sm_80, sm_89, sm_90) with that config: the
//                                 16-byte cp.async path where pointers and leading dimensions allow, else the
//                                 element-wise one (any shape runs); split_k > 1 (0: chosen) through an fp32
//                                 workspace.
// Hopper plans are cached: the last 16 argument sets per Gemm type, keyed by their bytes and the workspace
// (gemm_plan_cache.hpp); a repeated run() does no driver work. Host code: include from .cu files (nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm80_describe.hpp>
#include <tilefuse/gemm/device/gemm_plan_cache.hpp>
#include <tilefuse/gemm/device/pack_operand.hpp>
#include <tilefuse/gemm/device/skinny_launch.hpp>
#include <tilefuse/gemm/device/gemm_sm90.hpp>
#include <tilefuse/gemm/device/gemm_sm90_auto.hpp>
#include <tilefuse/gemm/device/operand_check.hpp>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/gemm/kernel/sm80_tma_operands.h>
#include <tilefuse/runtime/per_device_fact.hpp>
#include <tilefuse/runtime/pointer_check.hpp>

namespace tilefuse::gemm {

template <class ElementAB, class LayoutA, class LayoutB, class Epilogue, class Config = GemmAutoConfig>
class Gemm {
  static_assert(std::is_same_v<ElementAB, bfloat16_t> || std::is_same_v<ElementAB, half_t> ||
                    std::is_same_v<ElementAB, float> || std::is_same_v<ElementAB, tfloat32_t>,
                "the sm_80 GEMM takes bf16, fp16, float (computed in tf32) or tfloat32_t inputs");

 public:
  using EpilogueArgs = epilogue::EpilogueArguments<Epilogue>;

  struct Arguments {
    GemmCoord problem;  // m, n, k, batch
    ElementAB const* a = nullptr;
    index_t lda = epilogue::kPacked;
    index_t batch_stride_a = epilogue::kPacked;
    ElementAB const* b = nullptr;
    index_t ldb = epilogue::kPacked;
    index_t batch_stride_b = epilogue::kPacked;
    EpilogueArgs epilogue;  // "D" and every named input of the tree, set by name (device pointers)
    // 1 (the default): no split, so a call needs no workspace unless its operands must be copied. > 1: K split
    // that many ways (in the Hopper kernel where it can, else the sm_80 kernel's parallel split-K), 0: the
    // planner chooses (gemm_plan.hpp; tilefuse.Gemm always asks so); ask workspace_size() after setting it.
    int split_k = 1;
    // A typed override of the planner's kernel family (GemmAutoConfig only): kSm90 (the Hopper kernel), kSkinny
    // (m <= 16 rows) or kSm80; run() and can_implement() refuse, saying why, where that family cannot run.
    GemmFamily family = GemmFamily::kAuto;
  };

  // Which kernels this Gemm may run: under GemmAutoConfig, the Hopper kernel for bf16/fp16 with A
  // row-major and B column-major (its only layouts), and the sm_80 kernel with Sm80DefaultConfig;
  // under an Sm80 config, that config's sm_80 kernel.
  static constexpr bool kAuto = std::is_same_v<Config, GemmAutoConfig>;
  // (Operands in other layouts or unaligned are copied into its layouts first: gemm_plan.hpp, plan_gemm.)
  static constexpr bool kHopperCandidate =
      kAuto && (std::is_same_v<ElementAB, bfloat16_t> || std::is_same_v<ElementAB, half_t>);
  static constexpr bool kHopperLayouts = std::is_same_v<LayoutA, RowMajor> && std::is_same_v<LayoutB, ColumnMajor>;
  // A few rows (m <= 16) in those layouts: the skinny kernel (skinny_launch.hpp), where the planner picks it.
  static constexpr bool kSkinnyCandidate = kHopperCandidate && kHopperLayouts;
  using Sm80Config = std::conditional_t<kAuto, Sm80DefaultConfig<ElementAB>, Config>;
  // The Hopper operation (named only; instantiated only when kHopperCandidate).
  using Hopper = GemmSm90<ElementAB, RowMajor, ColumnMajor, Epilogue, Sm90AutoConfig>;

  static Status can_implement(Arguments const& args) {
    if constexpr (kHopperCandidate) {
      Choice const choice = choose(args, nullptr, /*with_workspace=*/true);
      if (choice.hopper || choice.skinny) return {};
      if (choice.forced_refusal) return forced_refusal(choice.why_not);
    } else if (args.family == GemmFamily::kSm90 || args.family == GemmFamily::kSkinny) {
      return not_supported("gemm: the ", name_of(args.family), " kernel was asked for, but this Gemm runs the sm80 "
                           "kernel only (an Sm80 config, or operands other than bf16 / fp16)");
    }
    Plan plan;
    return make_plan(args, &plan);
  }

  // Bytes of workspace run() takes: the Hopper kernel's operand copies and in-kernel split sums where the
  // plan has them, else the sm_80 kernel's split-K partials (the larger, for a Hopper plan that falls back).
  // Without it (workspace null) the Hopper kernel runs unsplit, and operands that need a copy run on the
  // sm_80 kernel.
  static std::size_t workspace_size(Arguments const& args) {
    std::size_t const sm80 = detail::split_k_workspace_bytes(args.problem, sm80_split_k(args));
    if constexpr (kHopperCandidate) {
      Decision const d = decide(args);
      if (d.status.ok() && d.plan.family == GemmFamily::kSm90) return std::max(sm80, hopper_workspace_of(d).bytes);
      if (d.status.ok() && d.plan.family == GemmFamily::kSkinny) return 0;
    }
    return sm80;
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    if constexpr (kHopperCandidate) {
      Choice const choice = choose(args, workspace, workspace != nullptr);
      if (choice.forced_refusal) return forced_refusal(choice.why_not);
      if constexpr (kSkinnyCandidate) {
        if (choice.skinny) {
          return launch_skinny<ElementAB, Epilogue>(args.problem, args.a, choice.lda, choice.batch_stride_a, args.b,
                                                    choice.ldb, choice.batch_stride_b, choice.epilogue, stream);
        }
      }
      if (choice.hopper) {
        if (choice.copy) TILEFUSE_RETURN_IF_ERROR(copy_operands(args, choice, workspace, stream));
        return Hopper::run(choice.plan, stream);
      }
    }
    Plan plan;
    if (!kHopperCandidate && (args.family == GemmFamily::kSm90 || args.family == GemmFamily::kSkinny)) {
      return can_implement(args);
    }
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if (plan.split_k > 1 && workspace == nullptr) {
      return invalid_argument("gemm: split_k = ", plan.split_k, args.split_k == 0 ? " (chosen for split_k = 0)" : "",
                              " needs a workspace of workspace_size() = ", workspace_size(args),
                              " bytes, but workspace is null");
    }
    TILEFUSE_RETURN_IF_ERROR(detail::check_split_k_workspace_alignment("gemm", plan.split_k, workspace));
    TILEFUSE_RETURN_IF_ERROR(detail::initialize_reductions<Epilogue>(plan.epilogue, args.problem, stream));
    if constexpr (kTmaCandidate) {
      if (plan.tma) return launch_tma(args, plan, workspace, stream);
    }
    return plan.aligned ? launch<true>(args, plan, workspace, stream) : launch<false>(args, plan, workspace, stream);
  }

  // Which kernel runs this problem, and why: "sm90 TMA + WGMMA GEMM ..., tile 128x256x64, ..." or
  // "sm80 mma.sync GEMM ... (Hopper kernel refused: lda = 4093 is not a multiple of 8 elements ...)".
  // What run() does with a workspace of workspace_size() bytes.
  static std::string describe(Arguments const& args) {
    std::string hopper_note;
    if constexpr (kHopperCandidate) {
      Choice const choice = choose(args, nullptr, /*with_workspace=*/true);
      if (choice.forced_refusal) return "cannot run: " + forced_refusal(choice.why_not).message();
      if (choice.skinny) return choice.note;
      if (choice.hopper) {
        return (choice.planned_only.empty() ? Hopper::describe(choice.plan) : choice.planned_only) + choice.note;
      }
      hopper_note = hopper_refused_note(choice.why_not);
    } else if constexpr (kAuto) {
      hopper_note = " (Hopper kernel not used: it takes bf16 or fp16 operands)";
    }
    if (!kHopperCandidate && (args.family == GemmFamily::kSm90 || args.family == GemmFamily::kSkinny)) {
      return "cannot run: " + can_implement(args).message();
    }
    Plan plan;
    Status const s = make_plan(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    char const* const inputs = kIsTf32 ? (std::is_same_v<ElementAB, float> ? "fp32 rounded to tf32" : "tf32")
                                        : (std::is_same_v<ElementAB, bfloat16_t> ? "bf16" : "fp16");
    return describe_sm80_gemm(sm80_gemm_kernel_facts<Sm80Config>(), inputs, plan.tma, plan.aligned, plan.why_narrow,
                              plan.split_k, hopper_note);
  }

  // Look-ups of the Hopper plan cache of this Gemm type (all zeros without a Hopper candidate).
  static detail::PlanCacheStats plan_cache_stats() {
    if constexpr (kHopperCandidate) return cache().stats();
    else return {};
  }

 private:
  // A forced family's refusal, worded once ("gemm: ..." whether the planner or the Hopper kernel refused).
  static Status forced_refusal(std::string const& why_not) {
    return not_supported(why_not.rfind("gemm: ", 0) == 0 ? "" : "gemm: ", why_not);
  }

  // The outcome of asking the Hopper kernel: its plan, or why it refused.
  struct Choice {
    bool hopper = false;
    bool skinny = false;  // the skinny kernel, with lda ... batch_stride_b resolved and the epilogue bound
    bool forced_refusal = false;  // args.family forced a family that cannot run: why_not says why
    typename Epilogue::Params epilogue{};
    std::string why_not;
    typename detail::HopperPlanOf<kHopperCandidate, Hopper>::type plan{};
    bool copy = false;   // A and B packed into the workspace first (copy_operands), from these strides
    index_t padded_k = 0;
    index_t lda = 0, ldb = 0, batch_stride_a = 0, batch_stride_b = 0;
    std::size_t b_offset = 0;  // where B's copy starts in the workspace
    std::string note;    // what describe() adds to the Hopper kernel's text (the copies)
    std::string planned_only;  // planned without a workspace for the copies: the kernel's text (no plan made)
    bool uses_workspace = false;  // the plan holds addresses in `workspace` (copies, split sums)
    void const* workspace = nullptr;
  };

  // Asks the planner, then the Hopper kernel (through the cache). with_workspace: run() has a workspace of
  // workspace_size() bytes at `workspace` (describe() and can_implement() plan as if it had, with none).
  static Choice choose(Arguments const& args, void* workspace, bool with_workspace) {
    Choice choice;
    if constexpr (kHopperCandidate) {
      std::string key;
      bool const keyed = detail::gemm_plan_key<Epilogue>(args, with_workspace, &key);
      if (keyed && cache().find(key, &choice) && (!choice.uses_workspace || choice.workspace == workspace)) {
        return choice;
      }
      choice = plan_hopper(args, workspace, with_workspace);
      choice.workspace = workspace;
      if (keyed) cache().insert(key, choice);
    }
    return choice;
  }

  static Choice plan_hopper(Arguments const& args, void* workspace, bool with_workspace) {
    Choice choice;
    if constexpr (kHopperCandidate) {
      Decision const d = decide(args);
      if (!d.status.ok()) {
        choice.why_not = d.status.message();
        choice.forced_refusal = args.family == GemmFamily::kSm90 || args.family == GemmFamily::kSkinny;
        return choice;
      }
      if (kSkinnyCandidate && d.plan.family == GemmFamily::kSkinny) {
        choice.skinny = true;
        choice.lda = d.resolved.lda;
        choice.ldb = d.resolved.ldb;
        choice.batch_stride_a = d.resolved.batch_stride_a;
        choice.batch_stride_b = d.resolved.batch_stride_b;
        choice.epilogue = d.resolved.epilogue;
        choice.note = d.plan.why;
        return choice;
      }
      if (d.plan.family != GemmFamily::kSm90) {
        choice.why_not = why_hopper_not_used(d.plan.why);
        return choice;
      }
      if (d.plan.copy_operands && !with_workspace) {
        choice.why_not = "A and B need copying into its layouts and run() got no workspace (pass workspace_size() "
                         "bytes)";
        choice.forced_refusal = args.family == GemmFamily::kSm90;
        return choice;
      }
      // A plan with copies or split sums holds addresses in the workspace (choose remakes it for another).
      choice.uses_workspace = d.plan.copy_operands || (with_workspace && d.plan.sm90.split_k > 1);
      GemmCoord const& p = args.problem;
      typename Hopper::Arguments h;
      h.problem = p;
      h.a = args.a;
      h.lda = args.lda;
      h.batch_stride_a = args.batch_stride_a;
      h.b = args.b;
      h.ldb = args.ldb;
      h.batch_stride_b = args.batch_stride_b;
      h.epilogue = args.epilogue;
      h.split_k = with_workspace ? d.plan.sm90.split_k : 1;  // without a workspace, no split
      char* const base = static_cast<char*>(workspace);
      HopperWorkspace const layout = hopper_workspace_of(d);
      if (d.plan.copy_operands) {
        index_t const kp = d.plan.padded_k;
        choice.copy = true;
        choice.padded_k = kp;
        choice.lda = d.resolved.lda;
        choice.ldb = d.resolved.ldb;
        choice.batch_stride_a = d.resolved.batch_stride_a;
        choice.batch_stride_b = d.resolved.batch_stride_b;
        choice.b_offset = layout.b_offset;
        choice.note = "; " + d.plan.why.substr(d.plan.why.find("A and B copied"));
        if (base == nullptr) {  // describe() and can_implement(): the copies' plan, told from the planner's
          choice.hopper = true;
          choice.planned_only = status_message(
              "sm90 TMA + WGMMA GEMM (warp-specialized, persistent), tile ", d.plan.sm90.tile_m, "x",
              d.plan.sm90.tile_n, "x", d.plan.sm90.tile_k, d.plan.sm90.residual_by_tma ? ", the residual loaded by TMA" : "",
              d.plan.sm90.split_k > 1 ? status_message(", split-K ", d.plan.sm90.split_k, " summed in the kernel") : "");
          return choice;
        }
        h.a = reinterpret_cast<ElementAB const*>(base);
        h.b = reinterpret_cast<ElementAB const*>(base + choice.b_offset);
        h.problem.k = kp;
        h.lda = h.ldb = kp;
        h.batch_stride_a = copied_batches(p.batch, d.resolved.batch_stride_a) == 1 && p.batch > 1 ? 0 : p.m * kp;
        h.batch_stride_b = copied_batches(p.batch, d.resolved.batch_stride_b) == 1 && p.batch > 1 ? 0 : p.n * kp;
      }
      void* const split_workspace = base != nullptr && h.split_k > 1 ? base + layout.split_offset : nullptr;
      if (reinterpret_cast<std::uintptr_t>(split_workspace) % 16 != 0) h.split_k = 1;  // the sums need 16 bytes
      Status const s = Hopper::initialize(h, &choice.plan, h.split_k > 1 ? split_workspace : nullptr);
      choice.hopper = s.ok();
      if (!s.ok()) {
        choice.why_not = detail::hopper_refusal(s.message());
        choice.forced_refusal = args.family == GemmFamily::kSm90;
      }
    }
    return choice;
  }

  // Packs A and B into the workspace as the Hopper kernel reads them (kernel/pack_k_major.h), from the
  // strides the plan resolved.
  static Status copy_operands(Arguments const& args, Choice const& c, void* workspace, cudaStream_t stream) {
    GemmCoord const& p = args.problem;
    auto* const a_out = static_cast<ElementAB*>(workspace);
    auto* const b_out = reinterpret_cast<ElementAB*>(static_cast<char*>(workspace) + c.b_offset);
    bool const a_rows = std::is_same_v<LayoutA, RowMajor>;  // A (m x k): row r, column c
    TILEFUSE_RETURN_IF_ERROR(pack_k_major(args.a, p.m, p.k, a_rows ? c.lda : 1, a_rows ? 1 : c.lda,
                                          copied_batches(p.batch, c.batch_stride_a), c.batch_stride_a, a_out,
                                          c.padded_k, stream));
    bool const b_columns = std::is_same_v<LayoutB, ColumnMajor>;  // B (k x n) packed as n rows of k
    return pack_k_major(args.b, p.n, p.k, b_columns ? c.ldb : 1, b_columns ? 1 : c.ldb,
                        copied_batches(p.batch, c.batch_stride_b), c.batch_stride_b, b_out, c.padded_k, stream);
  }

  template <bool kAligned>
  using Kernel = sm80::GemmKernel<ElementAB, LayoutA, LayoutB, Epilogue, Sm80Config, kAligned>;
  // On an sm_90 device the 16-byte path of K-contiguous 16-bit operands with 64-element k-tiles loads by
  // TMA (kernel/sm80_tma_operands.h says why), unless the config opts out (kTmaOnHopper = false).
  static constexpr bool kTmaCandidate =
      sizeof(ElementAB) == 2 && std::is_same_v<LayoutA, RowMajor> && std::is_same_v<LayoutB, ColumnMajor> &&
      Sm80Config::kTileK * sizeof(ElementAB) == 128 && Sm80Config::kTileM <= 256 && Sm80Config::kTileN <= 256 &&
      sm80_tma_on_hopper<Sm80Config>();
  using TmaKernel = sm80::TiledKernel<ElementAB, sm80::TmaOperands<ElementAB>, Epilogue, Sm80Config>;
  static constexpr bool kIsTf32 = sizeof(ElementAB) == 4;
  // Elements per 16-byte chunk: the alignment unit of the 16-byte path.
  static constexpr index_t kChunkElements = 16 / static_cast<index_t>(sizeof(ElementAB));

  struct Plan {
    index_t lda = 0, ldb = 0, batch_stride_a = 0, batch_stride_b = 0;
    int split_k = 1;  // resolved: args.split_k, or the choice for 0
    bool aligned = false;
    bool tma = false;  // the aligned path, its operands loaded by TMA (an sm_90 device)
    std::string why_narrow;
    typename Epilogue::Params epilogue;
  };

  // The planner's decision (gemm_plan.hpp: plan_gemm) with the operands' facts from the sm_80 plan.
  struct Decision {
    Status status;  // the sm_80 plan's verdict on the arguments (run() reports it on the sm_80 path)
    Plan resolved;  // strides resolved, alignment known
    GemmPlan plan;
    GemmCoord problem;
  };

  static Decision decide(Arguments const& args) {
    Decision d;
    d.problem = args.problem;
    d.status = make_plan(args, &d.resolved);
    if (!d.status.ok()) return d;
    GemmRequest r;
    r.problem = args.problem;
    r.sixteen_bit = !kIsTf32;
    r.hopper_layouts = kHopperLayouts;
    r.tma_aligned = d.resolved.aligned;
    r.split_k = args.split_k;
    r.hopper_code = hopper_code_here();
    r.skinny_code = kHopperCandidate;  // (other layouts: the planner refuses them with the reason)
    r.family = kHopperCandidate ? args.family : GemmFamily::kSm80;
    if constexpr (kHopperCandidate) r.residual_by_tma = Hopper::residual_by_tma(args.problem, args.epilogue);
    d.status = plan_gemm(r, current_device_facts(), &d.plan);
    return d;
  }

  static HopperWorkspace hopper_workspace_of(Decision const& d) {
    return hopper_workspace(d.plan, d.problem, d.resolved.batch_stride_a, d.resolved.batch_stride_b, sizeof(ElementAB));
  }

  static detail::PlanCache<Choice>& cache() {
    static detail::PlanCache<Choice> instance;
    return instance;
  }

  // The sm_80 kernel's split count: args.split_k, or for 0 the choice for its tile (1 for a bad value,
  // which make_plan refuses).
  static int sm80_split_k(Arguments const& args) {
    if (args.split_k != 0) return args.split_k < 1 ? 1 : args.split_k;
    return choose_split_k(args.problem, Sm80Config::kTileM, Sm80Config::kTileN, Sm80Config::kTileK,
                          detail::current_sm_count());
  }

  // Resolves packed defaults and checks one operand: rows x cols in `Layout`, stored with ld and
  // batch_stride (kPacked: the packed value; 0: one matrix shared by the whole batch).
  template <class Layout>
  static Status check_operand(char const* name, ElementAB const* data, index_t rows, index_t cols, index_t batch,
                              index_t ld_in, index_t stride_in, index_t* ld, index_t* stride) {
    return detail::resolve_operand<Layout>("gemm", name, data, rows, cols, batch, ld_in, stride_in, ld, stride);
  }

  static Status make_plan(Arguments const& args, Plan* plan) {
    GemmCoord const& p = args.problem;
    if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1) {
      return invalid_argument("gemm: problem (m, n, k, batch) = (", p.m, ", ", p.n, ", ", p.k, ", ", p.batch,
                              ") has an extent below 1");
    }
    TILEFUSE_RETURN_IF_ERROR(check_operand<LayoutA>("a", args.a, p.m, p.k, p.batch, args.lda, args.batch_stride_a,
                                                    &plan->lda, &plan->batch_stride_a));
    TILEFUSE_RETURN_IF_ERROR(check_operand<LayoutB>("b", args.b, p.k, p.n, p.batch, args.ldb, args.batch_stride_b,
                                                    &plan->ldb, &plan->batch_stride_b));
    // More splits than k-tiles is allowed (the extra splits add zeros): a caller need not know TileK.
    if (args.split_k < 0) {
      return invalid_argument("gemm: split_k = ", args.split_k, " must be at least 0 (0: choose, 1: no split)");
    }
    plan->split_k = sm80_split_k(args);
    index_t const tiles = ((p.m + Sm80Config::kTileM - 1) / Sm80Config::kTileM) * ((p.n + Sm80Config::kTileN - 1) / Sm80Config::kTileN);
    if (tiles > std::numeric_limits<int>::max() || p.batch * plan->split_k > 65535) {
      return not_supported("gemm: ", tiles, " tiles and batch * split_k = ", p.batch * plan->split_k,
                           " exceed the grid limits (2^31 - 1 tiles, 65535 batch x split); split the problem");
    }
    if (epilogue::uses_coordinates<Epilogue>() && std::max({p.m, p.n, p.batch}) >= (index_t{1} << 24)) {
      return not_supported("gemm: the epilogue reads element coordinates, which are exact only below 2^24, but the "
                           "problem is ", p.m, " x ", p.n, " x ", p.batch);
    }
    Status const bound = args.epilogue.bind({p.m, p.n, p.batch}, &plan->epilogue);
    if (!bound.ok()) return {bound.code(), "gemm epilogue: " + bound.message()};
    TILEFUSE_RETURN_IF_ERROR(check_shared_memory());

    auto aligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; };
    plan->why_narrow = sm80_why_narrow(aligned_16(args.a) && aligned_16(args.b), plan->lda, plan->ldb, p.batch,
                                       plan->batch_stride_a, plan->batch_stride_b, kChunkElements);
    plan->aligned = plan->why_narrow.empty();
    if constexpr (kTmaCandidate) plan->tma = plan->aligned && tma_kernel_runs_here();
    return {};
  }

  // Whether this binary holds the Hopper GEMM's sm_90a code for the current device (asked once per device).
  static bool hopper_code_here() {
    if constexpr (!kHopperCandidate) {
      return false;
    } else {
      return per_device_fact([](int) {
        using Large = GemmSm90<ElementAB, RowMajor, ColumnMajor, Epilogue, Sm90LargeConfig>;
        return kernel_binary_version(reinterpret_cast<void const*>(&sm90::sm90_gemm_kernel<typename Large::Kernel>)) == 90;
      });
    }
  }

  // Whether the current device is an sm_90 and this binary holds sm_90 code of the TMA kernel (whose
  // shared memory fits); asked once per device (make_plan runs on every run(), describe() and can_implement()).
  static bool tma_kernel_runs_here() {
    return per_device_fact([](int device) { return detail::sm80_tma_kernel_runs_on<TmaKernel>(device); });
  }

  static Status check_shared_memory() {
    return detail::check_sm80_shared_memory(Kernel<true>::kSmemBytes, Sm80Config::kTileM, Sm80Config::kTileN,
                                            Sm80Config::kTileK, Sm80Config::kStages, sizeof(ElementAB), kIsTf32);
  }

  template <bool kAligned>
  static Status launch(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    using K = Kernel<kAligned>;
    GemmCoord const& p = args.problem;
    typename K::Params params;
    params.problem = p;
    params.operands.a = args.a;
    params.operands.lda = plan.lda;
    params.operands.batch_stride_a = plan.batch_stride_a;
    params.operands.b = args.b;
    params.operands.ldb = plan.ldb;
    params.operands.batch_stride_b = plan.batch_stride_b;
    params.epilogue = plan.epilogue;
    return detail::launch_tiled<K, Epilogue>(params, plan.split_k, workspace, stream);
  }

  // The aligned path with both operands as tensor maps (k, rows, batch), boxes of one k-tile.
  static Status launch_tma(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    GemmCoord const& p = args.problem;
    typename TmaKernel::Params params;
    params.problem = p;
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("a", args.a, p.k, p.m, p.batch, plan.lda, plan.batch_stride_a,
                                                 Sm80Config::kTileK, Sm80Config::kTileM, &params.operands.tma_a));
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("b", args.b, p.k, p.n, p.batch, plan.ldb, plan.batch_stride_b,
                                                 Sm80Config::kTileK, Sm80Config::kTileN, &params.operands.tma_b));
    params.operands.batch_mask_a = tma_batch_mask(p.batch, plan.batch_stride_a);
    params.operands.batch_mask_b = tma_batch_mask(p.batch, plan.batch_stride_b);
    params.epilogue = plan.epilogue;
    return detail::launch_tiled<TmaKernel, Epilogue>(params, plan.split_k, workspace, stream);
  }
};

}  // namespace tilefuse::gemm
