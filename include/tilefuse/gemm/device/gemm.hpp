// Gemm: the device-level operation of the sm_80 path (mma.sync; runs on sm_80, sm_89 and sm_90).
//   D[l] = epilogue(A[l] * B[l]) for l < batch, A: m x k, B: k x n, in any of the four layouts.
// Inputs: bf16 or fp16 (mma.m16n8k16), or the tf32 path (mma.m16n8k8.tf32): float (rounded to tf32,
// to nearest with ties away from zero, in the fragment registers) or tfloat32_t (already tf32: no
// conversion, the faster of the two). The accumulation is fp32 in every case.
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
#include <type_traits>

#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm80_gemm.h>
#include <tilefuse/runtime/pointer_check.hpp>

namespace tilefuse::gemm {

template <class ElementAB, class LayoutA, class LayoutB, class Epilogue, class Config = Sm80DefaultConfig<ElementAB>>
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
    int split_k = 1;        // > 1: parallel split-K through an fp32 workspace of workspace_size() bytes
  };

  static Status can_implement(Arguments const& args) {
    Plan plan;
    return make_plan(args, &plan);
  }

  static std::size_t workspace_size(Arguments const& args) {
    return detail::split_k_workspace_bytes(args.problem, args.split_k);
  }

  static Status run(Arguments const& args, void* workspace, cudaStream_t stream) {
    Plan plan;
    TILEFUSE_RETURN_IF_ERROR(make_plan(args, &plan));
    if (args.split_k > 1 && workspace == nullptr) {
      return invalid_argument("gemm: split_k = ", args.split_k, " needs a workspace of workspace_size() = ",
                              workspace_size(args), " bytes, but workspace is null");
    }
    TILEFUSE_RETURN_IF_ERROR(detail::initialize_reductions<Epilogue>(plan.epilogue, args.problem, stream));
    return plan.aligned ? launch<true>(args, plan, workspace, stream) : launch<false>(args, plan, workspace, stream);
  }

  // Which kernel runs this problem, and why.
  static std::string describe(Arguments const& args) {
    Plan plan;
    Status const s = make_plan(args, &plan);
    if (!s.ok()) return "cannot run: " + s.message();
    return status_message("sm80 mma.sync GEMM (", kIsTf32 ? (std::is_same_v<ElementAB, float> ? "fp32 rounded to tf32" : "tf32")
                                                           : (std::is_same_v<ElementAB, bfloat16_t> ? "bf16" : "fp16"),
                          " inputs), tile ", Config::kTileM, "x", Config::kTileN, "x", Config::kTileK, ", ",
                          Config::kWarpsM * Config::kWarpsN, " warps, ", Config::kStages, " stages, ",
                          plan.aligned ? "16-byte cp.async path" : "element-wise path (", plan.why_narrow,
                          plan.aligned ? "" : ")", args.split_k > 1 ? status_message(", split-K ", args.split_k) : "");
  }

 private:
  template <bool kAligned>
  using Kernel = sm80::GemmKernel<ElementAB, LayoutA, LayoutB, Epilogue, Config, kAligned>;
  static constexpr bool kIsTf32 = sizeof(ElementAB) == 4;
  // Elements per 16-byte chunk: the alignment unit of the 16-byte path.
  static constexpr index_t kChunkElements = 16 / static_cast<index_t>(sizeof(ElementAB));

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
    return check_device_pointer("gemm", name, data);
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
    TILEFUSE_RETURN_IF_ERROR(check_shared_memory());

    // The 16-byte path reads whole aligned chunks along each operand's contiguous dimension.
    auto misaligned_16 = [](void const* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0; };
    if (misaligned_16(args.a) || misaligned_16(args.b)) {
      plan->why_narrow = "a or b is not 16-byte aligned";
    } else if (plan->lda % kChunkElements != 0 || plan->ldb % kChunkElements != 0) {
      plan->why_narrow = status_message("lda = ", plan->lda, " or ldb = ", plan->ldb, " is not a multiple of ",
                                        kChunkElements, " elements");
    } else if (p.batch > 1 && (plan->batch_stride_a % kChunkElements != 0 || plan->batch_stride_b % kChunkElements != 0)) {
      plan->why_narrow = status_message("a batch stride is not a multiple of ", kChunkElements, " elements");
    }
    plan->aligned = plan->why_narrow.empty();
    return {};
  }

  // The config's shared memory (pipeline stages, or the staged accumulator tile) must fit one block of
  // the current device (the opt-in limit: 163 KiB on sm_80, 227 KiB on sm_90). Without a usable device
  // the launch reports the error instead.
  static Status check_shared_memory() {
    constexpr int kBytes = Kernel<true>::kSmemBytes;
    int device = 0;
    int limit = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return {};
    }
    if (kBytes > limit) {
      return not_supported("gemm: the config's tile ", Config::kTileM, "x", Config::kTileN, "x", Config::kTileK,
                           " with ", Config::kStages, " stages of ", sizeof(ElementAB), "-byte elements needs ", kBytes,
                           " bytes of shared memory per block, but device ", device, " allows at most ", limit,
                           "; use fewer stages or a smaller tile",
                           kIsTf32 ? " (Sm80Tf32LargeConfig or Sm80Tf32SmallConfig for float / tfloat32_t inputs)" : "");
    }
    return {};
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
    return detail::launch_tiled<K, Epilogue>(params, args.split_k, workspace, stream);
  }
};

}  // namespace tilefuse::gemm
