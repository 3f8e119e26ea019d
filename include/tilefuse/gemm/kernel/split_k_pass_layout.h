// Where the split-K pass's Params fields live (gemm::SplitKEpilogueParams, split_k_epilogue.h), for the
// layout kernels of the JIT's kernels that run the pass beside them (conv_params_layout.h,
// sm80_params_layout.h). Device code.
#pragma once

#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/params_layout.h>
#include <tilefuse/gemm/kernel/split_k_epilogue.h>

namespace tilefuse::gemm {

// header[0..7]: sizeof, problem.m, .n, .k, .batch, split_k, partials and the epilogue's offset; the tree's
// named nodes into `nodes`. Returns how many named nodes it wrote.
template <class Epilogue>
TILEFUSE_DEVICE long long write_split_k_pass_layout(long long* header, long long* nodes) {
  using epilogue::layout_detail::offset;
  SplitKEpilogueParams<Epilogue> const r{};
  void const* base = &r;
  header[0] = static_cast<long long>(sizeof(r));
  header[1] = offset(&r.problem.m, base);
  header[2] = offset(&r.problem.n, base);
  header[3] = offset(&r.problem.k, base);
  header[4] = offset(&r.problem.batch, base);
  header[5] = offset(&r.split_k, base);
  header[6] = offset(&r.partials, base);
  header[7] = offset(&r.epilogue, base);
  return epilogue::write_node_layouts<Epilogue>(r.epilogue, base, nodes);
}

}  // namespace tilefuse::gemm
