// Where every field of the skinny GEMM's Params (skinny_gemm.h) lives, for a host that packs the parameters as
// bytes (the Python JIT). A one-thread kernel in the same CUBIN writes the byte offsets into `out`:
//
// out[0..15]  kSkinnyLayoutVersion, sizeof(Params), kSkinnyThreads, kSkinnyColumns, kSkinnyMaxRows, then the
//             offsets of problem.m, .n, .k, .batch (index_t), a, lda, batch_stride_a, b, ldb, batch_stride_b,
//             and the number of named epilogue nodes;
// out[16 + 9 i ...] named node i of the epilogue tree (epilogue/params_layout.h).
#pragma once

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/params_layout.h>
#include <tilefuse/gemm/kernel/skinny_gemm.h>

namespace tilefuse::gemm::skinny {

inline constexpr long long kSkinnyLayoutVersion = 1;
inline constexpr int kSkinnyLayoutHeader = 16;

template <class Element, class Epilogue>
__global__ void skinny_params_layout_kernel(long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  using epilogue::layout_detail::offset;
  Params<Element, Epilogue> const p{};
  void const* base = &p;
  out[0] = kSkinnyLayoutVersion;
  out[1] = static_cast<long long>(sizeof(p));
  out[2] = kSkinnyThreads;
  out[3] = kSkinnyColumns;
  out[4] = kSkinnyMaxRows;
  out[5] = offset(&p.problem.m, base);
  out[6] = offset(&p.problem.n, base);
  out[7] = offset(&p.problem.k, base);
  out[8] = offset(&p.problem.batch, base);
  out[9] = offset(&p.a, base);
  out[10] = offset(&p.lda, base);
  out[11] = offset(&p.batch_stride_a, base);
  out[12] = offset(&p.b, base);
  out[13] = offset(&p.ldb, base);
  out[14] = offset(&p.batch_stride_b, base);
  out[15] = epilogue::write_node_layouts<Epilogue>(p.epilogue, base, out + kSkinnyLayoutHeader);
}

}  // namespace tilefuse::gemm::skinny
