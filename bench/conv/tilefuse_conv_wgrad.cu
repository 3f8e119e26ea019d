// Instantiations: Conv2d wgrad, epilogue none, bf16 and fp16.
#include "conv_tilefuse_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_wgrad(DType dtype) {
  return make_tilefuse_conv_op<ConvMode::kWgrad, ConvEpilogue::kNone, ConvPlainEpilogue>(dtype);
}

}  // namespace tilefuse::bench
