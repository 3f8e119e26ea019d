// The im2col gather's parameters and grid (kernel/gather_columns.h), apart from the kernel so that host code
// compiled without nvcc (tilefuse._C, which gives Python the launch) includes them too.
#pragma once

#include <tilefuse/core/coord.h>

namespace tilefuse::conv {

inline constexpr int kGatherThreads = 256;  // one pixel (column of the output) per thread
inline constexpr index_t kGatherMaxGridX = 0x7fffffff;

// dst (rows x padded_k, row-major) gets, at row (r * S + s) * channels + c and column (n * P + p) * Q + q,
// x[n, p * stride_h - pad_h + r * dilation_h, q * stride_w - pad_w + s * dilation_w, c] of the NHWC x with
// x_channels channels (0 outside the image), and zeros in the rows past R * S * channels and the columns
// past N * P * Q: every element is written.
struct GatherColumnsParams {
  void const* src = nullptr;
  void* dst = nullptr;
  index_t N = 0, H = 0, W = 0, x_channels = 0, channels = 0;
  index_t R = 0, S = 0, P = 0, Q = 0;
  index_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  index_t rows = 0;      // >= R * S * channels
  index_t padded_k = 0;  // >= N * P * Q
};

// Blocks of kGatherThreads columns; 0 where the grid cannot hold them.
TILEFUSE_HOST_DEVICE constexpr index_t gather_columns_grid(index_t padded_k) {
  index_t const blocks = (padded_k + kGatherThreads - 1) / kGatherThreads;
  return blocks <= kGatherMaxGridX ? blocks : 0;
}

}  // namespace tilefuse::conv
