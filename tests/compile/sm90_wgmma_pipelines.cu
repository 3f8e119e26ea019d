// CTest compile.sm90_wgmma_pipelines compiles this for sm_90a and fails if ptxas reports that it
// serialized the wgmmas of any kernel here ("Potential Performance Loss", C75xx). The promoted FP8
// mainloop keeps one k-tile's wgmmas in flight while it promotes the previous one, and small changes to
// its control flow (a lambda left out of line, a tail the compiler merges with the loop) made ptxas
// wait after every wgmma without any other symptom than speed (gemm_fp8.md v112).
#include <tilefuse/conv/kernel/sm90_implicit_gemm.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/gemm_config.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

// Experiment configs (gemm_config.h keeps the templates; docs/notes/gemm_fp8.md has the measurements).
namespace tilefuse::gemm {
using Sm90Fp8BlockScaledMulticastConfig = Sm90Multicast<Sm90Fp8BlockScaledConfig>;
}  // namespace tilefuse::gemm

namespace tilefuse::wgmma_pipelines_check {

using namespace tilefuse::epilogue;
using gemm::sm90::GemmKernel;
using gemm::sm90::sm90_gemm_kernel;

using Bf16Store = Store<"D", bfloat16_t, Acc>;
using PerTensor = Store<"D", bfloat16_t, Mul<Mul<Acc, Scalar<"scale_a">>, Scalar<"scale_b">>>;
using RowWise = Store<"D", bfloat16_t, Mul<Mul<ColBroadcast<"scale_a", float>, RowBroadcast<"scale_b", float>>, Acc>>;
using BlockWise = Store<"D", bfloat16_t, Add<Acc, RowBroadcast<"bias", bfloat16_t>>>;

template <class Element, class Tree, class Config>
constexpr auto kernel = &sm90_gemm_kernel<GemmKernel<Element, Tree, Config>>;
// The FP8 conv: im2col with 128-channel k-tiles, and with 64-channel ones (64-byte swizzled rows).
using Fp8ConvConfig = conv::sm90::Sm90ConvConfigFor<float_e4m3_t, conv::sm90::Sm90ConvIm2colLargeConfig>;
template <class Config>
constexpr auto fp8_conv_kernel = &sm90_gemm_kernel<conv::sm90::FpropIm2colKernel<float_e4m3_t, PerTensor, Config>>;

// The bf16 dgrad: B (the filter) MN-major.
constexpr auto dgrad_kernel =
    &sm90_gemm_kernel<conv::sm90::DgradIm2colKernel<bfloat16_t, Bf16Store, conv::sm90::Sm90ConvIm2colLargeConfig>>;

// The bf16 wgrad: A and B MN-major.
constexpr auto wgrad_kernel =
    &sm90_gemm_kernel<conv::sm90::WgradKernel<bfloat16_t, Bf16Store, conv::sm90::Sm90ConvIm2colLargeConfig>>;

// The bf16 fprop's 64x256 ping-pong tile (128 accumulators per consumer thread), bare and fused with the
// residual by TMA (conv + bias + residual + ReLU).
constexpr auto short_fprop_kernel =
    &sm90_gemm_kernel<conv::sm90::FpropIm2colKernel<bfloat16_t, Bf16Store, conv::sm90::Sm90ConvIm2colPingPongShortLargeConfig>>;
using FusedConv = Store<"D", bfloat16_t, Relu<Add<Add<Acc, RowBroadcast<"bias", bfloat16_t>>, AuxLoad<"residual", bfloat16_t>>>>;
constexpr auto short_fused_fprop_kernel = &sm90_gemm_kernel<conv::sm90::FpropIm2colKernel<
    bfloat16_t, FusedConv, conv::sm90::Sm90ConvTmaAux<conv::sm90::Sm90ConvIm2colPingPongShortLargeConfig>>>;
// The bf16 wgrad with in-kernel split-K (its reductions read the accumulators after the mainloop), on
// the 128x256 tile (the most accumulators), the 128x128 ping-pong one (two row blocks per warp) and the
// 64x64 ping-pong one (a 64-row tile per warpgroup).
template <class Config>
constexpr auto wgrad_split_kernel =
    &sm90_gemm_kernel<conv::sm90::WgradKernel<bfloat16_t, Bf16Store, gemm::Sm90SplitReduce<Config>>>;
// The bf16 fprop's 128x160 tile (wgmma N = 160).
constexpr auto wide_fprop_kernel =
    &sm90_gemm_kernel<conv::sm90::FpropIm2colKernel<bfloat16_t, Bf16Store, conv::sm90::Sm90ConvIm2colWideConfig>>;

// Taking the kernels' addresses instantiates them. First the bf16 kernel and fast FP8 accumulation
// (wgmma_wait<1> across k-tiles), then promotion with two partial sets: per-tensor, row-wise, block-wise
// (and block-wise with multicast), then the FP8 conv's two k-tile widths, then the bf16 dgrad and wgrad, then the 128x160 and 64x256 fprop (bare and fused), then the wgrad with in-kernel split-K, then the GEMM with its rows of A gated (cooperative and ping-pong), then the GEMM's split on the 64x64 ping-pong tile (two accumulator chains). A function with external linkage keeps the list (and the kernels) in.
void const* const* kernels() {
  static void const* const all[] = {
      reinterpret_cast<void const*>(kernel<bfloat16_t, Bf16Store, gemm::Sm90LargeConfig>),
      reinterpret_cast<void const*>(kernel<float_e4m3_t, PerTensor, gemm::Sm90Fp8LargeConfig>),
      reinterpret_cast<void const*>(kernel<float_e4m3_t, PerTensor, gemm::Sm90Fp8PromotedConfig>),
      reinterpret_cast<void const*>(kernel<float_e4m3_t, RowWise, gemm::Sm90Fp8PromotedConfig>),
      reinterpret_cast<void const*>(kernel<float_e4m3_t, BlockWise, gemm::Sm90Fp8BlockScaledConfig>),
      reinterpret_cast<void const*>(kernel<float_e4m3_t, BlockWise, gemm::Sm90Fp8BlockScaledMulticastConfig>),
      reinterpret_cast<void const*>(fp8_conv_kernel<Fp8ConvConfig>),
      reinterpret_cast<void const*>(fp8_conv_kernel<conv::sm90::Sm90ConvHalfK<Fp8ConvConfig>>),
      reinterpret_cast<void const*>(dgrad_kernel),
      reinterpret_cast<void const*>(wgrad_kernel),
      reinterpret_cast<void const*>(wide_fprop_kernel),
      reinterpret_cast<void const*>(short_fprop_kernel),
      reinterpret_cast<void const*>(short_fused_fprop_kernel),
      reinterpret_cast<void const*>(wgrad_split_kernel<conv::sm90::Sm90ConvIm2colLargeConfig>),
      reinterpret_cast<void const*>(wgrad_split_kernel<conv::sm90::Sm90ConvIm2colPingPongMediumConfig>),
      reinterpret_cast<void const*>(wgrad_split_kernel<conv::sm90::Sm90ConvIm2colPingPongShortConfig>),
      reinterpret_cast<void const*>(kernel<bfloat16_t, Bf16Store, gemm::Sm90RowGate<gemm::Sm90LargeConfig>>),
      reinterpret_cast<void const*>(kernel<bfloat16_t, Bf16Store, gemm::Sm90RowGate<gemm::Sm90PingPongConfig>>),
      reinterpret_cast<void const*>(kernel<bfloat16_t, Bf16Store, gemm::Sm90SplitReduce<gemm::Sm90ShortConfig>>),
  };
  return all;
}

}  // namespace tilefuse::wgmma_pipelines_check
