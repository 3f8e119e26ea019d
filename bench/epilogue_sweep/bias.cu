#include "sweep.cuh"

namespace tilefuse::bench::sweep {

void sweep_bias(Buffers const& buffers, Shape shape) {
  compare_with_plain<trees::AddBias, gemm::Sm90LargeConfig, true, false>("bias", "coop 128x256", buffers, shape);
  compare_with_plain<trees::AddBias, gemm::Sm90PingPongWideConfig, true, false>("bias", "ping-pong 64x256", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
