// The Hopper kernel's shared-memory plan for epilogue trees that read memory (sm90_gemm.h, "staged
// loads" and the packed epilogue), checked at compile time: the build fails if a change breaks one of
// these decisions.
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/kernel/sm90_gemm.h>

namespace tilefuse::staged_loads_check {

using namespace tilefuse::epilogue;
using gemm::sm90::GemmKernel;

using Plain = Store<"D", bfloat16_t, Acc>;
using Fused = Store<"D", bfloat16_t, Add<GeluTanh<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"C", bfloat16_t>>>;
using RowWise = Store<"D", bfloat16_t, Mul<Mul<ColBroadcast<"scale_a", float>, RowBroadcast<"scale_b", float>>, Acc>>;

template <class Kernel>
constexpr bool fits() {
  return Kernel::kSmemBytes <= 227 * 1024;
}

// A plain tree keeps the configured ring and stages nothing.
using LargePlain = GemmKernel<bfloat16_t, Plain, gemm::Sm90LargeConfig>;
static_assert(!LargePlain::kStagedLoads && LargePlain::kStages == gemm::Sm90LargeConfig::kStages && fits<LargePlain>());

// A plain 16-bit store takes the packed epilogue, and so does a scaled one (scalars are loaded once
// per tile); a tree with a matrix input (the residual) does not, unless packed loads are asked for.
static_assert(LargePlain::kPackedEpilogue);
static_assert(GemmKernel<bfloat16_t, Store<"D", bfloat16_t, Mul<Mul<Acc, Scalar<"a">>, Scalar<"b">>>, gemm::Sm90LargeConfig>::kPackedEpilogue);
static_assert(!GemmKernel<bfloat16_t, Fused, gemm::Sm90LargeConfig>::kPackedEpilogue);
// Trees whose only per-element loads are vectors (a bias, FP8's row-wise scales) take it too, on
// cooperative and ping-pong tiles, and stage nothing.
using BiasGelu = Store<"D", bfloat16_t, GeluTanh<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>>;
static_assert(GemmKernel<bfloat16_t, BiasGelu, gemm::Sm90LargeConfig>::kPackedVectors);
static_assert(GemmKernel<bfloat16_t, BiasGelu, gemm::Sm90PingPongWideConfig>::kPackedEpilogue);
static_assert(GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8LargeConfig>::kPackedEpilogue);
static_assert(!GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8LargeConfig>::kStagedLoads);
// With one column vector, each consumer warp stages the tile's values (TileN floats) in its own buffer.
static_assert(GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8LargeConfig>::kStagedColumn);
static_assert(GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8LargeConfig>::kLoadBytesPerWarp == 256 * 4);
static_assert(GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8PingPongConfig>::kStagedColumn);
static_assert(!GemmKernel<bfloat16_t, Fused, gemm::Sm90LargeConfig>::kPackedVectors);

// A fused tree stages 3 chunks and gives the 128x256 ring one stage (4 -> 3), never below 3.
using LargeFused = GemmKernel<bfloat16_t, Fused, gemm::Sm90LargeConfig>;
static_assert(LargeFused::kStagedLoads && LargeFused::kLoadChunks == 3 && LargeFused::kStages == 3 && fits<LargeFused>());
// Slots an odd number of 16-byte words apart: 8 lanes' 16-byte accesses hit 8 different bank groups.
static_assert(LargeFused::kLoadSlotBytes % 32 == 16 && LargeFused::kLoadSlotBytes >= static_cast<int>(sizeof(LargeFused::Loaded)));

using MediumFused = GemmKernel<bfloat16_t, Fused, gemm::Sm90MediumConfig>;
using NarrowFused = GemmKernel<bfloat16_t, Fused, gemm::Sm90NarrowConfig>;
static_assert(MediumFused::kStagedLoads && MediumFused::kStages >= 3 && fits<MediumFused>());
static_assert(NarrowFused::kStagedLoads && NarrowFused::kStages >= 3 && fits<NarrowFused>());

// Ping-pong loads in line (staging lost there, report v47b) and keeps its ring.
using PingPongFused = GemmKernel<bfloat16_t, Fused, gemm::Sm90PingPongWideConfig>;
static_assert(!PingPongFused::kStagedLoads && PingPongFused::kStages == gemm::Sm90PingPongWideConfig::kStages);

// Packed loads (opt-in): the residual staged in two slices per warp instead of the load slots, so the
// 128x256 tile keeps its 4-stage ring.
struct LargePackedLoadsConfig : gemm::Sm90LargeConfig {
  static constexpr bool kPackedLoads = true;
};
using LargePackedLoads = GemmKernel<bfloat16_t, Fused, LargePackedLoadsConfig>;
static_assert(LargePackedLoads::kPackedLoads && LargePackedLoads::kPackedEpilogue && !LargePackedLoads::kStagedLoads &&
              LargePackedLoads::kStages == gemm::Sm90LargeConfig::kStages && fits<LargePackedLoads>());
// A tree with two matrix inputs, or a 32-bit one, is not staged this way.
using TwoInputs = Store<"D", bfloat16_t, Add<Add<Acc, AuxLoad<"C", bfloat16_t>>, AuxLoad<"E", bfloat16_t>>>;
static_assert(!GemmKernel<bfloat16_t, TwoInputs, LargePackedLoadsConfig>::kPackedLoads);
static_assert(!GemmKernel<bfloat16_t, Store<"D", bfloat16_t, Add<Acc, AuxLoad<"C", float>>>, LargePackedLoadsConfig>::kPackedLoads);

// FP8 row-wise scales (two broadcast vectors) on the cooperative 128x256 tile still fit.
using Fp8RowWise = GemmKernel<float_e4m3_t, RowWise, gemm::Sm90Fp8LargeConfig>;
static_assert(Fp8RowWise::kStages >= 3 && fits<Fp8RowWise>());

}  // namespace tilefuse::staged_loads_check
