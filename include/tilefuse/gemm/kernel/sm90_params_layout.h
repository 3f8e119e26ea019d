// Where every field of an sm90 GemmKernel's Params lives, for a host that packs the parameters as bytes
// instead of filling the C++ struct: the Python JIT, whose kernels' Params types exist only inside
// NVRTC's compile. A one-thread kernel, compiled into the same CUBIN as the GEMM kernel, writes the byte
// offsets (from the start of Params) of each field into `out`; the host reads them once per kernel.
//
// out[0..15]   the header: kLayoutVersion, sizeof(Params), offsets of tma_a, tma_b, batch_mask_a,
//              batch_mask_b, problem.m, problem.n, problem.k, problem.batch, tiles_m, tiles_n, tiles,
//              then kThreads, kSmemBytes, and the number of named epilogue nodes;
// out[16..23]  FP8 block-wise scales (block_scales, read by block-scaled configs): offsets of a, b,
//              a_row, a_kblock, b_kblock, b_nblock, a_vector, then 1 if the config is block-scaled;
// out[24..25]  split-K summed in the kernel (Sm90SplitReduce configs): offsets of split_sums and
//              split_tickets, -1 for configs that do not split;
// out[26..27]  D by TMA stores (Kernel::kTmaStore): offsets of tma_d and d_by_tma, -1 for kernels whose
//              lanes always store D;
// out[28..33]  the residual by TMA (Kernel::kTmaAux): the flags kTmaAux | kTmaColumn << 1, then the offsets
//              of tma_aux, batch_mask_aux and column_by_tma, of the staged residual's data pointer and of the
//              staged column vector's (-1 where the kernel has none);
// out[34..37]  what describe() says of the kernel: kStages, Config::kConsumerWarpgroups, 1 for the ping-pong
//              schedule, Config::kClusterM;
// out[38..40]  the row gate (Sm90RowGate configs): offsets of row_flags, rows_per_flag and first_tile_row, -1 for
//              kernels without it;
// out[41..43]  the row gate's own rows: offsets of tma_own, own_tile_begin and own_tile_end, -1 without the gate;
// out[44 + 9 i ...]  named node i of the epilogue tree (epilogue/params_layout.h).
// Index types: the offsets of problem fields and of the block-scale strides hold index_t (int64),
// tiles_*, batch_mask_* and a_vector int, a and b pointers.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/params_layout.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

namespace tilefuse::gemm::sm90 {

inline constexpr long long kLayoutVersion = 8;
inline constexpr int kLayoutHeader = 44;
inline constexpr int kLayoutPerNode = epilogue::kNodeLayoutWords;

template <class Kernel, class Epilogue>
__global__ void sm90_params_layout_kernel(long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  typename Kernel::Params const p{};
  void const* base = &p;
  using epilogue::layout_detail::offset;
  out[0] = kLayoutVersion;
  out[1] = static_cast<long long>(sizeof(p));
  out[2] = offset(&p.tma_a, base);
  out[3] = offset(&p.tma_b, base);
  out[4] = offset(&p.batch_mask_a, base);
  out[5] = offset(&p.batch_mask_b, base);
  out[6] = offset(&p.problem.m, base);
  out[7] = offset(&p.problem.n, base);
  out[8] = offset(&p.problem.k, base);
  out[9] = offset(&p.problem.batch, base);
  out[10] = offset(&p.tiles_m, base);
  out[11] = offset(&p.tiles_n, base);
  out[12] = offset(&p.tiles, base);
  out[13] = Kernel::kThreads;
  out[14] = Kernel::kSmemBytes;
  out[16] = offset(&p.block_scales.a, base);
  out[17] = offset(&p.block_scales.b, base);
  out[18] = offset(&p.block_scales.a_row, base);
  out[19] = offset(&p.block_scales.a_kblock, base);
  out[20] = offset(&p.block_scales.b_kblock, base);
  out[21] = offset(&p.block_scales.b_nblock, base);
  out[22] = offset(&p.block_scales.a_vector, base);
  out[23] = Kernel::kBlockScaled ? 1 : 0;
  out[24] = -1;
  out[25] = -1;
  if constexpr (Kernel::kReduceSplits) {
    out[24] = offset(&p.split_sums, base);
    out[25] = offset(&p.split_tickets, base);
  }
  out[26] = -1;
  out[27] = -1;
  if constexpr (Kernel::kTmaStore) {
    out[26] = offset(&p.tma_d, base);
    out[27] = offset(&p.d_by_tma, base);
  }
  out[28] = (Kernel::kTmaAux ? 1 : 0) | (Kernel::kTmaColumn ? 2 : 0);
  for (int i = 29; i < 34; ++i) out[i] = -1;
  if constexpr (Kernel::kTmaAux) {
    out[29] = offset(&p.tma_aux, base);
    out[30] = offset(&p.batch_mask_aux, base);
    out[31] = offset(&p.column_by_tma, base);
    out[32] = offset(&Kernel::staged_aux(p.epilogue)->data, base);
    if constexpr (Kernel::kTmaColumn) out[33] = offset(&Kernel::staged_column(p.epilogue)->data, base);
  }
  out[34] = Kernel::kStages;
  out[35] = Kernel::KernelConfig::kConsumerWarpgroups;
  out[36] = Kernel::kPingPong ? 1 : 0;
  out[37] = Kernel::KernelConfig::kClusterM;
  for (int i = 38; i < 44; ++i) out[i] = -1;
  if constexpr (Kernel::kRowGate) {
    out[38] = offset(&p.row_flags, base);
    out[39] = offset(&p.rows_per_flag, base);
    out[40] = offset(&p.first_tile_row, base);
    out[41] = offset(&p.tma_own, base);
    out[42] = offset(&p.own_tile_begin, base);
    out[43] = offset(&p.own_tile_end, base);
  }
  out[15] = epilogue::write_node_layouts<Epilogue>(p.epilogue, base, out + kLayoutHeader);
}

// An upper bound of the layout's size in 64-bit words for a tree with `named_nodes` named nodes.
TILEFUSE_HOST_DEVICE constexpr int params_layout_words(int named_nodes) {
  return kLayoutHeader + kLayoutPerNode * named_nodes;
}

}  // namespace tilefuse::gemm::sm90
