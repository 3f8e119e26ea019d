// Instantiations: Conv2d fprop, epilogue none, bf16 and fp16.
#include "conv_tilefuse_impl.cuh"

namespace tilefuse::bench {

std::unique_ptr<TilefuseConvOp> make_tilefuse_conv_fprop(DType dtype) {
  return make_tilefuse_conv_op<ConvMode::kFprop, ConvEpilogue::kNone, ConvPlainEpilogue>(dtype);
}

}  // namespace tilefuse::bench
