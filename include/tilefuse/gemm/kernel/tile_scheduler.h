// Maps a threadblock to its output tile. Consecutive blocks walk down a group of kGroupRows tile rows
// before moving one tile column right, so blocks running at the same time share A rows and B columns
// in L2 (rasterization).
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm {

struct TileCoord {
  int m = 0;  // tile row
  int n = 0;  // tile column
};

template <int kGroupRows = 8>
struct GroupedRasterization {
  TILEFUSE_HOST_DEVICE static constexpr TileCoord tile_of(int block, int tiles_m, int tiles_n) {
    int const per_group = kGroupRows * tiles_n;
    int const group = block / per_group;
    int const first_m = group * kGroupRows;
    int const rows_here = tiles_m - first_m < kGroupRows ? tiles_m - first_m : kGroupRows;
    int const within = block % per_group;
    return TileCoord{first_m + within % rows_here, within / rows_here};
  }
};

}  // namespace tilefuse::gemm
