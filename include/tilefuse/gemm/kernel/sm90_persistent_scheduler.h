// The Hopper kernels' tile scheduler: persistent blocks (or clusters of kClusterM blocks) walk the output
// tiles index = first_tile_index(), + tile_stride(), ... in the grouped rasterization of tile_scheduler.h;
// batches follow one another. A part of gemm::sm90::GemmKernel (sm90_gemm.h), which owns the tile counts.
#pragma once

#include <tilefuse/arch/cluster.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/gemm/kernel/tile_scheduler.h>

namespace tilefuse::gemm::sm90 {

// One output tile: its tile row and column and its batch.
struct Tile {
  int m = 0;  // tile row
  int n = 0;  // tile column
  int batch = 0;
};

template <int kClusterM, int kGroupRows>
struct PersistentTileScheduler {
  // With a cluster, `index` counts tile-row pairs: the CTA of rank r takes row 2 * pair + r (a row past
  // the last one loads zeros and stores nothing).
  TILEFUSE_DEVICE static Tile tile_of(int tiles_m, int tiles_n, int index) {
    int const rows = (tiles_m + kClusterM - 1) / kClusterM;
    int const per_batch = rows * tiles_n;
    int const batch = index / per_batch;
    TileCoord const c = GroupedRasterization<kGroupRows>::tile_of(index - batch * per_batch, rows, tiles_n);
    int const m = kClusterM == 1 ? c.m : c.m * kClusterM + arch::cluster_rank();
    return Tile{m, c.n, batch};
  }
  // This block's (or cluster's) first tile and the step between its tiles.
  TILEFUSE_DEVICE static int first_tile_index() {
    return kClusterM == 1 ? static_cast<int>(blockIdx.x) : arch::cluster_id_x();
  }
  TILEFUSE_DEVICE static int tile_stride() {
    return kClusterM == 1 ? static_cast<int>(gridDim.x) : arch::cluster_count_x();
  }
};

}  // namespace tilefuse::gemm::sm90
