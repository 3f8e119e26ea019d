// Conv2dProblem: the shape of a 2-D convolution (NHWC activations, KRSC filters) and the extents
// derived from it: output size, tensor extents and the implicit-GEMM problem of each mode.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse {

// Which of the three convolutions of training the problem describes:
//   kFprop: y = conv(x, w)          (forward)
//   kDgrad: dx = conv^T(dy, w)      (gradient with respect to the activation)
//   kWgrad: dw = corr(x, dy)        (gradient with respect to the filter)
enum class ConvMode { kFprop, kDgrad, kWgrad };

// Number of output positions along one spatial dimension: how many places the dilated filter fits
// into the padded input, stepping by `stride`. Returns 0 when the filter does not fit at all (or
// the stride is invalid) instead of the 1 that C++'s truncating division would give for a slightly
// negative numerator; check() explains such problems.
TILEFUSE_HOST_DEVICE constexpr index_t conv_output_size(index_t input, index_t pad, index_t filter,
                                                        index_t stride, index_t dilation) {
  // Start positions of the filter's first tap that keep its last tap inside the padded input.
  index_t const starts = input + 2 * pad - dilation * (filter - 1);
  if (stride < 1 || starts < 1) return 0;
  return (starts - 1) / stride + 1;
}

// A 2-D convolution (cross-correlation, as in cuDNN and PyTorch). Input x is (N, H, W, C), filter w
// is (K, R, S, C / groups), output y is (N, P, Q, K). With groups > 1 the channels split into
// `groups` independent convolutions of C / groups input and K / groups output channels each.
struct Conv2dProblem {
  // Extents start at 0 so that a field left unset is reported by check() instead of silently
  // meaning 1.
  index_t N = 0;  // batch
  index_t H = 0;  // input height
  index_t W = 0;  // input width
  index_t C = 0;  // input channels
  index_t K = 0;  // output channels (number of filters)
  index_t R = 0;  // filter height
  index_t S = 0;  // filter width
  index_t pad_h = 0;
  index_t pad_w = 0;
  index_t stride_h = 1;
  index_t stride_w = 1;
  index_t dilation_h = 1;
  index_t dilation_w = 1;
  index_t groups = 1;
  ConvMode mode = ConvMode::kFprop;

  // Output height and width; 0 when the filter does not fit (see conv_output_size).
  TILEFUSE_HOST_DEVICE constexpr index_t P() const {
    return conv_output_size(H, pad_h, R, stride_h, dilation_h);
  }
  TILEFUSE_HOST_DEVICE constexpr index_t Q() const {
    return conv_output_size(W, pad_w, S, stride_w, dilation_w);
  }

  // Channels of one group; 0 for an invalid groups so that nothing divides by zero.
  TILEFUSE_HOST_DEVICE constexpr index_t channels_per_group() const { return groups > 0 ? C / groups : 0; }
  TILEFUSE_HOST_DEVICE constexpr index_t filters_per_group() const { return groups > 0 ? K / groups : 0; }

  // (N, H, W, C): x for fprop and wgrad, dx for dgrad.
  TILEFUSE_HOST_DEVICE constexpr Coord4D activation_extent() const { return Coord4D{N, H, W, C}; }
  // (K, R, S, C / groups): w for fprop and dgrad, dw for wgrad.
  TILEFUSE_HOST_DEVICE constexpr Coord4D filter_extent() const {
    return Coord4D{K, R, S, channels_per_group()};
  }
  // (N, P, Q, K): y for fprop, dy for dgrad and wgrad.
  TILEFUSE_HOST_DEVICE constexpr Coord4D output_extent() const { return Coord4D{N, P(), Q(), K}; }

  // The implicit GEMM of one group; batch = groups (one GEMM per group).
  //   fprop: M = N*P*Q, N = K/groups, K = R*S*C/groups   (rows: output pixels, cols: filters)
  //   dgrad: M = N*H*W, N = C/groups, K = R*S*K/groups   (rows: input pixels, cols: input channels)
  //   wgrad: M = K/groups, N = R*S*C/groups, K = N*P*Q   (rows: filters, cols: filter taps)
  TILEFUSE_HOST_DEVICE constexpr GemmCoord gemm_extent(ConvMode m) const {
    index_t const npq = N * P() * Q();
    index_t const rs = R * S;
    switch (m) {
      case ConvMode::kDgrad: return GemmCoord{N * H * W, channels_per_group(), rs * filters_per_group(), groups};
      case ConvMode::kWgrad: return GemmCoord{filters_per_group(), rs * channels_per_group(), npq, groups};
      case ConvMode::kFprop:
      default: return GemmCoord{npq, filters_per_group(), rs * channels_per_group(), groups};
    }
  }
  TILEFUSE_HOST_DEVICE constexpr GemmCoord gemm_extent() const { return gemm_extent(mode); }
};

// dgrad with both strides 1 as an fprop: dx = conv(dy, w') with w'[c][r'][s'][k] = w[k][R-1-r'][S-1-s'][c]
// (the filter flipped and its channel roles swapped), over dy (N, P, Q, K) padded by
// (filter - 1) * dilation - pad, which may be negative. The returned fprop problem's input is dy and its
// output exactly N x H x W x C. The Hopper kernel's dgrad loads dy as this problem's x
// (conv/kernel/sm90_implicit_gemm.h, DgradIm2colOperands).
TILEFUSE_HOST_DEVICE constexpr Conv2dProblem dgrad_as_fprop(Conv2dProblem const& p) {
  Conv2dProblem f = p;
  f.mode = ConvMode::kFprop;
  f.H = p.P();
  f.W = p.Q();
  f.C = p.K;
  f.K = p.C;
  f.pad_h = (p.R - 1) * p.dilation_h - p.pad_h;
  f.pad_w = (p.S - 1) * p.dilation_w - p.pad_w;
  return f;
}

}  // namespace tilefuse
