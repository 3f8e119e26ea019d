// Finds the instantiated tilefuse GEMM for a (dtype, layout, epilogue) combination.
#include "tilefuse_op.hpp"

namespace tilefuse::bench {

std::unique_ptr<TilefuseGemmOp> make_tilefuse_gemm(DType dtype, OperandLayout layout, EpilogueKind epilogue,
                                                   std::string const& kernel) {
  if (kernel.rfind("sm90", 0) == 0) return make_tilefuse_sm90(dtype, layout, epilogue, kernel);
  if (kernel == "auto") {
    // gemm::Gemm's default picks per problem in tn; in the other layouts it is the sm80 kernel.
    if (auto op = make_tilefuse_auto(dtype, layout, epilogue)) return op;
  }
  // tf32 under "auto" lands here too: gemm::Gemm's auto choice for fp32 inputs is this sm80 kernel.
  if (epilogue == EpilogueKind::kNone) {
    switch (dtype) {
      case DType::kBF16: return make_tilefuse_bf16_plain(layout);
      case DType::kFP16: return make_tilefuse_fp16_plain(layout);
      case DType::kTF32: return make_tilefuse_tf32_plain(layout);
    }
    return nullptr;
  }
  return dtype == DType::kBF16 ? make_tilefuse_bf16_fused(layout) : nullptr;
}

std::vector<std::unique_ptr<TilefuseGemmOp>> all_tilefuse_gemms() {
  std::vector<std::unique_ptr<TilefuseGemmOp>> ops;
  for (EpilogueKind epilogue : {EpilogueKind::kNone, EpilogueKind::kBiasGeluResidual}) {
    for (DType dtype : {DType::kBF16, DType::kFP16, DType::kTF32}) {
      for (OperandLayout layout : all_layouts()) {
        if (auto op = make_tilefuse_gemm(dtype, layout, epilogue)) ops.push_back(std::move(op));
      }
    }
  }
  return ops;
}

}  // namespace tilefuse::bench
