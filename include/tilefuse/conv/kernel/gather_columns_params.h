// The im2col gather's parameters and grid (kernel/gather_columns.h), apart from the kernel so that host code
// compiled without nvcc (tilefuse._C, which gives Python the launch) includes them too.
#pragma once

#include <tilefuse/core/coord.h>

namespace tilefuse::conv {

inline constexpr int kGatherThreads = 256;
inline constexpr int kGatherVector = 8;  // elements per thread: one 16-byte store of 16-bit elements
inline constexpr index_t kGatherMaxGridX = 0x7fffffff;

// dst (pixels x columns, row-major: an NHWC image of `columns` channels) gets, at pixel (n * P + p) * Q + q
// and column (r * S + s) * channels + c, x[n, p * stride_h - pad_h + r * dilation_h, q * stride_w - pad_w +
// s * dilation_w, c] of the NHWC x with x_channels channels (0 outside the image), and zeros in the columns
// past R * S * channels: every element is written.
struct GatherColumnsParams {
  void const* src = nullptr;
  void* dst = nullptr;
  index_t N = 0, H = 0, W = 0, x_channels = 0, channels = 0;
  index_t R = 0, S = 0, P = 0, Q = 0;
  index_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  index_t columns = 0;  // >= R * S * channels, a multiple of kGatherVector
};

// Blocks of kGatherThreads threads, one per kGatherVector columns of a pixel; 0 where the grid cannot hold them.
TILEFUSE_HOST_DEVICE constexpr index_t gather_columns_grid(index_t pixels, index_t columns) {
  index_t const vectors = pixels * (columns / kGatherVector);
  index_t const blocks = (vectors + kGatherThreads - 1) / kGatherThreads;
  return blocks <= kGatherMaxGridX ? blocks : 0;
}

}  // namespace tilefuse::conv
