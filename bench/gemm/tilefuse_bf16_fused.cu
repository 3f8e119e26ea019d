// Instantiations: bf16, bias + GELU(tanh) + residual, layout tn.
#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_bf16_fused(OperandLayout layout) {
  if (!(layout.a_row_major && !layout.b_row_major)) return nullptr;
  return make_tilefuse_op<bfloat16_t, BiasGeluResidualEpilogue<bfloat16_t>, EpilogueKind::kBiasGeluResidual,
                          RowMajor, ColumnMajor>("bf16");
}

}  // namespace tilefuse::bench
