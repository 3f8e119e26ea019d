// gemm::GemmSm90 with the packed epilogue's residual loaded by TMA from the producer (Sm90TmaResidual, the
// planner's choice for aligned residuals; gemm_select_test.cu runs it through gemm::Gemm): trees that read a 16-bit residual C, on the epilogue and
// persistent case lists with every leading dimension and batch stride a multiple of 8 (what the
// residual's tensor map needs), shapes that are not tile multiples (the sub-tiles past the output
// arrive as zeros and are skipped), and persistent blocks (the slots' phases across tiles).
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

static_assert(gemm::sm90::GemmKernel<bfloat16_t, specs::ResidualRelu::Tree<bfloat16_t>, Sm90LargeTmaAuxConfig>::kTmaAux,
              "the TMA residual config loads the residual by TMA");
static_assert(!gemm::sm90::GemmKernel<bfloat16_t, specs::ResidualRelu::Tree<bfloat16_t>, Sm90LargePackedLoadsConfig>::kTmaAux,
              "packed loads alone do not");

// The cases with A, B, C and D padded to multiples of 8 elements (batch strides too) and no split-K.
std::vector<GemmCase> tma_aux_cases(std::vector<GemmCase> cases) {
  for (GemmCase& c : cases) {
    c.ld_a = c.ld_b = c.ld_epilogue = Ld::kAligned;
    if (c.batch_gap % 8 != 0) c.batch_gap = (c.batch_gap / 8 + 1) * 8;
    c.split_k = 1;
  }
  return cases;
}

TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluLarge, bfloat16_t, specs::ResidualRelu, Sm90LargeTmaAuxConfig, tma_aux_cases(epilogue_cases(1300)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Fp16ResidualReluMedium, half_t, specs::ResidualRelu, Sm90MediumTmaAuxConfig, tma_aux_cases(epilogue_cases(1301)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16AlphaBetaCNarrow, bfloat16_t, specs::AlphaBetaC, Sm90NarrowTmaAuxConfig, tma_aux_cases(epilogue_cases(1302)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluPersistent, bfloat16_t, specs::ResidualRelu, Sm90LargeTmaAuxConfig, tma_aux_cases(persistent_cases(1303)))
// The 64x256 ping-pong tile with the residual by TMA (each consumer warpgroup's ring filled by a producer warp
// of its own): what the fused convs run, a candidate for the fused GEMM (the bench's
// --kernel sm90-tma-residual-pingpong-wide). Persistent and turn-taking lists: the rings' phases across tiles.
using Sm90PingPongWideTmaAuxConfig = gemm::Sm90TmaResidual<gemm::Sm90PingPongWideConfig>;
static_assert(gemm::sm90::GemmKernel<bfloat16_t, specs::ResidualRelu::Tree<bfloat16_t>, Sm90PingPongWideTmaAuxConfig>::kTmaAux,
              "the 64-row ping-pong tile loads the residual by TMA");
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluPingPongWide, bfloat16_t, specs::ResidualRelu, Sm90PingPongWideTmaAuxConfig, tma_aux_cases(epilogue_cases(1305)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Fp16AlphaBetaCPingPongWidePersistent, half_t, specs::AlphaBetaC, Sm90PingPongWideTmaAuxConfig, tma_aux_cases(persistent_cases(1306)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluPingPongWideTurns, bfloat16_t, specs::ResidualRelu, Sm90PingPongWideTmaAuxConfig, tma_aux_cases(pingpong_cases(1307)))
// The 64x64 ping-pong tile (the planner's for a few hundred rows) with the residual by TMA: persistent and
// turn-taking lists.
using Sm90ShortTmaAuxConfig = gemm::Sm90TmaResidual<gemm::Sm90ShortConfig>;
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluShortPersistent, bfloat16_t, specs::ResidualRelu, Sm90ShortTmaAuxConfig, tma_aux_cases(persistent_cases(1308)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Fp16AlphaBetaCShortTurns, half_t, specs::AlphaBetaC, Sm90ShortTmaAuxConfig, tma_aux_cases(pingpong_cases(1309)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluNarrowPersistent, bfloat16_t, specs::ResidualRelu, Sm90NarrowTmaAuxConfig, tma_aux_cases(persistent_cases(1304)))
// The 128x96 and 128x160 tiles with the residual by TMA (the fused GEMM's default on them).
using Sm90MidTmaAuxConfig = gemm::Sm90TmaResidual<gemm::Sm90MidConfig>;
using Sm90WideTmaAuxConfig = gemm::Sm90TmaResidual<gemm::Sm90WideConfig>;
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluMid, bfloat16_t, specs::ResidualRelu, Sm90MidTmaAuxConfig, tma_aux_cases(epilogue_cases(1311)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Fp16AlphaBetaCMidPersistent, half_t, specs::AlphaBetaC, Sm90MidTmaAuxConfig, tma_aux_cases(persistent_cases(1312)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Bf16ResidualReluWide, bfloat16_t, specs::ResidualRelu, Sm90WideTmaAuxConfig, tma_aux_cases(epilogue_cases(1313)))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90TmaAux, Fp16AlphaBetaCWidePersistent, half_t, specs::AlphaBetaC, Sm90WideTmaAuxConfig, tma_aux_cases(persistent_cases(1314)))

}  // namespace
}  // namespace tilefuse::gpu_test
