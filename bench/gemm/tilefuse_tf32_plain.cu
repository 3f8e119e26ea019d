// Instantiations: tf32 (fp32 A, B and D; the kernel rounds A and B to tf32 as it loads its fragments),
// epilogue none, layout tn, with Sm80Tf32LargeConfig (128x256x32, 3 stages).
#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_tf32_plain(OperandLayout layout) {
  if (!(layout.a_row_major && !layout.b_row_major)) return nullptr;
  return make_tilefuse_op<float, PlainEpilogue<float>, EpilogueKind::kNone, RowMajor, ColumnMajor,
                          gemm::Sm80Tf32LargeConfig>("tf32");
}

}  // namespace tilefuse::bench
