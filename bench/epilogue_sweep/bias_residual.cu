#include "sweep.cuh"

namespace tilefuse::bench::sweep {

void sweep_bias_residual(Buffers const& buffers, Shape shape) {
  compare_with_plain<trees::BiasResidual, gemm::Sm90LargeConfig, true, true>("bias+residual", "coop 128x256", buffers, shape);
  compare_with_plain<trees::BiasResidual, gemm::Sm90PingPongWideConfig, true, true>("bias+residual", "ping-pong 64x256", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
