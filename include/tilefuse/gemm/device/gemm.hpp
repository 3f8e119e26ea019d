// Gemm: the device-level operation of the sm_80 path (mma.sync; runs on sm_80, sm_89 and sm_90).
//   D[l] = epilogue(A[l] * B[l]) for l < batch, A: m x k, B: k x n, in any of the four layouts.
// can_implement() checks every argument and explains a refusal; run() picks the 16-byte cp.async path
// when pointers and leading dimensions allow it and the element-wise path otherwise (any shape runs),
// optionally splits K over several blocks (parallel split-K through an fp32 workspace), and launches
// through the host adapter. Host code: include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/reduction_init.h>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/gemm/kernel/split_k_epilogue.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm {

template <class ElementAB, class LayoutA, class LayoutB, class Epilogue, class Config = Sm80LargeConfig>
class Gemm {
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
    int split_k = 1;        // > 1: parallel split-K through an fp32 workspace of workspace_size() bytes
  };

  static Status can_implement(Arguments const& args) {
    Plan plan;
    return make_plan(args, &plan);
  }

  static std::size_t workspace_size(Arguments const& args) {
    if (args.split_k <= 1) return 0;
    GemmCoord const& p = args.problem;
    return static_cast<std::size_t>(args.split_k) * p.batch * p.m * p.n * sizeof(float);
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if (args.split_k > 1 && workspace == nullptr) {
      return invalid_argument("gemm: split_k = ", args.split_k, " needs a workspace of workspace_size() = ",
                              workspace_size(args), " bytes, but workspace is null");
    }
    TILEFUSE_RETURN_IF_ERROR(initialize_reductions(plan.epilogue, args.problem, stream));
    return plan.aligned ? launch<true>(args, plan, workspace, stream) : launch<false>(args, plan, workspace, stream);
  }

  // Which kernel runs this problem, and why.
  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = make_plan(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    return status_message("sm80 mma.sync GEMM, tile ", Config::kTileM, "x", Config::kTileN, "x", Config::kTileK, ", ",
                          Config::kWarpsM * Config::kWarpsN, " warps, ", Config::kStages, " stages, ",
                          plan.aligned ? "16-byte cp.async path" : "element-wise path (", plan.why_narrow,
                          plan.aligned ? "" : ")", args.split_k > 1 ? status_message(", split-K ", args.split_k) : "");
  }

 private:
  template <bool kAligned>
  using Kernel = sm80::GemmKernel<ElementAB, LayoutA, LayoutB, Epilogue, Config, kAligned>;

  struct Plan {
    index_t lda = 0, ldb = 0, batch_stride_a = 0, batch_stride_b = 0;
    bool aligned = false;
    std::string why_narrow;
    typename Epilogue::Params epilogue;
  };

  // Resolves packed defaults and checks one operand: rows x cols in `Layout`, stored with ld and
  // batch_stride (kPacked: the packed value; 0: one matrix shared by the whole batch).
  template <class Layout>
  static Status check_operand(char const* name, ElementAB const* data, index_t rows, index_t cols, index_t batch,
                              index_t ld_in, index_t stride_in, index_t* ld, index_t* stride) {
    if (data == nullptr) return invalid_argument("gemm: ", name, " is a null pointer");
    index_t const min_ld = Layout::packed_ld(rows, cols);
    *ld = ld_in == epilogue::kPacked ? min_ld : ld_in;
    if (*ld < min_ld) {
      return invalid_argument("gemm: ld", name, " = ", *ld, " is smaller than ", min_ld, ", the smallest leading ",
                              "dimension of a ", Layout::kName, " ", rows, " x ", cols, " ", name, "; pass ld", name,
                              " >= ", min_ld);
    }
    index_t const matrix = (std::is_same_v<Layout, RowMajor> ? rows : cols) * *ld;
    *stride = stride_in == epilogue::kPacked ? matrix : stride_in;
    if (*stride < 0 || (batch > 1 && *stride != 0 && *stride < matrix)) {
      return invalid_argument("gemm: batch_stride_", name, " = ", *stride, " overlaps the ", batch,
                              " matrices of ", matrix, " elements; use 0 (shared) or at least ", matrix);
    }
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
      (void)cudaGetLastError();
      return invalid_argument("gemm: ", name, " = ", static_cast<void const*>(data),
                              " is not a pointer CUDA knows; pass device memory (cudaMalloc)");
    }
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
      return invalid_argument("gemm: ", name, " = ", static_cast<void const*>(data),
                              " is host memory; copy it to the device first");
    }
    return {};
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
    if (args.split_k < 1) {
      return invalid_argument("gemm: split_k = ", args.split_k, " must be at least 1 (1: no split)");
    }
    index_t const tiles = ((p.m + Config::kTileM - 1) / Config::kTileM) * ((p.n + Config::kTileN - 1) / Config::kTileN);
    if (tiles > std::numeric_limits<int>::max() || p.batch * args.split_k > 65535) {
      return not_supported("gemm: ", tiles, " tiles and batch * split_k = ", p.batch * args.split_k,
                           " exceed the grid limits (2^31 - 1 tiles, 65535 batch x split); split the problem");
    }
    if (epilogue::uses_coordinates<Epilogue>() && std::max({p.m, p.n, p.batch}) >= (index_t{1} << 24)) {
      return not_supported("gemm: the epilogue reads element coordinates, which are exact only below 2^24, but the "
                           "problem is ", p.m, " x ", p.n, " x ", p.batch);
    }
    Status const bound = args.epilogue.bind({p.m, p.n, p.batch}, &plan->epilogue);
    if (!bound.ok()) return {bound.code(), "gemm epilogue: " + bound.message()};

    // The 16-byte path reads whole aligned chunks along each operand's contiguous dimension.
    auto misaligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0; };
    if (misaligned_16(args.a) || misaligned_16(args.b)) {
      plan->why_narrow = "a or b is not 16-byte aligned";
    } else if (plan->lda % 8 != 0 || plan->ldb % 8 != 0) {
      plan->why_narrow = status_message("lda = ", plan->lda, " or ldb = ", plan->ldb, " is not a multiple of 8 elements");
    } else if (p.batch > 1 && (plan->batch_stride_a % 8 != 0 || plan->batch_stride_b % 8 != 0)) {
      plan->why_narrow = "a batch stride is not a multiple of 8 elements";
    }
    plan->aligned = plan->why_narrow.empty();
    return {};
  }

  // Reductions combine into their outputs: start them at the identity.
  static Status initialize_reductions(typename Epilogue::Params& params, GemmCoord const& p, cudaStream_t stream) {
    Status status;
    epilogue::for_each_node<Epilogue>(params, [&]<class Node>(typename Node::Params& node) {
      constexpr auto kind = Node::kKind;
      if constexpr (kind == epilogue::NodeKind::kRowReduce || kind == epilogue::NodeKind::kColReduce) {
        if (!status.ok()) return;
        index_t length = kind == epilogue::NodeKind::kRowReduce ? p.m : p.n;
        index_t batches = p.batch;
        index_t stride = node.batch_stride;
        float value = Node::Reduction::identity();
        float* data = node.data;
        void* kernel_args[] = {&data, &length, &batches, &stride, &value};
        LaunchConfig config;
        config.grid = dim3(static_cast<unsigned>(std::min<index_t>((length * batches + 255) / 256, 4096)));
        config.block = dim3(256);
        config.stream = stream;
        status = host_adapter().launch(config, reinterpret_cast<void const*>(&epilogue::fill_strided_kernel<float>),
                                       kernel_args);
      }
    });
    return status;
  }

  template <bool kAligned>
  static Status launch(Arguments const& args, Plan const& plan, void* workspace, cudaStream_t stream) {
    using K = Kernel<kAligned>;
    GemmCoord const& p = args.problem;
    typename K::Params params;
    params.problem = p;
    params.a = args.a;
    params.lda = plan.lda;
    params.batch_stride_a = plan.batch_stride_a;
    params.b = args.b;
    params.ldb = plan.ldb;
    params.batch_stride_b = plan.batch_stride_b;
    params.epilogue = plan.epilogue;
    params.split_k = args.split_k;
    index_t const k_tiles = (p.k + Config::kTileK - 1) / Config::kTileK;
    params.k_per_split = ((k_tiles + args.split_k - 1) / args.split_k) * Config::kTileK;
    params.partials = static_cast<float*>(workspace);
    params.tiles_m = static_cast<int>((p.m + Config::kTileM - 1) / Config::kTileM);
    params.tiles_n = static_cast<int>((p.n + Config::kTileN - 1) / Config::kTileN);

    LaunchConfig config;
    config.grid = dim3(static_cast<unsigned>(params.tiles_m * params.tiles_n), 1,
                       static_cast<unsigned>(p.batch * args.split_k));
    config.block = dim3(Config::kThreads);
    config.dynamic_smem_bytes = K::kSmemBytes;
    config.stream = stream;
    void* kernel_args[] = {&params};
    TILEFUSE_RETURN_IF_ERROR(
        host_adapter().launch(config, reinterpret_cast<void const*>(&sm80::sm80_gemm_kernel<K>), kernel_args));
    if (args.split_k == 1) return {};

    SplitKEpilogueParams<Epilogue> reduce;
    reduce.problem = p;
    reduce.split_k = args.split_k;
    reduce.partials = params.partials;
    reduce.epilogue = plan.epilogue;
    index_t const vectors = p.batch * p.m * ((p.n + 7) / 8);
    LaunchConfig reduce_config;
    reduce_config.grid = dim3(static_cast<unsigned>(std::min<index_t>((vectors + 255) / 256, 65535)));
    reduce_config.block = dim3(256);
    reduce_config.stream = stream;
    void* reduce_args[] = {&reduce};
    return host_adapter().launch(reduce_config, reinterpret_cast<void const*>(&split_k_epilogue_kernel<Epilogue>),
                                 reduce_args);
  }
};

}  // namespace tilefuse::gemm
