// Finds the instantiated tilefuse Conv2d for a (dtype, mode, epilogue) combination.
#include "conv_tilefuse.hpp"

namespace tilefuse::bench {

std::unique_ptr<TilefuseConvOp> make_tilefuse_conv(DType dtype, ConvMode mode, ConvEpilogue epilogue) {
#if TILEFUSE_BENCH_CONV_TILEFUSE
  if (epilogue == ConvEpilogue::kBiasReluResidual) {
    return mode == ConvMode::kFprop ? make_tilefuse_conv_fprop_fused(dtype) : nullptr;
  }
  switch (mode) {
    case ConvMode::kFprop: return make_tilefuse_conv_fprop(dtype);
    case ConvMode::kDgrad: return make_tilefuse_conv_dgrad(dtype);
    case ConvMode::kWgrad: return make_tilefuse_conv_wgrad(dtype);
  }
#else
  (void)dtype, (void)mode, (void)epilogue;
#endif
  return nullptr;
}

std::string tilefuse_conv_not_built_reason(ConvMode mode, ConvEpilogue epilogue) {
#if TILEFUSE_BENCH_CONV_TILEFUSE
  return std::string("not instantiated: ") + name_of(mode) + " with " + name_of(epilogue) +
         " (built: fprop, dgrad, wgrad with none; fprop with bias_relu_residual)";
#else
  (void)mode, (void)epilogue;
  return "not built: configured with -DTILEFUSE_BENCH_CONV_TILEFUSE=OFF";
#endif
}

}  // namespace tilefuse::bench
