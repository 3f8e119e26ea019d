// The im2col of an NHWC activation into K-major columns (the Hopper GEMM's B operand) for the wgrad of few
// channels (conv/device/conv2d_wgrad_im2col.hpp). One thread per output column (pixel), walking the rows
// (filter taps and channels): each row's stores are consecutive across the block, and the block's reads of x
// (a few image rows) stay in L1 across the rows. Parameters and grid: gather_columns_params.h.
#pragma once

#include <tilefuse/conv/kernel/gather_columns_params.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::conv {

template <class T>
__global__ void __launch_bounds__(kGatherThreads) gather_columns_kernel(GatherColumnsParams const p) {
  T const* const x = static_cast<T const*>(p.src);
  T* const out = static_cast<T*>(p.dst);
  index_t const column = index_t{blockIdx.x} * kGatherThreads + threadIdx.x;
  if (column >= p.padded_k) return;
  index_t const pixels = p.N * p.P * p.Q;
  bool const real = column < pixels;
  index_t const q = column % p.Q;
  index_t const p_row = (column / p.Q) % p.P;
  index_t const n = column / (p.P * p.Q);
  index_t const h0 = p_row * p.stride_h - p.pad_h;
  index_t const w0 = q * p.stride_w - p.pad_w;
  T const* const image = x + (real ? n : 0) * p.H * p.W * p.x_channels;  // padding columns read nothing
  index_t const taps = p.R * p.S * p.channels;
  index_t row = 0;
  for (index_t r = 0; r < p.R; ++r) {
    index_t const h = h0 + r * p.dilation_h;
    bool const h_in = real && h >= 0 && h < p.H;
    for (index_t s = 0; s < p.S; ++s) {
      index_t const w = w0 + s * p.dilation_w;
      bool const in = h_in && w >= 0 && w < p.W;
      T const* const at = in ? image + (h * p.W + w) * p.x_channels : image;
      for (index_t c = 0; c < p.channels; ++c, ++row) out[row * p.padded_k + column] = in ? at[c] : T{};
    }
  }
  for (row = taps; row < p.rows; ++row) out[row * p.padded_k + column] = T{};  // T{}: zero bits
}

}  // namespace tilefuse::conv
