// Instantiations: fp16, epilogue none, layout tn.
#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_fp16_plain(OperandLayout layout) {
  if (!(layout.a_row_major && !layout.b_row_major)) return nullptr;
  return make_tilefuse_op<half_t, PlainEpilogue<half_t>, EpilogueKind::kNone, RowMajor, ColumnMajor>("fp16");
}

}  // namespace tilefuse::bench
