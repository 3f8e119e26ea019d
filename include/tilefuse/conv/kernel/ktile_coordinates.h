// Where a TMA conv source's k-tiles start, for the Hopper implicit GEMM (sm90_implicit_gemm.h): the
// im2col copies' window origin of an output pixel, and the k-tile coordinates the loaders step from one
// k-tile to the next (additions and carries: the single producer thread's instructions per k-tile are on
// the copies' critical path). Host-and-device, so tests/unit/conv checks the steps against division.
#pragma once

#include <tilefuse/conv/implicit_gemm.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::conv::sm90 {

// The im2col copy's origin for output pixel `pixel` (an index into N*P*Q): its image n and where its
// filter window's top-left tap lies in the activation, (h, w) = (p * stride_h - pad_h, q * stride_w -
// pad_w), which may be negative.
struct WindowOrigin {
  int n, h, w;
  TILEFUSE_HOST_DEVICE static WindowOrigin of(ConvGeometry const& g, int pixel) {
    int const pq_count = g.P * g.Q;
    int const n = pixel / pq_count;
    int const pq = pixel - n * pq_count;
    int const p = pq / g.Q;
    return {n, p * g.stride_h - g.pad_h, (pq - p * g.Q) * g.stride_w - g.pad_w};
  }
};

// An output pixel walked `step` pixels at a time across rows and images, as (n, p, q) with the step
// split once into whole images, rows and columns, so a step is additions and two carries, no division:
// wgrad's k-tiles are TileK consecutive output pixels, and the im2col copies start at the first one's
// window origin.
struct PixelWalk {
  int n = 0, p = 0, q = 0;                 // the current pixel
  int step_n = 0, step_p = 0, step_q = 0;  // step = step_n * P*Q + step_p * Q + step_q, step_p < P, step_q < Q
  PixelWalk() = default;
  TILEFUSE_HOST_DEVICE PixelWalk(ConvGeometry const& g, int pixel, int step) {
    int const pq_count = g.P * g.Q;
    n = pixel / pq_count;
    int const pq = pixel - n * pq_count;
    p = pq / g.Q;
    q = pq - p * g.Q;
    step_n = step / pq_count;
    int const rest = step - step_n * pq_count;
    step_p = rest / g.Q;
    step_q = rest - step_p * g.Q;
  }
  TILEFUSE_HOST_DEVICE void advance(ConvGeometry const& g) {
    q += step_q;
    int const carry_q = q >= g.Q;
    if (carry_q) q -= g.Q;
    p += step_p + carry_q;  // at most 2P - 1: one carry
    int const carry_p = p >= g.P;
    if (carry_p) p -= g.P;
    n += step_n + carry_p;
  }
  TILEFUSE_HOST_DEVICE WindowOrigin origin(ConvGeometry const& g) const {
    return {n, p * g.stride_h - g.pad_h, q * g.stride_w - g.pad_w};
  }
};

// A k-tile's filter tap and first channel when k-tiles lie within one tap (`channels` per tap, a multiple
// of the k-tile): tap = k0 / channels, (r, s) = (tap / S, tap % S), c0 = k0 % channels.
struct KTileTap {
  int c0 = 0, tap = 0, r = 0, s = 0;  // k-tile 0's
  // To the next k-tile, `step` channels on: the tap's next channels, or the next tap's first.
  TILEFUSE_HOST_DEVICE void advance(int step, int channels, int filter_width) {
    c0 += step;
    if (c0 >= channels) {
      c0 = 0;
      ++tap;
      if (++s == filter_width) s = 0, ++r;
    }
  }
};

}  // namespace tilefuse::conv::sm90
