// Instantiations of the Hopper kernel (gemm::GemmSm90, TMA + WGMMA): bf16 none and bias_gelu_residual,
// fp16 none; A row-major and B column-major (tn), the layouts it takes.
#include <tilefuse/gemm/device/gemm_sm90.hpp>

#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

namespace {
template <class Element, class Epilogue, EpilogueKind kEpilogue>
std::unique_ptr<TilefuseGemmOp> make_sm90(char const* dtype_name) {
  using Config = gemm::Sm90LargeConfig;
  using Op = gemm::GemmSm90<Element, RowMajor, ColumnMajor, Epilogue, Config>;
  return std::make_unique<TilefuseGemmOpImpl<Element, RowMajor, ColumnMajor, Epilogue, Config, kEpilogue, Op>>(
      std::string(dtype_name) + " tn " + name_of(kEpilogue) + " (sm90 TMA + WGMMA)");
}
}  // namespace

std::unique_ptr<TilefuseGemmOp> make_tilefuse_sm90(DType dtype, OperandLayout layout, EpilogueKind epilogue) {
  if (!layout.a_row_major || layout.b_row_major) return nullptr;
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kNone) {
    return make_sm90<bfloat16_t, PlainEpilogue<bfloat16_t>, EpilogueKind::kNone>("bf16");
  }
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kBiasGeluResidual) {
    return make_sm90<bfloat16_t, BiasGeluResidualEpilogue<bfloat16_t>, EpilogueKind::kBiasGeluResidual>("bf16");
  }
  if (dtype == DType::kFP16 && epilogue == EpilogueKind::kNone) {
    return make_sm90<half_t, PlainEpilogue<half_t>, EpilogueKind::kNone>("fp16");
  }
  return nullptr;
}

}  // namespace tilefuse::bench
