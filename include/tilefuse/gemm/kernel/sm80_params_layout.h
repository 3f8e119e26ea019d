// Where every field of an sm80 GEMM kernel's Params (gemm::sm80::GemmKernel: TiledKernel over DenseOperands)
// and of its split-K pass lives, for a host that packs the parameters as bytes (the Python JIT; the Hopper
// GEMM's: sm90_params_layout.h). A one-thread kernel in the same CUBIN writes the byte offsets into `out`.
//
// out[0..31]  kSm80LayoutVersion, sizeof(Params), kThreads, kSmemBytes, kTileM, kTileN, kTileK, then the
//             offsets of problem.m, .n, .k, .batch (index_t), operands.a, .lda, .batch_stride_a, .b, .ldb,
//             .batch_stride_b, split_k (int), k_per_split (index_t), partials (float*), tiles_m, tiles_n (int),
//             the number of named epilogue nodes; then the split-K pass's SplitKEpilogueParams
//             (split_k_pass_layout.h): its sizeof, problem.m, .n, .k, .batch, split_k, partials, the offset of its
//             epilogue, and the number of its named nodes;
// out[32 + 9 i ...]        named node i of the kernel's epilogue tree (epilogue/params_layout.h);
// out[32 + 9 (64 + i) ...] named node i of the pass's tree.
#pragma once

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/params_layout.h>
#include <tilefuse/gemm/kernel/split_k_pass_layout.h>

namespace tilefuse::gemm::sm80 {

inline constexpr long long kSm80LayoutVersion = 1;
inline constexpr int kSm80LayoutHeader = 32;
inline constexpr int kSm80LayoutMaxNodes = 64;

template <class Kernel, class Epilogue>
__global__ void sm80_gemm_params_layout_kernel(long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using epilogue::layout_detail::offset;
  typename Kernel::Params const p{};
  void const* base = &p;
  for (int i = 0; i < kSm80LayoutHeader; ++i) out[i] = -1;
  out[0] = kSm80LayoutVersion;
  out[1] = static_cast<long long>(sizeof(p));
  out[2] = Kernel::kThreads;
  out[3] = Kernel::kSmemBytes;
  out[4] = Kernel::kTileM;
  out[5] = Kernel::kTileN;
  out[6] = Kernel::kTileK;
  out[7] = offset(&p.problem.m, base);
  out[8] = offset(&p.problem.n, base);
  out[9] = offset(&p.problem.k, base);
  out[10] = offset(&p.problem.batch, base);
  out[11] = offset(&p.operands.a, base);
  out[12] = offset(&p.operands.lda, base);
  out[13] = offset(&p.operands.batch_stride_a, base);
  out[14] = offset(&p.operands.b, base);
  out[15] = offset(&p.operands.ldb, base);
  out[16] = offset(&p.operands.batch_stride_b, base);
  out[17] = offset(&p.split_k, base);
  out[18] = offset(&p.k_per_split, base);
  out[19] = offset(&p.partials, base);
  out[20] = offset(&p.tiles_m, base);
  out[21] = offset(&p.tiles_n, base);
  out[22] = epilogue::write_node_layouts<Epilogue>(p.epilogue, base, out + kSm80LayoutHeader);
  out[31] = write_split_k_pass_layout<Epilogue>(
      out + 23, out + kSm80LayoutHeader + epilogue::kNodeLayoutWords * kSm80LayoutMaxNodes);
}

}  // namespace tilefuse::gemm::sm80
