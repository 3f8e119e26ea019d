// GemmSm90: the device-level operation of the Hopper path (TMA + WGMMA, warp-specialized, persistent;
// kernel: gemm/kernel/sm90_gemm.h). Runs only on sm_90 devices, from code built for sm_90a.
//   D[l] = epilogue(A[l] * B[l]) for l < batch, A: m x k row-major, B: k x n column-major (both K-major,
//   the layouts wgmma reads straight from 128-byte-swizzled shared memory), bf16, fp16 or FP8 (e4m3 /
//   e5m2, with the Sm90Fp8* configs; gemm::ScaledGemm adds torch._scaled_mm's scales).
// The Arguments are gemm::Gemm's. can_implement() explains every refusal in a sentence; the other
// layouts and operands TMA cannot describe (16-byte alignment) are refused with a pointer to gemm::Gemm,
// the sm80 kernel, which runs them. Split-K: a Sm90SplitReduce<...> config with split_k >= 2 (batch 1, k
// a multiple of split_k whose parts are whole 16-byte pieces): each split is a batch entry
// of K-slices and the kernel sums them at L2 (sm90_split_reduction.h) in a workspace_size() workspace.
//
// Two ways to run:
//   run(args, workspace, stream)            plans (validates, binds the epilogue, encodes both tensor
//                                           maps through the host adapter) and launches;
//   initialize(args, &plan); run(plan, s)   plans once and launches many times: a Plan holds the encoded
//                                           tensor maps, so repeated runs do no driver work at all.
// Config: Sm90LargeConfig (128x256x64, the default), Sm90MediumConfig (128x128x64), Sm90NarrowConfig
// (128x64x64), or Sm90AutoConfig (gemm_sm90_auto.hpp), which the planner resolves per problem
// (gemm::Gemm's default path uses it).
// Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums only; every encode goes through the host adapter
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/reduction_init.h>
#include <tilefuse/gemm/device/gemm_plan.hpp>
#include <tilefuse/gemm/device/gemm_sm90_describe.hpp>
#include <tilefuse/gemm/device/gemm_sm90_arguments.hpp>
#include <tilefuse/gemm/device/operand_check.hpp>
#include <tilefuse/gemm/device/reductions.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/epilogue/tree_walk.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>
#include <tilefuse/runtime/cluster_occupancy.hpp>
#include <tilefuse/runtime/device_query.hpp>
#include <tilefuse/runtime/host_adapter.hpp>
#include <tilefuse/runtime/pointer_check.hpp>
#include <tilefuse/runtime/tensor_map.hpp>

namespace tilefuse::gemm {

template <class ElementAB, class LayoutA, class LayoutB, class Epilogue, class Config = Sm90LargeConfig,
          class ElementB = ElementAB>
class GemmSm90 {
  static_assert(std::is_same_v<ElementAB, bfloat16_t> || std::is_same_v<ElementAB, half_t> ||
                    std::is_same_v<ElementAB, float_e4m3_t> || std::is_same_v<ElementAB, float_e5m2_t>,
                "GemmSm90 takes bfloat16_t, half_t, float_e4m3_t or float_e5m2_t operands");
  static_assert(sizeof(ElementAB) * Config::kTileK == 128,
                "the config's TileK must be one 128-byte row of the element type (64 for 16-bit, 128 for FP8: "
                "Sm90Fp8*Config)");

 public:
  using EpilogueArgs = epilogue::EpilogueArguments<Epilogue>;
  static_assert(std::is_same_v<ElementB, ElementAB> || (sizeof(ElementAB) == 1 && sizeof(ElementB) == 1),
                "GemmSm90: A and B differ in type only for FP8 (e4m3 x e5m2 or e5m2 x e4m3)");
  using Kernel = sm90::GemmKernel<ElementAB, Epilogue, Config, sm90::TmaOperands<ElementAB, Config>, ElementB>;

  using Arguments = GemmSm90Arguments<ElementAB, Epilogue, ElementB>;

  // Everything a launch needs, built by initialize(): the kernel parameters (tensor maps encoded,
  // epilogue bound) and the grid. Valid while the argument set's pointers are.
  struct Plan {
    typename Kernel::Params params;
    unsigned grid = 0;
    int sm_count = 0;
    std::size_t split_bytes = 0;  // split-K: the workspace's sums and tickets, zeroed before each launch (one
                                  // launch at a time per workspace: two streams need two workspaces)
    // The kernel may start while the previous kernel in the stream finishes (LaunchConfig::after_previous_early;
    // the kernel waits for that kernel's writes first): set false to launch it strictly after.
    bool after_previous_early = true;
  };

  static Status can_implement(Arguments const& args) {
    Plan plan;
    return initialize(args, &plan);
  }

  // Split-K (Sm90SplitReduce configs): m x sums_stride(n) fp32 sums, then a ticket per 16-row slice of each tile.
  static std::size_t split_sums_bytes(GemmCoord const& p) {
    return static_cast<std::size_t>(p.m * Kernel::SplitReduction::sums_stride(p.n)) * sizeof(float);
  }
  static std::size_t workspace_size(Arguments const& args) {
    if constexpr (Kernel::kReduceSplits) {
      GemmCoord const& p = args.problem;
      index_t const tiles_m = (p.m + Config::kTileM - 1) / Config::kTileM;
      index_t const tiles_n = (p.n + Config::kTileN - 1) / Config::kTileN;
      return split_sums_bytes(p) + static_cast<std::size_t>(Kernel::split_ticket_count(tiles_m, tiles_n)) * sizeof(int);
    } else {
      (void)args;
      return 0;
    }
  }

  // Checks `args` and fills *plan; encodes the two tensor maps (the only driver work). Split-K configs take
  // their workspace here (run(plan) refuses a plan without one; can_implement() needs none).
  static Status initialize(Arguments const& args, Plan* plan, void* workspace = nullptr) {
    TILEFUSE_RETURN_IF_ERROR(check_layouts_and_shape(args));
    Resolved r;
    TILEFUSE_RETURN_IF_ERROR(check_operand<LayoutA>("a", args.a, args.problem.m, args.problem.k, args.problem.batch,
                                                    args.lda, args.batch_stride_a, &r.lda, &r.batch_stride_a));
    TILEFUSE_RETURN_IF_ERROR(check_operand<LayoutB>("b", args.b, args.problem.k, args.problem.n, args.problem.batch,
                                                    args.ldb, args.batch_stride_b, &r.ldb, &r.batch_stride_b));
    TILEFUSE_RETURN_IF_ERROR(check_device(plan));
    GemmCoord const& p = args.problem;
    // The kernel's problem: with split-K, split s is batch entry s of K-slices k_run long (a view of A and B).
    GemmCoord run = p;
    if constexpr (Kernel::kReduceSplits) {
      run = GemmCoord{p.m, p.n, p.k / args.split_k, args.split_k};
      r.batch_stride_a = r.batch_stride_b = run.k;
      TILEFUSE_RETURN_IF_ERROR(bind_split_workspace(args, workspace, plan));
    }
    index_t const tiles_m = (p.m + Config::kTileM - 1) / Config::kTileM;
    index_t const tiles_n = (p.n + Config::kTileN - 1) / Config::kTileN;
    // With a cluster of ClusterM CTAs along M, the scheduler's unit is ClusterM tile rows.
    constexpr index_t kClusterM = Config::kClusterM;
    index_t const tiles = (tiles_m + kClusterM - 1) / kClusterM * tiles_n * run.batch;
    // The kernel walks tile indices in int, up to two grid strides past the last one (ping-pong).
    if (tiles > std::numeric_limits<int>::max() - 4 * index_t{1024}) {
      return not_supported("gemm_sm90: ", tiles, Config::kClusterM > 1 ? " tile pairs" : " tiles",
                           " are too many for the kernel's int tile indices (at most 2^31 - 4097); split the problem");
    }
    if (epilogue::uses_coordinates<Epilogue>() && std::max({p.m, p.n, p.batch}) >= (index_t{1} << 24)) {
      return not_supported("gemm_sm90: the epilogue reads element coordinates, which are exact only below 2^24, "
                           "but the problem is ", p.m, " x ", p.n, " x ", p.batch);
    }
    typename Kernel::Params& params = plan->params;
    Status const bound = args.epilogue.bind({p.m, p.n, p.batch}, &params.epilogue);
    if (!bound.ok()) return {bound.code(), "gemm_sm90 epilogue: " + bound.message()};
    // A (m x k row-major) is (k, m, batch) innermost first; B (k x n column-major) is (k, n, batch).
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("a", args.a, run.k, p.m, run.batch, r.lda, r.batch_stride_a,
                                                 Config::kTileK, Config::kTileM, &params.tma_a));
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("b", args.b, run.k, p.n, run.batch, r.ldb, r.batch_stride_b,
                                                 Config::kTileK, Config::kTileN / Config::kClusterM, &params.tma_b));
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_aux<Kernel>("gemm_sm90", p.m, p.n, p.batch, &params));
    encode_sm90_store<Kernel>(p.m, p.n, p.batch, &params);
    params.batch_mask_a = tma_batch_mask(run.batch, r.batch_stride_a);
    params.batch_mask_b = tma_batch_mask(run.batch, r.batch_stride_b);
    TILEFUSE_RETURN_IF_ERROR(bind_block_scales(args, &params));
    if constexpr (Kernel::kRowGate) params.own_tile_begin = params.own_tile_end = 0;  // set_own_rows: per plan
    params.problem = run;
    params.tiles_m = static_cast<int>(tiles_m);
    params.tiles_n = static_cast<int>(tiles_n);
    params.tiles = static_cast<int>(tiles);
    // A persistent grid must be resident at once: with clusters, as many as the device can hold (not
    // every SM pairs up; docs/notes/gemm_sm90.md, 2-CTA clusters).
    index_t resident = plan->sm_count;
    if constexpr (kClusterM > 1) {
      int clusters = 0;
      TILEFUSE_RETURN_IF_ERROR(max_active_clusters(&clusters));
      resident = clusters;
    }
    plan->grid = static_cast<unsigned>(std::min<index_t>(tiles, resident) * kClusterM);
    return {};
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(initialize(args, &plan, workspace));
    return run(plan, stream);
  }

  // Sm90RowGate configs: A's rows arrive while the kernel runs, in pieces of rows_per_flag rows; flags[i] (device
  // memory, ceil(m / rows_per_flag) of them) turns nonzero once piece i is in place, and the blocks start at
  // row first_row (a multiple of the tile's rows: the rows in place at launch), wrapping around. Nothing a
  // flag waits for may need an SM while the kernel holds them all: write the flags by stream writes
  // (HostAdapter::write_value32) after copies, not by kernels.
  static Status set_row_gate(Plan* plan, unsigned const* flags, int rows_per_flag, index_t first_row)
    requires Kernel::kRowGate
  {
    index_t const m = plan->params.problem.m;
    if (flags == nullptr || reinterpret_cast<std::uintptr_t>(flags) % alignof(unsigned) != 0) {
      return invalid_argument("gemm_sm90: the row gate's flags must be a non-null, 4-byte aligned device pointer");
    }
    if (rows_per_flag <= 0) return invalid_argument("gemm_sm90: rows_per_flag must be positive, got ", rows_per_flag);
    if (first_row < 0 || first_row >= std::max<index_t>(m, 1) || first_row % Config::kTileM != 0) {
      return invalid_argument("gemm_sm90: the row gate's first row (", first_row, ") must lie in [0, m = ", m,
                              ") and be a multiple of the tile's ", Config::kTileM, " rows");
    }
    plan->params.row_flags = flags;
    plan->params.rows_per_flag = rows_per_flag;
    plan->params.first_tile_row = static_cast<int>(first_row / Config::kTileM);
    return {};
  }

  // Sm90RowGate configs, optional: rows [first_row, first_row + rows) of A (this rank's own block of an
  // all-gather) are read from `own` (rows x k, row-major, leading dimension ld) where they lie, never waited
  // for, so that nothing has to copy them into A before the launch. The range must cover whole tiles: first_row a
  // multiple of the tile's rows, and its end too unless it is m. A flag's piece that reaches into the range from
  // outside it is still waited for by the tiles outside (deliver and flag it whole).
  static Status set_own_rows(Plan* plan, ElementAB const* own, index_t first_row, index_t rows, index_t ld)
    requires Kernel::kRowGate
  {
    auto& p = plan->params;
    index_t const m = p.problem.m;
    if (p.problem.batch != 1) {
      return not_supported("gemm_sm90: own rows with a batch of ", p.problem.batch, " (the gate takes one matrix)");
    }
    if (rows <= 0 || first_row < 0 || first_row + rows > m) {
      return invalid_argument("gemm_sm90: the own rows [", first_row, ", ", first_row + rows, ") must lie in [0, m = ",
                              m, ") and be at least one row");
    }
    if (first_row % Config::kTileM != 0 || ((first_row + rows) % Config::kTileM != 0 && first_row + rows != m)) {
      return invalid_argument("gemm_sm90: the own rows [", first_row, ", ", first_row + rows, ") must cover whole ",
                              Config::kTileM, "-row tiles (their end a multiple of ", Config::kTileM, " or m = ", m,
                              ")");
    }
    if (own == nullptr || reinterpret_cast<std::uintptr_t>(own) % 16 != 0 ||
        (ld * static_cast<index_t>(sizeof(ElementAB))) % 16 != 0) {
      return invalid_argument("gemm_sm90: the own rows need a non-null, 16-byte aligned pointer and a leading "
                              "dimension (", ld, ") whose rows start on 16-byte boundaries");
    }
    if (ld < p.problem.k) {
      return invalid_argument("gemm_sm90: the own rows' leading dimension (", ld, ") is below k = ", p.problem.k);
    }
    TILEFUSE_RETURN_IF_ERROR(encode_sm90_operand("own rows", own, p.problem.k, rows, 1, ld, 0, Config::kTileK,
                                                 Config::kTileM, &p.tma_own));
    p.own_tile_begin = static_cast<int>(first_row / Config::kTileM);
    p.own_tile_end = static_cast<int>((first_row + rows + Config::kTileM - 1) / Config::kTileM);
    return {};
  }

  // Launches a plan made by initialize(): starts the tree's reductions at their identity (and zeroes the
  // split-K sums), then the kernel. No driver calls.
  static Status run(Plan const& plan, cudaStream_t stream) {
    typename Kernel::Params params = plan.params;
    if constexpr (Kernel::kRowGate) {
      if (params.row_flags == nullptr) {
        return invalid_argument("gemm_sm90: a row-gated config needs its flags: call set_row_gate(&plan, ...) first");
      }
      if (params.rows_per_flag <= 0 || params.first_tile_row < 0 || params.first_tile_row >= params.tiles_m) {
        return invalid_argument("gemm_sm90: the plan's row gate (first tile row ", params.first_tile_row, " of ",
                                params.tiles_m, ", ", params.rows_per_flag, " rows per flag) does not fit its "
                                "problem: call set_row_gate again after initialize()");
      }
      if (params.own_tile_begin > params.own_tile_end || params.own_tile_end > params.tiles_m) {
        return invalid_argument("gemm_sm90: the plan's own rows (tile rows ", params.own_tile_begin, " to ",
                                params.own_tile_end, ") do not fit its ", params.tiles_m, " tile rows: call "
                                "set_own_rows again after initialize()");
      }
    }
    GemmCoord output = params.problem;
    if constexpr (Kernel::kReduceSplits) {
      output = GemmCoord{params.problem.m, params.problem.n, params.problem.k * params.problem.batch, 1};
      if (params.split_sums == nullptr) {
        return invalid_argument("gemm_sm90: split-K needs a workspace of workspace_size(args) bytes; pass it to "
                                "initialize(args, &plan, workspace) or run(args, workspace, stream)");
      }
      if (cudaError_t const e = cudaMemsetAsync(params.split_sums, 0, plan.split_bytes, stream); e != cudaSuccess) {
        return {StatusCode::kCudaError, status_message("gemm_sm90: zeroing the split-K sums (", plan.split_bytes,
                                                       " bytes) failed: ", cudaGetErrorString(e))};
      }
    }
    TILEFUSE_RETURN_IF_ERROR(detail::initialize_reductions<Epilogue>(params.epilogue, output, stream));
    LaunchConfig config;
    config.grid = dim3(plan.grid);
    config.cluster = dim3(Config::kClusterM, 1, 1);
    config.block = dim3(Kernel::kThreads);
    config.dynamic_smem_bytes = Kernel::kSmemBytes;
    config.stream = stream;
    config.after_previous_early = plan.after_previous_early;
    void* kernel_args[] = {&params};
    return host_adapter().launch(config, kernel_address(), kernel_args);
  }

  // Which kernel runs this problem, and why (or why it cannot).
  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = initialize(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    return describe(plan);
  }

  // The same for a plan made by initialize() (no driver work).
  static std::string describe(Plan const& plan) {
    return describe_sm90_gemm(sm90_gemm_kernel_facts<Config, Kernel>(), plan.params.tiles, plan.grid,
                              Kernel::d_by_tma(plan.params), plan.params.problem.batch);
  }

 private:
  struct Resolved {
    index_t lda = 0, ldb = 0, batch_stride_a = 0, batch_stride_b = 0;
  };

  static void const* kernel_address() { return reinterpret_cast<void const*>(&sm90::sm90_gemm_kernel<Kernel>); }

  // How many clusters of this kernel the current device holds at once (cached per device).
  static Status max_active_clusters(int* clusters) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return not_supported("gemm_sm90: no CUDA device is available");
    }
    static int cached[64] = {};
    bool const cacheable = device >= 0 && device < 64;
    if (cacheable && cached[device] > 0) {
      *clusters = cached[device];
      return {};
    }
    TILEFUSE_RETURN_IF_ERROR(max_resident_clusters("gemm_sm90", kernel_address(), Config::kClusterM, Kernel::kThreads,
                                                   Kernel::kSmemBytes, clusters));
    if (cacheable) cached[device] = *clusters;
    return {};
  }

  // Block-wise scales go with block-scaled configs, and only with them.
  static Status bind_block_scales(Arguments const& args, typename Kernel::Params* params) {
    bool const given = args.block_scale_a != nullptr || args.block_scale_b != nullptr;
    if constexpr (Config::kBlockScaled) {
      if (args.block_scale_a == nullptr || args.block_scale_b == nullptr) {
        return invalid_argument("gemm_sm90: the config is block-scaled but block_scale_a or block_scale_b is null; "
                                "pass both (device memory), or use a config without Sm90BlockScaled");
      }
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer("gemm_sm90", "block_scale_a", args.block_scale_a));
      TILEFUSE_RETURN_IF_ERROR(check_device_pointer("gemm_sm90", "block_scale_b", args.block_scale_b));
      GemmCoord const& p = args.problem;
      if (p.batch > 1) {
        return not_supported("gemm_sm90: block-wise scales with batch = ", p.batch,
                             " (the scales have no batch stride); run one GEMM per batch entry");
      }
      // A zero stride along an extent of more than one block would read one scale for all of them.
      index_t const k_blocks = (p.k + 127) / 128, n_blocks = (p.n + 127) / 128;
      auto const stride_ok = [](index_t stride, index_t extent) { return extent <= 1 || stride > 0; };
      if (!stride_ok(args.block_scale_a_strides[0], p.m) || !stride_ok(args.block_scale_a_strides[1], k_blocks) ||
          !stride_ok(args.block_scale_b_strides[0], k_blocks) || !stride_ok(args.block_scale_b_strides[1], n_blocks)) {
        return invalid_argument("gemm_sm90: block-scale strides (a: ", args.block_scale_a_strides[0], ", ",
                                args.block_scale_a_strides[1], "; b: ", args.block_scale_b_strides[0], ", ",
                                args.block_scale_b_strides[1], ") must be positive along every extent above one ",
                                "(m = ", p.m, ", k blocks = ", k_blocks, ", n blocks = ", n_blocks,
                                "); torch's layouts are a: (1, m), b: (1, k blocks)");
      }
      params->block_scales = {args.block_scale_a, args.block_scale_b, args.block_scale_a_strides[0],
                              args.block_scale_a_strides[1], args.block_scale_b_strides[0],
                              args.block_scale_b_strides[1]};
      params->block_scales.a_vector = args.block_scale_a_strides[0] == 1 && args.block_scale_a_strides[1] % 4 == 0 &&
                                      reinterpret_cast<std::uintptr_t>(args.block_scale_a) % 16 == 0;
    } else if (given) {
      return invalid_argument("gemm_sm90: block_scale_a / block_scale_b are set but the config applies no block-wise "
                              "scales; use a Sm90BlockScaled config (gemm::ScaledGemm with ScalingMode::kBlockWise)");
    }
    return {};
  }

  static Status check_layouts_and_shape(Arguments const& args) {
    if constexpr (!std::is_same_v<LayoutA, RowMajor> || !std::is_same_v<LayoutB, ColumnMajor>) {
      return not_supported("gemm_sm90: A is ", LayoutA::kName, " and B is ", LayoutB::kName,
                           ", but the Hopper kernel reads K-major operands only (A row-major, B column-major); "
                           "use gemm::Gemm (the sm80 mma.sync kernel) for these layouts");
    }
    GemmCoord const& p = args.problem;
    if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1) {
      return invalid_argument("gemm_sm90: problem (m, n, k, batch) = (", p.m, ", ", p.n, ", ", p.k, ", ", p.batch,
                              ") has an extent below 1");
    }
    if constexpr (Kernel::kReduceSplits) {
      constexpr index_t kAlign = 16 / static_cast<index_t>(sizeof(ElementAB));
      if (args.split_k < 2) {
        return invalid_argument("gemm_sm90: split_k = ", args.split_k, " with a Sm90SplitReduce config; pass 2 or "
                                "more, or use the config without Sm90SplitReduce");
      }
      if (p.batch != 1) return not_supported("gemm_sm90: split-K with batch = ", p.batch, " (the splits are the batch)");
      if (p.k % args.split_k != 0 || (p.k / args.split_k) % kAlign != 0) {
        return not_supported("gemm_sm90: k = ", p.k, " does not split into ", args.split_k, " parts of a multiple of ",
                             kAlign, " elements (each part starts on a 16-byte boundary for TMA); pick a split_k "
                             "that does");
      }
    } else if (args.split_k != 1) {
      return not_supported("gemm_sm90: split_k = ", args.split_k, " but this config does not split K (pass 1, or use a ",
                           "Sm90SplitReduce config); gemm::Gemm (the sm80 kernel) runs parallel split-K");
    }
    return {};
  }

  // Split-K: the workspace's sums (16-byte aligned for the kernel's vector reductions) and tickets.
  static Status bind_split_workspace(Arguments const& args, void* workspace, Plan* plan) {
    plan->split_bytes = workspace_size(args);
    plan->params.split_sums = nullptr;
    plan->params.split_tickets = nullptr;
    if (workspace == nullptr) return {};
    if (reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0) {
      return invalid_argument("gemm_sm90: the split-K workspace ", workspace, " is not 16-byte aligned");
    }
    plan->params.split_sums = static_cast<float*>(workspace);
    plan->params.split_tickets = reinterpret_cast<int*>(static_cast<char*>(workspace) + split_sums_bytes(args.problem));
    return {};
  }

  // Resolves packed defaults and checks one operand (rows x cols in Layout, ld, batch stride), then
  // what TMA needs: a 16-byte-aligned base, leading dimension and batch stride.
  template <class Layout, class Element>
  static Status check_operand(char const* name, Element const* data, index_t rows, index_t cols, index_t batch,
                              index_t ld_in, index_t stride_in, index_t* ld, index_t* stride) {
    TILEFUSE_RETURN_IF_ERROR(
        detail::resolve_operand<Layout>("gemm_sm90", name, data, rows, cols, batch, ld_in, stride_in, ld, stride));
    constexpr index_t kAlignElements = 16 / static_cast<index_t>(sizeof(Element));
    if (reinterpret_cast<std::uintptr_t>(data) % 16 != 0) {
      return not_supported("gemm_sm90: ", name, " = ", static_cast<void const*>(data),
                           " is not 16-byte aligned, which TMA needs; use gemm::Gemm (the sm80 kernel)");
    }
    if (*ld % kAlignElements != 0) {
      return not_supported("gemm_sm90: ld", name, " = ", *ld, " is not a multiple of ", kAlignElements,
                           " elements (16 bytes), which TMA needs; pad it or use gemm::Gemm (the sm80 kernel)");
    }
    if (batch > 1 && *stride % kAlignElements != 0) {
      return not_supported("gemm_sm90: batch_stride_", name, " = ", *stride, " is not a multiple of ", kAlignElements,
                           " elements (16 bytes), which TMA needs; pad it or use gemm::Gemm (the sm80 kernel)");
    }
    return {};
  }

  // The current device must be an sm_90, this binary must hold the kernel's sm_90a code, and the
  // kernel's shared memory must fit. Fills plan->sm_count. Attribute queries only (cheap; no
  // cudaGetDeviceProperties).
  static Status check_device(Plan* plan) {
    int device = 0, major = 0, minor = 0, sms = 0, smem_optin = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return not_supported("gemm_sm90: no CUDA device is available");
    }
    if (major != 9 || minor != 0) {
      return not_supported("gemm_sm90: device ", device, " is sm_", major, minor,
                           ", but the Hopper kernel runs on sm_90 only; use gemm::Gemm (the sm80 kernel)");
    }
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, kernel_address()) != cudaSuccess) {
      (void)cudaGetLastError();
      return not_supported("gemm_sm90: the kernel has no code for device ", device,
                           "; build with 90a in TILEFUSE_CUDA_ARCHS");
    }
    if (attributes.binaryVersion != 90) {
      return not_supported("gemm_sm90: the kernel's code is for sm_", attributes.binaryVersion,
                           ", not sm_90a; build with 90a in TILEFUSE_CUDA_ARCHS");
    }
    if (Kernel::kSmemBytes > smem_optin) {
      return not_supported("gemm_sm90: the tile config needs ", Kernel::kSmemBytes, " bytes of shared memory, but ",
                           "device ", device, " allows ", smem_optin, " per block; use fewer stages");
    }
    plan->sm_count = sms;
    return {};
  }

};

}  // namespace tilefuse::gemm
