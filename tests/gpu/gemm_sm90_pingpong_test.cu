// gemm::GemmSm90 with the ping-pong schedule (Sm90PingPongConfig: 128x128 per consumer warpgroup;
// Sm90PingPongWideConfig: 64x256): the two consumer warpgroups take alternate tiles of a block and
// hand the tensor cores to each other, each skipping the other's k-tiles in the shared ring. Besides
// the usual lists, cases aimed at that bookkeeping: k-tile counts below, at and just above the ring's
// depth and ones that are not a multiple of it (the skipped tile's length moves the phase), blocks
// with one tile (warpgroup 1 idle) and with an odd number of tiles (warpgroup 0 runs one more), and
// fused trees that read the output coordinate (each warpgroup's rows cover the whole tile).
#include "gemm_sm90_test_cases.hpp"

namespace tilefuse::gpu_test {
namespace {

TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16Shapes, bfloat16_t, specs::StoreD, Sm90PingPongConfig, shape_sweep_cases(1000))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16Persistent, bfloat16_t, specs::StoreD, Sm90PingPongConfig, persistent_cases(1001))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16Turns, bfloat16_t, specs::StoreD, Sm90PingPongConfig, pingpong_cases(1002))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Fp16Strides, half_t, specs::StoreD, Sm90PingPongConfig, stride_cases(1003))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16WideShapes, bfloat16_t, specs::StoreD, Sm90PingPongWideConfig, shape_sweep_cases(1004))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16WidePersistent, bfloat16_t, specs::StoreD, Sm90PingPongWideConfig, persistent_cases(1005))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16WideTurns, bfloat16_t, specs::StoreD, Sm90PingPongWideConfig, pingpong_cases(1006))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16ResidualRelu, bfloat16_t, specs::ResidualRelu, Sm90PingPongConfig, epilogue_cases(1007))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16RegionSigmoidTanh, bfloat16_t, specs::RegionSigmoidTanh, Sm90PingPongConfig, epilogue_cases(1008))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Fp16AuxAmaxWide, half_t, specs::AuxAmax, Sm90PingPongWideConfig, epilogue_cases(1009))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16GeluTanhWide, bfloat16_t, specs::GeluTanhD, Sm90PingPongWideConfig, epilogue_cases(1010))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16RegionSigmoidTanhTurns, bfloat16_t, specs::RegionSigmoidTanh, Sm90PingPongConfig, pingpong_cases(1011))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Bf16BiasRowRelu, bfloat16_t, specs::BiasRowRelu, Sm90PingPongConfig, epilogue_cases(1013))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90PingPong, Fp16RowScaleColumnBiasWideTurns, half_t, specs::RowScaleColumnBias, Sm90PingPongWideConfig, pingpong_cases(1014))

// Clusters of two CTAs sharing B by TMA multicast (Sm90Multicast): pairs of tile rows, including odd
// tile-row counts (the last pair's second CTA loads zeros and stores nothing), k-tile counts around the
// ring depth (each stage is freed by the consumers of both CTAs).
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Bf16PingPongShapes, bfloat16_t, specs::StoreD, gemm::Sm90PingPongMulticastConfig, shape_sweep_cases(1020))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Bf16PingPongPersistent, bfloat16_t, specs::StoreD, gemm::Sm90PingPongMulticastConfig, persistent_cases(1021))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Bf16PingPongTurns, bfloat16_t, specs::StoreD, gemm::Sm90PingPongMulticastConfig, pingpong_cases(1022))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Fp16PingPongStrides, half_t, specs::StoreD, gemm::Sm90PingPongMulticastConfig, stride_cases(1023))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Bf16ResidualRelu, bfloat16_t, specs::ResidualRelu, gemm::Sm90PingPongMulticastConfig, epilogue_cases(1024))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Multicast, Bf16CooperativeLarge, bfloat16_t, specs::StoreD, gemm::Sm90Multicast<gemm::Sm90LargeConfig>, persistent_cases(1025))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Bf16StorePingPongMulticast, bfloat16_t, specs::StoreD, gemm::Sm90PingPongMulticastConfig, small_cases(1026))

// The compute-sanitizer subset: named-barrier turns and the shared ring under racecheck.
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Bf16StorePingPong, bfloat16_t, specs::StoreD, Sm90PingPongConfig, small_cases(1012))
TILEFUSE_GPU_GEMM_SM90_TEST(GemmSm90Small, Bf16ResidualReluPingPongWide, bfloat16_t, specs::ResidualRelu, Sm90PingPongWideConfig, small_cases(1013))

}  // namespace
}  // namespace tilefuse::gpu_test
