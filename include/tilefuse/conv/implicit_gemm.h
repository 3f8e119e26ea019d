// The implicit-GEMM mapping of each convolution mode: which tensor element feeds GEMM operand
// element (mn, k), or that it is a zero (padding, a tap that falls between strided outputs, or a
// coordinate past the end). The single source of truth: kernels gather their operand tiles with it
// and the host tests check it exhaustively against the reference convolution.
//
// Every operand is a gather with three functions, split so a kernel computes each part once:
//   MnPart mn_part(mn)   what depends only on the operand's m (A) or n (B) coordinate
//   KPart  k_part(k)     what depends only on the GEMM's k coordinate
//   offset(MnPart, KPart) -> element offset into the operand's tensor, or -1 for a zero
// Channels are innermost in every tensor (NHWC, KRSC) and innermost in every k and n ordering, so
// consecutive k (or n) inside one channel run are consecutive in memory: with the channel counts a
// multiple of 8, an 8-element chunk is one 16-byte load or one zero.
//
//   fprop  A(m = (n,p,q), k = (r,s,c)) = x[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c]   B(k, n = k') = w[k'][r][s][c]
//   dgrad  A(m = (n,h,w), k = (r,s,k')) = dy[n][(h+ph-r*dh)/sh][(w+pw-s*dw)/sw][k'] (when divisible)
//          B(k = (r,s,k'), n = c) = w[k'][r][s][c]
//   wgrad  A(m = k', k = (n,p,q)) = dy[n][p][q][k']   B(k = (n,p,q), n = (r,s,c)) = x[n][p*sh-ph+r*dh][q*sw-pw+s*dw][c]
// Grouped convolutions are not mapped (groups == 1); the device API refuses them.
#pragma once

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::conv {

// The problem's extents as 32-bit integers (cheap division on the device); the device API checks that
// every tensor (in elements) and the GEMM extents fit, so pixel indices and offsets fit too.
struct ConvGeometry {
  int N = 0, H = 0, W = 0, C = 0, K = 0, R = 0, S = 0, P = 0, Q = 0;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;

  TILEFUSE_HOST_DEVICE static constexpr ConvGeometry of(Conv2dProblem const& p) {
    ConvGeometry g;
    g.N = static_cast<int>(p.N), g.H = static_cast<int>(p.H), g.W = static_cast<int>(p.W);
    g.C = static_cast<int>(p.C), g.K = static_cast<int>(p.K), g.R = static_cast<int>(p.R);
    g.S = static_cast<int>(p.S), g.P = static_cast<int>(p.P()), g.Q = static_cast<int>(p.Q());
    g.pad_h = static_cast<int>(p.pad_h), g.pad_w = static_cast<int>(p.pad_w);
    g.stride_h = static_cast<int>(p.stride_h), g.stride_w = static_cast<int>(p.stride_w);
    g.dilation_h = static_cast<int>(p.dilation_h), g.dilation_w = static_cast<int>(p.dilation_w);
    return g;
  }
};

// A coordinate past the end is folded into the spatial parts instead of a flag (fewer registers in a
// kernel that keeps several pixels per thread): it moves the position this far outside the tensor, so
// the bounds check that handles padding also rejects it. Sums of two such values stay above -2^31.
inline constexpr int kFarOutside = 1 << 29;

// (output pixel (n,p,q), filter tap (r,s,c)) -> x[n][h][w][c]: fprop's A and wgrad's B.
struct ActivationGather {
  ConvGeometry g;
  struct Pixel {
    int nhw = 0;       // n * H * W: x[n][0][0] in pixels
    int h0 = -kFarOutside, w0 = 0;  // p * stride - pad (far outside for a pixel past the end)
  };
  struct Tap {
    int dh = -kFarOutside, dw = 0, c = 0;  // r * dilation (far outside for a tap past the end)
  };
  TILEFUSE_HOST_DEVICE Pixel pixel(index_t i) const {
    Pixel px;
    if (i < 0 || i >= index_t{g.N} * g.P * g.Q) return px;
    int const pq = static_cast<int>(i % (index_t{g.P} * g.Q));
    int const n = static_cast<int>(i / (index_t{g.P} * g.Q));
    px.nhw = n * g.H * g.W;
    px.h0 = (pq / g.Q) * g.stride_h - g.pad_h;
    px.w0 = (pq % g.Q) * g.stride_w - g.pad_w;
    return px;
  }
  TILEFUSE_HOST_DEVICE Tap tap(index_t j) const {
    Tap t;
    if (j < 0 || j >= index_t{g.R} * g.S * g.C) return t;
    int const jj = static_cast<int>(j);
    int const rs = jj / g.C;
    t.c = jj % g.C;
    t.dh = (rs / g.S) * g.dilation_h;
    t.dw = (rs % g.S) * g.dilation_w;
    return t;
  }
  TILEFUSE_HOST_DEVICE index_t offset(Pixel const& px, Tap const& t) const {
    int const h = px.h0 + t.dh;
    int const w = px.w0 + t.dw;
    bool const inside = h >= 0 && h < g.H && w >= 0 && w < g.W;
    return inside ? index_t{px.nhw + h * g.W + w} * g.C + t.c : -1;
  }
};

// (input pixel (n,h,w), filter tap (r,s,k')) -> dy[n][p][q][k']: dgrad's A. A tap reaches an output
// only where (h + ph - r*dh) is a non-negative multiple of the stride below P * stride (same for w).
struct GradientGather {
  ConvGeometry g;
  struct Pixel {
    int npq = 0;                    // n * P * Q: dy[n][0][0] in pixels
    int hp = -kFarOutside, wp = 0;  // h + pad_h, w + pad_w (far outside for a pixel past the end)
  };
  struct Tap {
    int dh = kFarOutside, dw = 0, k = 0;  // r * dilation (far outside for a tap past the end)
  };
  TILEFUSE_HOST_DEVICE Pixel pixel(index_t i) const {
    Pixel px;
    if (i < 0 || i >= index_t{g.N} * g.H * g.W) return px;
    int const hw = static_cast<int>(i % (index_t{g.H} * g.W));
    int const n = static_cast<int>(i / (index_t{g.H} * g.W));
    px.npq = n * g.P * g.Q;
    px.hp = hw / g.W + g.pad_h;
    px.wp = hw % g.W + g.pad_w;
    return px;
  }
  TILEFUSE_HOST_DEVICE Tap tap(index_t j) const {
    Tap t;
    if (j < 0 || j >= index_t{g.R} * g.S * g.K) return t;
    int const jj = static_cast<int>(j);
    int const rs = jj / g.K;
    t.k = jj % g.K;
    t.dh = (rs / g.S) * g.dilation_h;
    t.dw = (rs % g.S) * g.dilation_w;
    return t;
  }
  TILEFUSE_HOST_DEVICE index_t offset(Pixel const& px, Tap const& t) const {
    int const y = px.hp - t.dh;
    int const x = px.wp - t.dw;
    if (y < 0 || x < 0) return -1;
    int const p = y / g.stride_h;
    int const q = x / g.stride_w;
    if (p * g.stride_h != y || q * g.stride_w != x || p >= g.P || q >= g.Q) return -1;
    return index_t{px.npq + p * g.Q + q} * g.K + t.k;
  }
};

// (filter tap (r,s,k'), input channel c) -> w[k'][r][s][c]: dgrad's B.
struct FilterByTapGather {
  ConvGeometry g;
  struct Tap {
    index_t base = 0;  // offset of w[k'][r][s][0]
    bool valid = false;
  };
  struct Channel {
    int c = 0;
    bool valid = false;
  };
  TILEFUSE_HOST_DEVICE Tap tap(index_t j) const {
    Tap t;
    t.valid = j >= 0 && j < index_t{g.R} * g.S * g.K;
    if (!t.valid) return t;
    int const jj = static_cast<int>(j);
    int const rs = jj / g.K;
    int const k = jj % g.K;
    t.base = (index_t{k} * g.R * g.S + rs) * g.C;
    return t;
  }
  TILEFUSE_HOST_DEVICE Channel channel(index_t c) const { return {static_cast<int>(c), c >= 0 && c < g.C}; }
  TILEFUSE_HOST_DEVICE index_t offset(Tap const& t, Channel const& ch) const {
    return t.valid && ch.valid ? t.base + ch.c : -1;
  }
};

// A plain matrix `rows x cols` at element (row, col) = row * row_stride + col * col_stride: fprop's B
// (w as (k', r*s*c)) and wgrad's A (dy as (n*p*q, k')).
struct DenseGather {
  index_t rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  struct Line {
    index_t offset = 0;
    bool valid = false;
  };
  TILEFUSE_HOST_DEVICE Line row(index_t r) const { return {r * row_stride, r >= 0 && r < rows}; }
  TILEFUSE_HOST_DEVICE Line col(index_t c) const { return {c * col_stride, c >= 0 && c < cols}; }
  TILEFUSE_HOST_DEVICE static index_t offset(Line const& r, Line const& c) {
    return r.valid && c.valid ? r.offset + c.offset : -1;
  }
};

// ---- the six operands, as (mn, k) gathers ----

// Operand of the implicit GEMM with its roles named: kIsA says whether mn is m (A) or n (B), and
// kKContiguous whether consecutive k (rather than consecutive mn) are consecutive in memory.
template <ConvMode kMode, bool kIsA>
struct ImplicitGemmOperand;

template <>
struct ImplicitGemmOperand<ConvMode::kFprop, true> {  // A = x gathered by (pixel, tap)
  static constexpr bool kKContiguous = true;
  ActivationGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g) : gather{g} {}
  using MnPart = ActivationGather::Pixel;
  using KPart = ActivationGather::Tap;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t m) const { return gather.pixel(m); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.tap(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& m, KPart const& k) const { return gather.offset(m, k); }
};

template <>
struct ImplicitGemmOperand<ConvMode::kFprop, false> {  // B = w as (k', tap), read as column-major K x N
  static constexpr bool kKContiguous = true;
  DenseGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g)
      : gather{g.K, index_t{g.R} * g.S * g.C, index_t{g.R} * g.S * g.C, 1} {}
  using MnPart = DenseGather::Line;
  using KPart = DenseGather::Line;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t n) const { return gather.row(n); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.col(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& n, KPart const& k) const { return DenseGather::offset(n, k); }
};

template <>
struct ImplicitGemmOperand<ConvMode::kDgrad, true> {  // A = dy gathered by (input pixel, tap)
  static constexpr bool kKContiguous = true;
  GradientGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g) : gather{g} {}
  using MnPart = GradientGather::Pixel;
  using KPart = GradientGather::Tap;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t m) const { return gather.pixel(m); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.tap(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& m, KPart const& k) const { return gather.offset(m, k); }
};

template <>
struct ImplicitGemmOperand<ConvMode::kDgrad, false> {  // B = w as (tap (r,s,k'), c): channels contiguous
  static constexpr bool kKContiguous = false;
  FilterByTapGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g) : gather{g} {}
  using MnPart = FilterByTapGather::Channel;
  using KPart = FilterByTapGather::Tap;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t n) const { return gather.channel(n); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.tap(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& n, KPart const& k) const { return gather.offset(k, n); }
};

template <>
struct ImplicitGemmOperand<ConvMode::kWgrad, true> {  // A = dy as (k', pixel), read as column-major M x K
  static constexpr bool kKContiguous = false;
  DenseGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g)
      : gather{index_t{g.N} * g.P * g.Q, g.K, g.K, 1} {}
  using MnPart = DenseGather::Line;
  using KPart = DenseGather::Line;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t m) const { return gather.col(m); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.row(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& m, KPart const& k) const { return DenseGather::offset(k, m); }
};

template <>
struct ImplicitGemmOperand<ConvMode::kWgrad, false> {  // B = x gathered by (pixel, tap): taps contiguous
  static constexpr bool kKContiguous = false;
  ActivationGather gather;
  TILEFUSE_HOST_DEVICE explicit ImplicitGemmOperand(ConvGeometry const& g) : gather{g} {}
  using MnPart = ActivationGather::Tap;
  using KPart = ActivationGather::Pixel;
  TILEFUSE_HOST_DEVICE MnPart mn_part(index_t n) const { return gather.tap(n); }
  TILEFUSE_HOST_DEVICE KPart k_part(index_t k) const { return gather.pixel(k); }
  TILEFUSE_HOST_DEVICE index_t offset(MnPart const& n, KPart const& k) const { return gather.offset(k, n); }
};

// Element offset of operand A (kIsA) or B at GEMM coordinate (mn, k), or -1: the whole mapping in one
// call, for tests and element-wise paths.
template <ConvMode kMode, bool kIsA>
TILEFUSE_HOST_DEVICE index_t implicit_gemm_offset(ConvGeometry const& g, index_t mn, index_t k) {
  ImplicitGemmOperand<kMode, kIsA> const op(g);
  return op.offset(op.mn_part(mn), op.k_part(k));
}

}  // namespace tilefuse::conv
