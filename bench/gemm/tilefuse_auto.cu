// Instantiations of gemm::Gemm with its default GemmAutoConfig (--kernel auto): the Hopper kernel where
// it accepts the problem, the sm80 kernel (Sm80LargeConfig for 16-bit inputs) otherwise. tn only (bf16
// none and bias_gelu_residual, fp16 none): in the other layouts the auto choice is the sm80 kernel,
// which the registry then takes from the sm80 files.
#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

namespace {
template <class Element, class Epilogue, EpilogueKind kEpilogue>
std::unique_ptr<TilefuseGemmOp> make_auto(char const* dtype_name) {
  using Op = gemm::Gemm<Element, RowMajor, ColumnMajor, Epilogue, gemm::GemmAutoConfig>;
  return std::make_unique<TilefuseGemmOpImpl<Element, RowMajor, ColumnMajor, Epilogue, gemm::Sm80LargeConfig,
                                             kEpilogue, Op>>(std::string(dtype_name) + " tn " + name_of(kEpilogue) +
                                                             " (auto)");
}
}  // namespace

std::unique_ptr<TilefuseGemmOp> make_tilefuse_auto(DType dtype, OperandLayout layout, EpilogueKind epilogue) {
  if (!layout.a_row_major || layout.b_row_major) return nullptr;
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kNone) {
    return make_auto<bfloat16_t, PlainEpilogue<bfloat16_t>, EpilogueKind::kNone>("bf16");
  }
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kBiasGeluResidual) {
    return make_auto<bfloat16_t, BiasGeluResidualEpilogue<bfloat16_t>, EpilogueKind::kBiasGeluResidual>("bf16");
  }
  if (dtype == DType::kFP16 && epilogue == EpilogueKind::kNone) {
    return make_auto<half_t, PlainEpilogue<half_t>, EpilogueKind::kNone>("fp16");
  }
  return nullptr;
}

}  // namespace tilefuse::bench
