// conv::Conv2d's launch of the Hopper wgrad (sm90::WgradKernel) for a plan: the split-K forms included.
// Host code; include from .cu files compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/conv/device/conv2d_sm90_launch.hpp>
#include <tilefuse/conv/kernel/sm90_implicit_gemm.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/gemm/device/sm80_launch.hpp>
#include <tilefuse/gemm/device/sm90_operand_map.hpp>
#include <tilefuse/gemm/kernel/sm90_gemm.h>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse::conv {

// The split-K partials' tree: fp32 accumulators stored as they are.
using ConvWgradPartialTree = epilogue::Store<"D", float, epilogue::Acc>;

// The Hopper wgrad (Kernels: conv2d_sm90_kernels.hpp's ConvSm90Kernels of the wgrad; Cfg: the planned tile's
// config; tree: the bound epilogue): with plan.split_k = s > 1, either the kernel adds the s splits' fp32 tiles into
// the workspace's sums and the last split of each tile applies the tree (plan.split_in_kernel:
// the workspace zeroed first), or it stores s fp32 partials ([split][K][R*S*C], each over its own
// range of pixels) and split_k_epilogue_kernel sums them and applies the tree; with s = 1 the kernel
// applies the tree itself.
template <class Element, class Epilogue, class Kernels, class Cfg>
Status launch_conv_sm90_wgrad(char const* op, Conv2dProblem const& problem, ConvElement element, ConvPlan const& plan,
                              typename Epilogue::Params const& tree, Element const* dy, Element const* x,
                              void* workspace, cudaStream_t stream) {
  GemmCoord const g = conv_output_matrix(problem);
  ConvSm90Splits const split = conv_sm90_splits(g, plan);
  index_t const k_per_split = split.k_per_split;
  index_t const splits = split.splits;
  // K's batch is the split; D's (out_batch) is the number of outputs the epilogue writes.
  auto const launch = [&]<class K>(auto const& epilogue, index_t batch, index_t out_batch, auto const& finish) -> Status {
    typename K::Params params;
    TILEFUSE_RETURN_IF_ERROR(
        encode_conv_sm90_operands(problem, element, plan, dy, x, &params.tma_a, &params.tma_b, &params.x_tiled));
    params.geometry = ConvGeometry::of(problem);
    params.k_per_split = static_cast<int>(k_per_split);
    params.problem = GemmCoord{g.m, g.n, k_per_split, batch};
    params.epilogue = epilogue;
    TILEFUSE_RETURN_IF_ERROR(gemm::encode_sm90_aux<K>(op, g.m, g.n, out_batch, &params));
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
    config.after_previous_early = plan.after_previous_early;
    void* kernel_args[] = {&params};
    return host_adapter().launch(config, reinterpret_cast<void const*>(&gemm::sm90::sm90_gemm_kernel<K>), kernel_args);
  };
  auto const nothing = [](auto&) {};
  if (splits == 1) return launch.template operator()<typename Kernels::template Sm90Kernel<Cfg, true>>(tree, 1, 1, nothing);
  if (plan.split_in_kernel) {
    using Reduced = sm90::WgradKernel<Element, Epilogue, gemm::Sm90SplitReduce<Cfg>>;
    static_assert(Reduced::split_ticket_count(1, 1) <= 8, "split_sums_bytes counts 8 tickets per 128 rows");
    std::size_t const bytes = conv_sm90_split_sums_bytes(g);
    if (cudaError_t const e = cudaMemsetAsync(workspace, 0, bytes, stream); e != cudaSuccess) {
      return {StatusCode::kCudaError, status_message(op, ": zeroing the split-K sums (", bytes,
                                                     " bytes of the workspace) failed: ", cudaGetErrorString(e))};
    }
    auto* const sums = static_cast<float*>(workspace);
    auto* const tickets = reinterpret_cast<int*>(static_cast<char*>(workspace) + conv_sm90_split_tickets_offset(g));
    return launch.template operator()<Reduced>(tree, splits, 1, [&](auto& params) {
      params.split_sums = sums;
      params.split_tickets = tickets;
    });
  }
  using Partial = sm90::WgradKernel<Element, ConvWgradPartialTree, Cfg>;
  epilogue::EpilogueArguments<ConvWgradPartialTree> partial_args;
  partial_args.set("D", static_cast<float*>(workspace));
  typename ConvWgradPartialTree::Params partial;
  Status const bound = partial_args.bind({g.m, g.n, splits}, &partial);
  if (!bound.ok()) return {bound.code(), status_message(op, " split-K partials: ", bound.message())};
  TILEFUSE_RETURN_IF_ERROR(launch.template operator()<Partial>(partial, splits, splits, nothing));
  return gemm::detail::launch_split_k_epilogue<Epilogue>(GemmCoord{g.m, g.n, g.k, 1}, static_cast<int>(splits),
                                                        static_cast<float const*>(workspace), tree, stream);
}

}  // namespace tilefuse::conv
