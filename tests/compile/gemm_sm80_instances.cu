// A representative set of sm_80-path GEMM kernels, compiled for every target arch in CI (no GPU):
// both operand paths, all four layouts, a fused epilogue with a reduction, split-K; 16-bit and tf32
// (float, tfloat32_t) inputs.
#include <tilefuse/gemm/device/gemm.hpp>

namespace tilefuse::compile_check {

using namespace tilefuse::epilogue;
using Fused = Store<"D", bfloat16_t, Add<GeluTanh<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"C", bfloat16_t>>>;
using Tf32Fused = Store<"D", float, ColReduce<"amax", reduce::AbsMax, Add<Relu<Add<Acc, RowBroadcast<"bias", float>>>, AuxLoad<"C", float>>>>;
using Amax = Store<"D", half_t, ColReduce<"amax", reduce::AbsMax, Where<Less<Row, Scalar<"r0">>, Sigmoid<Acc>, Tanh<Acc>>>>;

template <class Op>
Status run(typename Op::Arguments const& args) {
  return Op::run(args, nullptr, nullptr);
}

template Status run<gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, Fused>>(
    gemm::Gemm<bfloat16_t, RowMajor, ColumnMajor, Fused>::Arguments const&);
template Status run<gemm::Gemm<bfloat16_t, RowMajor, RowMajor, Fused, gemm::Sm80SmallConfig>>(
    gemm::Gemm<bfloat16_t, RowMajor, RowMajor, Fused, gemm::Sm80SmallConfig>::Arguments const&);
template Status run<gemm::Gemm<half_t, ColumnMajor, RowMajor, Amax>>(
    gemm::Gemm<half_t, ColumnMajor, RowMajor, Amax>::Arguments const&);
template Status run<gemm::Gemm<half_t, ColumnMajor, ColumnMajor, Amax, gemm::Sm80SmallConfig>>(
    gemm::Gemm<half_t, ColumnMajor, ColumnMajor, Amax, gemm::Sm80SmallConfig>::Arguments const&);
template Status run<gemm::Gemm<float, ColumnMajor, RowMajor, Tf32Fused>>(
    gemm::Gemm<float, ColumnMajor, RowMajor, Tf32Fused>::Arguments const&);
template Status run<gemm::Gemm<tfloat32_t, RowMajor, ColumnMajor, Tf32Fused, gemm::Sm80Tf32SmallConfig>>(
    gemm::Gemm<tfloat32_t, RowMajor, ColumnMajor, Tf32Fused, gemm::Sm80Tf32SmallConfig>::Arguments const&);

}  // namespace tilefuse::compile_check
