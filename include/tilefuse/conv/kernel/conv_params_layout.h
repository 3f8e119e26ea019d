// Where every field of a convolution kernel's Params lives, for a host that packs the parameters as
// bytes (the Python JIT; see gemm/kernel/sm90_params_layout.h for the GEMM's). One layout kernel serves
// both kernel families: the sm80 implicit GEMM (gemm::sm80::TiledKernel over conv::sm80::
// ImplicitGemmOperands) and the Hopper fprop kernels (conv::sm90::FpropKernel / FpropIm2colKernel); a
// field the family does not have is -1. It only needs Kernel::Params, so it includes no kernel.
//
// out[0..23]  the kernel's Params: kConvLayoutVersion, the family (80 or 90), sizeof(Params), kThreads,
//             kSmemBytes, the offset of geometry (a ConvGeometry: 15 ints in declaration order) and
//             sizeof(ConvGeometry), problem.m, .n, .k, .batch (index_t), split_k (int), k_per_split
//             (index_t), partials (float*), tiles_m, tiles_n, tiles (int), the operand pointers a, b
//             (sm80) and x (Hopper gather), the tensor maps tma_a (Hopper im2col) and tma_b (Hopper),
//             the offset of epilogue, and the number of named epilogue nodes;
// out[24..31] the split-K pass's gemm::SplitKEpilogueParams<ReduceEpilogue>: its sizeof, problem.m, .n,
//             .k, .batch, split_k, partials and the offset of its epilogue (-1 without a pass);
// out[32..47] the Hopper kernel's further fields (int unless said): a_tiled, x_tiled, the wgrad's
//             k_per_split, tma_aux, batch_mask_aux, column_by_tma, tma_d, d_by_tma, split_sums and
//             split_tickets (pointers), the flags kTmaAux | kTmaColumn << 1 | kTmaStore << 2, the ring's
//             stages (both families), the offsets of the staged residual's and column vector's data
//             pointers (which named nodes they are), 1 for the ping-pong schedule (0 cooperative, -1
//             sm80), and the number of the pass's named nodes;
// out[48]     the offset of the output row map (gemm::sm90::OutputRowMap: 14 index_t in declaration order) in
//             kernels whose packed epilogue stores through it, else -1; out[49] the offset of beside_previous
//             (int; Hopper kernels); out[50..51] unused (-1);
// out[52 + 9 i ...]       named node i of the kernel's epilogue tree in Params (epilogue/params_layout.h);
// out[52 + 9 (64 + i) ...] named node i of ReduceEpilogue in the pass's params.
#pragma once

#include <cuda/std/type_traits>

#include <tilefuse/conv/implicit_gemm.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/params_layout.h>
#include <tilefuse/gemm/kernel/split_k_pass_layout.h>

namespace tilefuse::conv {

inline constexpr long long kConvLayoutVersion = 6;
inline constexpr int kConvLayoutHeader = 52;
inline constexpr int kConvLayoutMaxNodes = 64;

namespace layout_detail {

using epilogue::layout_detail::offset;

// The operand fields live in the kernel's own Params (sm90: it derives from the operand source's
// Params) or in its `operands` member (sm80).
template <class P>
TILEFUSE_DEVICE void write_operands(P const& p, void const* base, long long* out) {
  out[5] = offset(&p.geometry, base);
  if constexpr (requires { p.a; }) out[17] = offset(&p.a, base);
  if constexpr (requires { p.b; }) out[18] = offset(&p.b, base);
  if constexpr (requires { p.x; }) out[19] = offset(&p.x, base);
  if constexpr (requires { p.tma_a; }) out[20] = offset(&p.tma_a, base);
  if constexpr (requires { p.tma_b; }) out[21] = offset(&p.tma_b, base);
}

}  // namespace layout_detail

// ReduceEpilogue: the tree of the split-K pass (split_k_epilogue_kernel) beside the kernel, void for none.
template <class Kernel, class Epilogue, int kFamily, class ReduceEpilogue = void>
__global__ void conv_params_layout_kernel(long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using layout_detail::offset;
  typename Kernel::Params const p{};
  void const* base = &p;
  for (int i = 0; i < kConvLayoutHeader; ++i) out[i] = -1;
  out[0] = kConvLayoutVersion;
  out[1] = kFamily;
  out[2] = static_cast<long long>(sizeof(p));
  out[3] = Kernel::kThreads;
  out[4] = Kernel::kSmemBytes;
  out[6] = static_cast<long long>(sizeof(ConvGeometry));
  out[7] = offset(&p.problem.m, base);
  out[8] = offset(&p.problem.n, base);
  out[9] = offset(&p.problem.k, base);
  out[10] = offset(&p.problem.batch, base);
  if constexpr (requires { p.operands; }) {
    layout_detail::write_operands(p.operands, base, out);
  } else {
    layout_detail::write_operands(p, base, out);
  }
  if constexpr (requires { p.split_k; }) {
    out[11] = offset(&p.split_k, base);
    out[12] = offset(&p.k_per_split, base);
    out[13] = offset(&p.partials, base);
  }
  out[14] = offset(&p.tiles_m, base);
  out[15] = offset(&p.tiles_n, base);
  if constexpr (requires { p.tiles; }) out[16] = offset(&p.tiles, base);
  out[22] = offset(&p.epilogue, base);
  out[43] = Kernel::kStages;
  if constexpr (requires { Kernel::kPingPong; }) out[46] = Kernel::kPingPong ? 1 : 0;
  if constexpr (!cuda::std::is_void_v<ReduceEpilogue>) {
    out[47] = gemm::write_split_k_pass_layout<ReduceEpilogue>(
        out + 24, out + kConvLayoutHeader + epilogue::kNodeLayoutWords * kConvLayoutMaxNodes);
  }
  if constexpr (requires { p.a_tiled; }) out[32] = offset(&p.a_tiled, base);
  if constexpr (requires { p.x_tiled; }) out[33] = offset(&p.x_tiled, base);
  if constexpr (kFamily == 90 && requires { p.k_per_split; }) out[34] = offset(&p.k_per_split, base);
  if constexpr (requires { Kernel::kTmaAux; }) {
    if constexpr (Kernel::kTmaAux) {
      out[35] = offset(&p.tma_aux, base);
      out[36] = offset(&p.batch_mask_aux, base);
      out[37] = offset(&p.column_by_tma, base);
      out[44] = offset(&Kernel::staged_aux(p.epilogue)->data, base);
      if constexpr (Kernel::kTmaColumn) out[45] = offset(&Kernel::staged_column(p.epilogue)->data, base);
    }
    if constexpr (Kernel::kTmaStore) {
      out[38] = offset(&p.tma_d, base);
      out[39] = offset(&p.d_by_tma, base);
    }
    if constexpr (Kernel::kReduceSplits) {
      out[40] = offset(&p.split_sums, base);
      out[41] = offset(&p.split_tickets, base);
    }
    out[42] = (Kernel::kTmaAux ? 1 : 0) | (Kernel::kTmaColumn ? 2 : 0) | (Kernel::kTmaStore ? 4 : 0);
    if constexpr (Kernel::kRowMap && !Kernel::kReduceSplits) out[48] = offset(&p.row_map, base);
    out[49] = offset(&p.beside_previous, base);
  }
  out[23] = epilogue::write_node_layouts<Epilogue>(p.epilogue, base, out + kConvLayoutHeader);
}

}  // namespace tilefuse::conv
