#include "sweep.cuh"

namespace tilefuse::bench::sweep {

void sweep_bias_gelu_residual(Buffers const& buffers, Shape shape) {
  compare_with_plain<trees::BiasGeluResidual, gemm::Sm90LargeConfig, true, true>("bias+gelu+residual", "coop 128x256", buffers, shape);
  compare_with_plain<trees::BiasGeluResidual, gemm::Sm90PingPongWideConfig, true, true>("bias+gelu+residual", "ping-pong 64x256", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
