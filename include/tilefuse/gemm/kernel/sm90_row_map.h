// D's rows at mapped addresses: the output rows of a convolution are pixels (n, i, j) of an N x P x Q grid,
// and an OutputRowMap stores the pixels of a crop of that grid at a strided sub-grid of another tensor
// instead of at row * ld. A strided dgrad by phases (conv/device/conv2d_dgrad_phases.hpp) stores each
// phase's fprop in place this way: pixel (n, crop_h + i, crop_w + j) of the phase's output is dx's pixel
// (n, a + stride_h i, b + stride_w j), so no intermediate is written and no strided copy runs
// (docs/notes/conv_sm90.md, the in-place store). Only the packed epilogue's lane stores read it (rows
// by TMA stores are boxes, which a mapped row is not): a launch that sets a map leaves d_by_tma 0 (checking it in
// the kernel cost spills); the operand sources that carry it say so.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

// Division of a row index (below 2^31) by a fixed divisor d, by a multiply and a shift: q = (umulhi(x, magic) +
// x) >> shift with shift = ceil(log2 d) and magic = 2^32 (2^shift - d) / d + 1 (Granlund and Montgomery's
// round-up method; exact for x, d < 2^31). Two per stored group: a plain division costs about 20 instructions.
struct RowDivisor {
  index_t magic = 0;
  index_t shift = 0;
};

TILEFUSE_HOST_DEVICE constexpr RowDivisor row_divisor(index_t d) {
  RowDivisor v;
  while ((index_t{1} << v.shift) < d) ++v.shift;
  v.magic = static_cast<index_t>(((index_t{1} << 32) * ((index_t{1} << v.shift) - d)) / d + 1);
  return v;
}

TILEFUSE_HOST_DEVICE inline cuda::std::uint32_t divide_row(cuda::std::uint32_t x, RowDivisor const& d) {
  cuda::std::uint32_t const high =
      static_cast<cuda::std::uint32_t>((static_cast<cuda::std::uint64_t>(x) * static_cast<cuda::std::uint32_t>(d.magic)) >> 32);
  return (high + x) >> d.shift;
}

// All in elements of D. pixels_q == 0: off (row * ld).
struct OutputRowMap {
  index_t pixels_q = 0;      // Q: output columns per output row of the grid
  index_t pixels_p = 0;      // P: output rows per image
  index_t crop_h = 0;        // the first grid row / column that is stored
  index_t crop_w = 0;
  index_t extent_h = 0;      // how many grid rows / columns from the crop on are stored
  index_t extent_w = 0;
  index_t image_pitch = 0;   // from image n to n + 1 in D
  index_t row_pitch = 0;     // from stored row i to i + 1
  index_t column_pitch = 0;  // from stored column j to j + 1
  index_t origin = 0;        // where stored pixel (0, 0, 0) goes
  RowDivisor by_q;           // row_divisor(pixels_q)
  RowDivisor by_pq;          // row_divisor(pixels_p * pixels_q)
};

// Where output row `row` (a pixel of the grid) goes in D, or -1 where it lies outside the crop.
TILEFUSE_HOST_DEVICE inline index_t mapped_row_offset(OutputRowMap const& map, index_t row, index_t ld) {
  if (map.pixels_q == 0) return row * ld;
  // 32-bit arithmetic: the device API keeps N * P * Q below 2^31.
  int const q_count = static_cast<int>(map.pixels_q);
  int const pq = static_cast<int>(map.pixels_p) * q_count;
  int const r = static_cast<int>(row);
  int const n = static_cast<int>(divide_row(static_cast<cuda::std::uint32_t>(r), map.by_pq));
  int const pixel = r - n * pq;
  int const row_of_pixel = static_cast<int>(divide_row(static_cast<cuda::std::uint32_t>(pixel), map.by_q));
  int const i = row_of_pixel - static_cast<int>(map.crop_h);
  int const j = pixel - row_of_pixel * q_count - static_cast<int>(map.crop_w);
  if (i < 0 || j < 0 || i >= map.extent_h || j >= map.extent_w) return -1;
  return map.origin + n * map.image_pitch + i * map.row_pitch + j * map.column_pitch;
}

}  // namespace tilefuse::gemm::sm90
