// A representative set of sm_80-path implicit-GEMM convolutions, compiled for every target arch in CI
// (no GPU): each mode, both gather paths (launched by run()), fused epilogues, split-K.
#include <tilefuse/conv/device/conv2d.hpp>

namespace tilefuse::compile_check {

using namespace tilefuse::epilogue;
using BiasReluResidual =
    Store<"D", bfloat16_t, Relu<Add<Add<Acc, RowBroadcast<"bias", bfloat16_t>>, AuxLoad<"residual", bfloat16_t>>>>;
using Plain = Store<"D", half_t, Acc>;

template <class Op>
Status run_conv(typename Op::Arguments const& args) {
  return Op::run(args, nullptr, nullptr);
}

template Status run_conv<conv::Conv2d<bfloat16_t, ConvMode::kFprop, BiasReluResidual>>(
    conv::Conv2d<bfloat16_t, ConvMode::kFprop, BiasReluResidual>::Arguments const&);
template Status run_conv<conv::Conv2d<half_t, ConvMode::kDgrad, Plain, gemm::Sm80SmallConfig>>(
    conv::Conv2d<half_t, ConvMode::kDgrad, Plain, gemm::Sm80SmallConfig>::Arguments const&);
template Status run_conv<conv::Conv2d<bfloat16_t, ConvMode::kWgrad, Store<"D", float, Acc>>>(
    conv::Conv2d<bfloat16_t, ConvMode::kWgrad, Store<"D", float, Acc>>::Arguments const&);

}  // namespace tilefuse::compile_check
