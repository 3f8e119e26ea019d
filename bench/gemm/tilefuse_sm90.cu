// Instantiations of the Hopper kernel (gemm::GemmSm90, TMA + WGMMA), A row-major and B column-major (tn,
// the layouts it takes): with Sm90AutoConfig (the tile per problem; --kernel sm90) bf16 none and
// bias_gelu_residual and fp16 none; with one tile each (--kernel sm90-large | sm90-medium | sm90-narrow | sm90-short)
// bf16 none, to measure the tile model's choices; with split-K summed in the kernel (--kernel sm90-split-large |
// sm90-split-medium | sm90-split-narrow | sm90-split-short, --split-k S) bf16 none and bias_gelu_residual; with the ping-pong schedule (--kernel sm90-pingpong |
// sm90-pingpong-wide, and with 2-CTA multicast sm90-pingpong-multicast | sm90-pingpong-wide-multicast)
// bf16 none and bias_gelu_residual; sm90-large-3stage (128x256 with a 3-stage ring) bf16 none and
// bias_gelu_residual; with the residual by TMA forced (--kernel sm90-tma-residual-large | -medium |
// -pingpong-wide) bf16 none and bias_gelu_residual; 128x96 and 128x160 (--kernel sm90-mid96 | sm90-wide160 |
// sm90-split-mid96) bf16 none and bias_gelu_residual.
#include <tilefuse/gemm/device/gemm_sm90.hpp>
#include <tilefuse/gemm/device/gemm_sm90_auto.hpp>

#include "tilefuse_op_impl.cuh"

namespace tilefuse::bench {

// Ping-pong 128x192 per warpgroup (192 accumulators per thread, 4 stages of 40 KiB): one warpgroup's fused
// epilogue under the other's mainloop, with about the L2 bytes per flop of the cooperative 128x256 tile (the
// 64x256 ping-pong tile reads 1.7x as many). Fused trees take the staged epilogue (ping-pong takes the TMA
// residual on 64-row tiles only). An experiment (docs/notes/gemm_sm90.md), not a planner choice.
// setmaxnreg 24 / 240 (FlashAttention-3's split): the 40 / 232 default spills more in the fused epilogue.
struct PingPongTall : gemm::Sm90TileConfig<128, 192, 64, 4, gemm::kSm90GroupRows, 32, gemm::Sm90Schedule::kPingPong> {
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters = 240;
};

// The planner's 128x96 and 128x160 tiles forced (gemm_config.h: Sm90MidConfig, Sm90WideConfig).
using Mid96 = gemm::Sm90MidConfig;
using Wide160 = gemm::Sm90WideConfig;

namespace {
template <class Element, class Epilogue, EpilogueKind kEpilogue, class Config>
std::unique_ptr<TilefuseGemmOp> make_sm90(char const* dtype_name, char const* what) {
  using Op = gemm::GemmSm90<Element, RowMajor, ColumnMajor, Epilogue, Config>;
  // The Config argument of the impl only names sm80 facts; GemmSm90's facts come from cuobjdump.
  return std::make_unique<TilefuseGemmOpImpl<Element, RowMajor, ColumnMajor, Epilogue, gemm::Sm80LargeConfig,
                                             kEpilogue, Op>>(std::string(dtype_name) + " tn " + name_of(kEpilogue) +
                                                             " (" + what + ")");
}
// bf16 with the plain or the bias + GELU + residual epilogue under one forced config.
template <class Config>
std::unique_ptr<TilefuseGemmOp> make_bf16_plain_or_fused(DType dtype, EpilogueKind epilogue, char const* name) {
  if (dtype != DType::kBF16) return nullptr;
  if (epilogue == EpilogueKind::kNone) {
    return make_sm90<bfloat16_t, PlainEpilogue<bfloat16_t>, EpilogueKind::kNone, Config>("bf16", name);
  }
  if (epilogue == EpilogueKind::kBiasGeluResidual) {
    return make_sm90<bfloat16_t, BiasGeluResidualEpilogue<bfloat16_t>, EpilogueKind::kBiasGeluResidual, Config>("bf16", name);
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<TilefuseGemmOp> make_tilefuse_sm90(DType dtype, OperandLayout layout, EpilogueKind epilogue,
                                                   std::string const& kernel) {
  if (!layout.a_row_major || layout.b_row_major) return nullptr;
  using gemm::Sm90AutoConfig;
  // The Large tile with a 3-stage ring (the depth fused trees get beside their staged loads), plain
  // and fused: what the fourth stage is worth (gemm_sm90.md v72).
  if (kernel == "sm90-large-3stage") return make_bf16_plain_or_fused<gemm::Sm90TileConfig<128, 256, 64, 3>>(
      dtype, epilogue, "sm90 128x256, 3 stages");
  // The residual by TMA (Sm90TmaResidual: the planner's choice for aligned residuals on the cooperative tiles)
  // forced on one tile, and on the 64x256 ping-pong tile (what the fused convs run; the planner does not pick it
  // for the GEMM): the fused epilogue's cost per tile and schedule (docs/notes/gemm_sm90.md, the TMA residual as
  // the GEMM default). Plain trees compile as under the base config.
  if (kernel == "sm90-tma-residual-large") return make_bf16_plain_or_fused<gemm::Sm90TmaResidual<gemm::Sm90LargeConfig>>(
      dtype, epilogue, "sm90 128x256, residual by TMA");
  if (kernel == "sm90-tma-residual-medium") return make_bf16_plain_or_fused<gemm::Sm90TmaResidual<gemm::Sm90MediumConfig>>(
      dtype, epilogue, "sm90 128x128, residual by TMA");
  if (kernel == "sm90-tma-residual-pingpong-wide") {
    return make_bf16_plain_or_fused<gemm::Sm90TmaResidual<gemm::Sm90PingPongWideConfig>>(
        dtype, epilogue, "sm90 ping-pong 64x256, residual by TMA");
  }
  if (kernel == "sm90-mid96") return make_bf16_plain_or_fused<Mid96>(dtype, epilogue, "sm90 128x96");
  if (kernel == "sm90-wide160") return make_bf16_plain_or_fused<Wide160>(dtype, epilogue, "sm90 128x160");
  if (kernel == "sm90-split-mid96") return make_bf16_plain_or_fused<gemm::Sm90SplitReduce<Mid96>>(
      dtype, epilogue, "sm90 128x96, split-K in the kernel");
  if (kernel == "sm90-pingpong-tall") return make_bf16_plain_or_fused<PingPongTall>(dtype, epilogue, "sm90 ping-pong 128x192");
  // Split-K summed inside the kernel (--split-k S, S >= 2 dividing k): skinny outputs with long K.
  if (kernel == "sm90-split-large") return make_bf16_plain_or_fused<gemm::Sm90SplitReduce<gemm::Sm90LargeConfig>>(
      dtype, epilogue, "sm90 128x256, split-K in the kernel");
  if (kernel == "sm90-split-medium") return make_bf16_plain_or_fused<gemm::Sm90SplitReduce<gemm::Sm90MediumConfig>>(
      dtype, epilogue, "sm90 128x128, split-K in the kernel");
  if (kernel == "sm90-split-narrow") return make_bf16_plain_or_fused<gemm::Sm90SplitReduce<gemm::Sm90NarrowConfig>>(
      dtype, epilogue, "sm90 128x64, split-K in the kernel");
  if (kernel == "sm90-split-short") return make_bf16_plain_or_fused<gemm::Sm90SplitReduce<gemm::Sm90ShortConfig>>(
      dtype, epilogue, "sm90 ping-pong 64x64, split-K in the kernel");
  if (kernel == "sm90-pingpong-multicast") return make_bf16_plain_or_fused<gemm::Sm90PingPongMulticastConfig>(
      dtype, epilogue, "sm90 ping-pong 128x128, 2-CTA multicast");
  if (kernel == "sm90-pingpong-wide-multicast") return make_bf16_plain_or_fused<gemm::Sm90PingPongWideMulticastConfig>(
      dtype, epilogue, "sm90 ping-pong 64x256, 2-CTA multicast");
  if (kernel == "sm90-pingpong" || kernel == "sm90-pingpong-wide") {
    if (dtype != DType::kBF16) return nullptr;
    bool const wide = kernel == "sm90-pingpong-wide";
    if (epilogue == EpilogueKind::kNone) {
      using Plain = PlainEpilogue<bfloat16_t>;
      return wide ? make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90PingPongWideConfig>(
                        "bf16", "sm90 ping-pong 64x256")
                  : make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90PingPongConfig>(
                        "bf16", "sm90 ping-pong 128x128");
    }
    if (epilogue == EpilogueKind::kBiasGeluResidual) {
      using Fused = BiasGeluResidualEpilogue<bfloat16_t>;
      return wide ? make_sm90<bfloat16_t, Fused, EpilogueKind::kBiasGeluResidual, gemm::Sm90PingPongWideConfig>(
                        "bf16", "sm90 ping-pong 64x256")
                  : make_sm90<bfloat16_t, Fused, EpilogueKind::kBiasGeluResidual, gemm::Sm90PingPongConfig>(
                        "bf16", "sm90 ping-pong 128x128");
    }
    return nullptr;
  }
  if (kernel != "sm90") {
    if (dtype != DType::kBF16 || epilogue != EpilogueKind::kNone) return nullptr;
    using Plain = PlainEpilogue<bfloat16_t>;
    if (kernel == "sm90-large") {
      return make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90LargeConfig>("bf16", "sm90 128x256");
    }
    if (kernel == "sm90-medium") {
      return make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90MediumConfig>("bf16", "sm90 128x128");
    }
    if (kernel == "sm90-narrow") {
      return make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90NarrowConfig>("bf16", "sm90 128x64");
    }
    if (kernel == "sm90-short") {
      return make_sm90<bfloat16_t, Plain, EpilogueKind::kNone, gemm::Sm90ShortConfig>("bf16", "sm90 ping-pong 64x64");
    }
    return nullptr;
  }
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kNone) {
    return make_sm90<bfloat16_t, PlainEpilogue<bfloat16_t>, EpilogueKind::kNone, Sm90AutoConfig>("bf16", "sm90 TMA + WGMMA");
  }
  if (dtype == DType::kBF16 && epilogue == EpilogueKind::kBiasGeluResidual) {
    return make_sm90<bfloat16_t, BiasGeluResidualEpilogue<bfloat16_t>, EpilogueKind::kBiasGeluResidual,
                     Sm90AutoConfig>("bf16", "sm90 TMA + WGMMA");
  }
  if (dtype == DType::kFP16 && epilogue == EpilogueKind::kNone) {
    return make_sm90<half_t, PlainEpilogue<half_t>, EpilogueKind::kNone, Sm90AutoConfig>("fp16", "sm90 TMA + WGMMA");
  }
  return nullptr;
}

}  // namespace tilefuse::bench
