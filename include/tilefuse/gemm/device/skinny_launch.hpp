// Launches the skinny GEMM (kernel/skinny_gemm.h: m <= kSkinnyMaxRows, B streamed once into mma.sync) for a
// problem the planner gave it (gemm_plan.hpp, family kSkinny): the tree's reductions started at their
// identity, then one block per kSkinnyColumns output columns and batch entry. Host code: include from .cu files.
#pragma once

#include <cuda_runtime_api.h>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/reductions.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>  // tma_rows_aligned: the same 16-byte rule
#include <tilefuse/gemm/kernel/skinny_gemm.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::gemm {

// a: m x k row-major (lda), b: k x n column-major (ldb), batch strides in elements (0: shared by the batch).
template <class Element, class Epilogue>
Status launch_skinny(GemmCoord const& p, Element const* a, index_t lda, index_t batch_stride_a, Element const* b,
                     index_t ldb, index_t batch_stride_b, typename Epilogue::Params const& epilogue,
                     cudaStream_t stream) {
  if (p.m < 1 || p.m > skinny::kSkinnyMaxRows || p.batch > skinny::kSkinnyMaxBatch) {
    return invalid_argument("gemm skinny: m = ", p.m, " and batch = ", p.batch, " must be 1 to ",
                            skinny::kSkinnyMaxRows, " and at most ", skinny::kSkinnyMaxBatch);
  }
  if (p.n < 1 || p.k < 1) return invalid_argument("gemm skinny: n = ", p.n, " and k = ", p.k, " must be at least 1");
  // The kernel's 16-byte loads: aligned bases, rows and batch entries whole 16-byte pieces apart.
  if (!tma_rows_aligned(a, lda, p.batch, batch_stride_a) || !tma_rows_aligned(b, ldb, p.batch, batch_stride_b)) {
    return invalid_argument("gemm skinny: a and b need 16-byte-aligned bases and leading dimensions and batch "
                            "strides of whole 16-byte pieces (lda = ", lda, ", ldb = ", ldb, ")");
  }
  skinny::Params<Element, Epilogue> params;
  params.problem = p;
  params.a = a;
  params.lda = lda;
  params.batch_stride_a = batch_stride_a;
  params.b = b;
  params.ldb = ldb;
  params.batch_stride_b = batch_stride_b;
  params.epilogue = epilogue;
  TILEFUSE_RETURN_IF_ERROR(detail::initialize_reductions<Epilogue>(params.epilogue, p, stream));
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>((p.n + skinny::kSkinnyColumns - 1) / skinny::kSkinnyColumns),
                     1, static_cast<unsigned>(p.batch));
  config.block = dim3(skinny::kSkinnyThreads);
  config.stream = stream;
  void* kernel_args[] = {&params};
  return host_adapter().launch(config, reinterpret_cast<void const*>(&skinny::skinny_gemm_kernel<Element, Epilogue>),
                               kernel_args);
}

}  // namespace tilefuse::gemm
