// What gemm::GemmSm90::describe() says of a plan, as a function of values: the kernel's constants
// (Sm90GemmKernelFacts, read off its types in C++ and off the compiled kernel's layout by tilefuse._C, so
// that Python's describe() is the same text) and the plan's tiles, grid, D store and split. Host code.
#pragma once

#include <string>

#include <tilefuse/core/status.hpp>
#include <tilefuse/core/coord.h>
#include <tilefuse/gemm/gemm_config.h>

namespace tilefuse::gemm {

struct Sm90GemmKernelFacts {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int stages = 0;               // the ring's depth
  int consumer_warpgroups = 0;  // math warpgroups
  bool ping_pong = false;       // each consumer warpgroup on its own tile
  int cluster_m = 1;            // 2: pairs along M sharing B by TMA multicast
  bool tma_aux = false;         // the residual loaded by TMA beside the operands
  bool reduce_splits = false;   // split-K summed in the kernel
};

template <class Config, class Kernel>
Sm90GemmKernelFacts sm90_gemm_kernel_facts() {
  return {Config::kTileM,     Config::kTileN,      Config::kTileK,
          Kernel::kStages,    Config::kConsumerWarpgroups, Config::kSchedule == Sm90Schedule::kPingPong,
          Config::kClusterM,  Kernel::kTmaAux,     Kernel::kReduceSplits};
}

// tiles: the plan's tiles (tile pairs with clusters of 2); grid: its blocks; splits: the split count where the
// kernel sums K-splits (the problem's batch then).
inline std::string describe_sm90_gemm(Sm90GemmKernelFacts const& k, index_t tiles, index_t grid, bool d_by_tma,
                                      index_t splits) {
  return status_message("sm90 TMA + WGMMA GEMM (warp-specialized, persistent), tile ", k.tile_m, "x", k.tile_n, "x",
                        k.tile_k, ", ", k.stages, " stages, ", k.consumer_warpgroups, " consumer warpgroups",
                        k.ping_pong ? " (ping-pong)" : "",
                        k.cluster_m > 1 ? ", clusters of 2 along M sharing B by TMA multicast" : "", ", ", tiles,
                        k.cluster_m > 1 ? " tile pairs on " : " tiles on ", grid, " blocks",
                        k.tma_aux ? ", the residual loaded by TMA" : "", d_by_tma ? ", D stored by TMA" : "",
                        k.reduce_splits ? status_message(", split-K ", splits, " summed in the kernel") : std::string());
}

}  // namespace tilefuse::gemm
