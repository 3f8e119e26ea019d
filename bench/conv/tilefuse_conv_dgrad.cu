// Instantiations: Conv2d dgrad, epilogue none, bf16 and fp16.
#include "conv_tilefuse_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_dgrad(DType dtype) {
  return make_tilefuse_conv_op<ConvMode::kDgrad, ConvEpilogue::kNone, ConvPlainEpilogue>(dtype);
}

}  // namespace tilefuse::bench
