// The im2col of an NHWC activation into an NHWC image of R*S*C channels (a pixel's filter window, in the
// filter's (r, s, c) order), for the wgrad of few channels (conv/device/conv2d_wgrad_im2col.hpp), which then
// runs as the Hopper wgrad of a 1x1 convolution over it. One thread per 8 consecutive columns of a pixel: its
// reads are neighbours in x (a tap's channels, the next taps of a row), its store one 16-byte vector, and a
// warp's stores consecutive. Parameters and grid: gather_columns_params.h.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/conv/kernel/gather_columns_params.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::conv {

template <class T>
__global__ void __launch_bounds__(kGatherThreads) gather_columns_kernel(GatherColumnsParams const p) {
  static_assert(sizeof(T) * kGatherVector == 16, "one 16-byte store per thread");
  T const* const x = static_cast<T const*>(p.src);
  index_t const vectors_per_pixel = p.columns / kGatherVector;
  index_t const vector = index_t{blockIdx.x} * kGatherThreads + threadIdx.x;
  index_t const pixel = vector / vectors_per_pixel;
  if (pixel >= p.N * p.P * p.Q) return;
  index_t const first = (vector % vectors_per_pixel) * kGatherVector;
  index_t const q = pixel % p.Q;
  index_t const p_row = (pixel / p.Q) % p.P;
  index_t const n = pixel / (p.P * p.Q);
  index_t const taps = p.R * p.S * p.channels;
  T const* const image = x + n * p.H * p.W * p.x_channels;
  alignas(16) T out[kGatherVector];
  // The first column's tap (r, s) and channel c, stepped along with the column.
  index_t c = first % p.channels;
  index_t s = (first / p.channels) % p.S;
  index_t r = first / (p.channels * p.S);
#pragma unroll
  for (int j = 0; j < kGatherVector; ++j) {
    T value{};  // zero bits: outside the image, or past the taps
    if (first + j < taps) {
      index_t const h = p_row * p.stride_h - p.pad_h + r * p.dilation_h;
      index_t const w = q * p.stride_w - p.pad_w + s * p.dilation_w;
      if (h >= 0 && h < p.H && w >= 0 && w < p.W) value = image[(h * p.W + w) * p.x_channels + c];
      if (++c == p.channels) {
        c = 0;
        if (++s == p.S) s = 0, ++r;
      }
    }
    out[j] = value;
  }
  reinterpret_cast<uint4*>(p.dst)[pixel * vectors_per_pixel + first / kGatherVector] = *reinterpret_cast<uint4 const*>(out);
}

}  // namespace tilefuse::conv
