#include "sweep.cuh"

namespace tilefuse::bench::sweep {

void sweep_residual(Buffers const& buffers, Shape shape) {
  compare_with_plain<trees::AddResidual, gemm::Sm90LargeConfig, false, true>("residual", "coop 128x256", buffers, shape);
  compare_with_plain<trees::AddResidual, gemm::Sm90PingPongWideConfig, false, true>("residual", "ping-pong 64x256", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
