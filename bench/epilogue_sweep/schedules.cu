#include <cstdio>

#include "sweep.cuh"

namespace tilefuse::bench::sweep {

namespace {

template <class Tree, bool kBias, bool kResidual>
void compare_schedules(char const* tree, Buffers const& buffers, Shape shape) {
  using Coop = gemm::Sm90LargeConfig;
  using PingPong = gemm::Sm90PingPongWideConfig;
  // A B B A: each kernel's mean position in the sequence is the same, so a linear drift cancels.
  double const coop1 = time_tree<Tree, Coop, kBias, kResidual>(buffers, shape);
  double const pp1 = time_tree<Tree, PingPong, kBias, kResidual>(buffers, shape);
  double const pp2 = time_tree<Tree, PingPong, kBias, kResidual>(buffers, shape);
  double const coop2 = time_tree<Tree, Coop, kBias, kResidual>(buffers, shape);
  double const coop = (coop1 + coop2) / 2, pp = (pp1 + pp2) / 2;
  std::printf("| %-20s | %6lldx%5lldx%5lld | %8.4f (%.4f, %.4f) | %8.4f (%.4f, %.4f) | %.3f |\n", tree,
              static_cast<long long>(shape.m), static_cast<long long>(shape.n), static_cast<long long>(shape.k), coop,
              coop1, coop2, pp, pp1, pp2, coop / pp);
  std::fflush(stdout);
}

}  // namespace

void sweep_schedules(Buffers const& buffers, Shape shape) {
  compare_schedules<trees::Plain, false, false>("plain", buffers, shape);
  compare_schedules<trees::BiasGeluResidual, true, true>("bias+gelu+residual", buffers, shape);
}

}  // namespace tilefuse::bench::sweep
