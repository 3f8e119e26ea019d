// Instantiations: bf16, epilogue none, all four layouts (tn nn nt tt).
#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_bf16_plain(OperandLayout layout) {
  using T = bfloat16_t;
  using E = PlainEpilogue<T>;
  constexpr auto kNone = EpilogueKind::kNone;
  bool const a_row = layout.a_row_major;
  bool const b_row = layout.b_row_major;
  if (a_row && !b_row) return make_tilefuse_op<T, E, kNone, RowMajor, ColumnMajor>("bf16");
  if (!a_row && !b_row) return make_tilefuse_op<T, E, kNone, ColumnMajor, ColumnMajor>("bf16");
  if (!a_row && b_row) return make_tilefuse_op<T, E, kNone, ColumnMajor, RowMajor>("bf16");
  return make_tilefuse_op<T, E, kNone, RowMajor, RowMajor>("bf16");
}

}  // namespace tilefuse::bench
