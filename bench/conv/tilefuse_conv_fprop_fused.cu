// Instantiations: Conv2d fprop with bias + residual + ReLU (cuDNN's fused semantic), bf16 and fp16.
#include "conv_tilefuse_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_fprop_fused(DType dtype) {
  return make_tilefuse_conv_op<ConvMode::kFprop, ConvEpilogue::kBiasReluResidual, ConvBiasReluResidualEpilogue>(dtype);
}

}  // namespace tilefuse::bench
