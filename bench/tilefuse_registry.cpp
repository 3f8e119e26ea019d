// Finds the instantiated tilefuse GEMM for a (dtype, layout, epilogue) combination.
#include "tilefuse_op.hpp"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_gemm(DType dtype, OperandLayout layout, EpilogueKind epilogue,
                                                   std::string const& kernel) {
  if (kernel == "sm90") return make_tilefuse_sm90(dtype, layout, epilogue);
  if (epilogue == EpilogueKind::kNone) {
    return dtype == DType::kBF16 ? make_tilefuse_bf16_plain(layout) : make_tilefuse_fp16_plain(layout);
  }
  return dtype == DType::kBF16 ? make_tilefuse_bf16_fused(layout) : nullptr;
}

std::vector<std::unique_ptr<TilefuseGemmOp>> all_tilefuse_gemms() {
  std::vector<std::unique_ptr<TilefuseGemmOp>> ops;
  for (EpilogueKind epilogue : {EpilogueKind::kNone, EpilogueKind::kBiasGeluResidual}) {
    for (DType dtype : {DType::kBF16, DType::kFP16}) {
      for (OperandLayout layout : all_layouts()) {
        if (auto op = make_tilefuse_gemm(dtype, layout, epilogue)) ops.push_back(std::move(op));
      }
    }
  }
  return ops;
}

}  // namespace tilefuse::bench
