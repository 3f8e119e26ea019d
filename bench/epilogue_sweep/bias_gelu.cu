#include "sweep.cuh"

namespace tilefuse::bench::sweep {

void sweep_bias_gelu(Buffers const& buffers, Shape shape) {
  compare_with_plain<trees::BiasGelu, gemm::Sm90LargeConfig, true, false>("bias+gelu", "coop 128x256", buffers, shape);
  compare_with_plain<trees::BiasGelu, gemm::Sm90PingPongWideConfig, true, false>("bias+gelu", "ping-pong 64x256", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
