// The packing copy's parameters and grid (kernel/pack_k_major.h), apart from the kernel so that host code
// compiled without nvcc (tilefuse._C, which gives Python the same launch) includes them too.
#pragma once

#include <tilefuse/core/coord.h>

namespace tilefuse::gemm {

// 64 x 64 tiles: each tile row is a 128-byte run of 16-bit elements (two warps' halves; 32 x 32 tiles had
// 64-byte runs, about 1 TB/s on a 206 MB transpose: docs/notes/conv_sm90.md, the stem's wgrad).
inline constexpr int kPackTile = 64;
inline constexpr int kPackRowsPerPass = 4;
inline constexpr int kPackThreads = kPackTile * kPackRowsPerPass;
inline constexpr index_t kPackMaxGridX = 0x7fffffff;
inline constexpr index_t kPackMaxGridZ = 65535;  // blocks step over the batches beyond it

// Element (r, c) of matrix b at src[b * batch_stride + r * row_stride + c * k_stride] goes to
// dst[(b * rows + r) * padded_k + c], zeros for k <= c < padded_k. Any strides: the kernel reads along
// whichever of k_stride and row_stride is 1 (along k when neither).
struct PackKMajorParams {
  void const* src = nullptr;
  void* dst = nullptr;
  index_t rows = 0;
  index_t k = 0;
  index_t padded_k = 0;
  index_t row_stride = 0;
  index_t k_stride = 0;
  index_t batch_stride = 0;
  index_t batches = 0;
  index_t row_tiles = 0;  // grid x = row_tiles * k tiles (a block's tile: x % row_tiles, x / row_tiles)
};

// The launch of one packing copy: grid (x, 1, z) of kPackThreads-thread blocks; x = 0 where the grid cannot
// hold the tiles (more than kPackMaxGridX).
struct PackKMajorLaunch {
  PackKMajorParams params;
  index_t grid_x = 0;
  index_t grid_z = 0;
};

TILEFUSE_HOST_DEVICE constexpr PackKMajorLaunch pack_k_major_launch(void const* src, index_t rows, index_t k,
                                                                   index_t row_stride, index_t k_stride,
                                                                   index_t batches, index_t batch_stride, void* dst,
                                                                   index_t padded_k) {
  PackKMajorLaunch launch;
  index_t const row_tiles = (rows + kPackTile - 1) / kPackTile;
  index_t const k_tiles = (padded_k + kPackTile - 1) / kPackTile;
  launch.params = {src, dst, rows, k, padded_k, row_stride, k_stride, batch_stride, batches, row_tiles};
  bool const fits = k_tiles == 0 || row_tiles <= kPackMaxGridX / k_tiles;
  launch.grid_x = fits ? row_tiles * k_tiles : 0;
  launch.grid_z = batches < kPackMaxGridZ ? batches : kPackMaxGridZ;
  return launch;
}

}  // namespace tilefuse::gemm
