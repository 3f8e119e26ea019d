// Host reference 2-D convolutions on NHWC activations and KRSC filters (fprop, dgrad, wgrad) with
// padding, stride, dilation and groups: direct loops, the ground truth for implicit-GEMM kernels.
#pragma once

#include <type_traits>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/reference/gemm.hpp>  // widen
#include <tilefuse/reference/parallel.hpp>

namespace tilefuse::reference {

namespace detail {

// Checks one tensor operand against the extent the problem gives it. An output must also have
// nested, non-overlapping strides, because the reference would otherwise overwrite its own results.
template <class T>
Status check_conv_tensor(char const* op, char const* name, Tensor4DRef<T> const& t, Coord4D want,
                         char const* dims, bool is_output) {
  Coord4D const e = t.extent;
  if (!(e == want)) {
    return invalid_argument(op, ": ", name, ".extent = (", e.d0, ", ", e.d1, ", ", e.d2, ", ", e.d3,
                            ") but the problem needs ", dims, " = (", want.d0, ", ", want.d1, ", ", want.d2,
                            ", ", want.d3, "); build ", name, " with that extent");
  }
  if (t.stride0 < 0 || t.stride1 < 0 || t.stride2 < 0) {
    return invalid_argument(op, ": ", name, " has a negative stride (", t.stride0, ", ", t.stride1, ", ",
                            t.stride2, "); use strides >= 0");
  }
  if (t.data == nullptr) {
    return invalid_argument(op, ": ", name, ".data is null; pass the tensor's memory");
  }
  if (is_output) {
    // Each outer stride must step past everything the inner dimensions span (given their strides).
    index_t const extents[3] = {e.d0, e.d1, e.d2};
    index_t const strides[3] = {t.stride0, t.stride1, t.stride2};
    index_t inner_span = e.d3;
    for (int d = 2; d >= 0; --d) {
      if (extents[d] > 1 && strides[d] < inner_span) {
        return invalid_argument(op, ": output ", name, ".stride", d, " = ", strides[d],
                                " is smaller than ", inner_span, ", the span of the dimensions inside it, so ",
                                "elements overlap; use ", name, ".stride", d, " >= ", inner_span,
                                " (Tensor4DRef::packed gives non-overlapping strides)");
      }
      inner_span += (extents[d] - 1) * strides[d];
    }
  }
  return Status::success();
}

template <class Acc>
constexpr void static_check_accumulator() {
  static_assert(std::is_same_v<Acc, float> || std::is_same_v<Acc, double>,
                "reference accumulators are float or double");
}

}  // namespace detail

// Forward: y(n, p, q, k) = sum over r, s and the channels c of k's group of
//   x(n, p*stride_h - pad_h + r*dilation_h, q*stride_w - pad_w + s*dilation_w, c) * w(k, r, s, c')
// with taps in the padding contributing zero (c' is c within the group). y_acc is overwritten.
// problem.mode is ignored: the function itself says which convolution it computes.
template <class Acc, class TX, class TW>
Status conv2d_fprop(Conv2dProblem const& problem, TensorNHWC<TX const> x, TensorKRSC<TW const> w,
                    TensorNHWC<Acc> y_acc) {
  detail::static_check_accumulator<Acc>();
  Conv2dProblem const& p = problem;
  TILEFUSE_RETURN_IF_ERROR(check(p));
  char const* op = "conv2d_fprop";
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "x", x, p.activation_extent(), "(N, H, W, C)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "w", w, p.filter_extent(), "(K, R, S, C / groups)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "y_acc", y_acc, p.output_extent(), "(N, P, Q, K)", true));

  index_t const cg = p.channels_per_group();
  index_t const kg = p.filters_per_group();
  index_t const P = p.P();
  index_t const Q = p.Q();
  // Output rows (n, oh) in blocks over threads (parallel.hpp).
  for_row_blocks(p.N * P, static_cast<double>(Q) * p.K * p.R * p.S * cg, [&](index_t begin, index_t end) {
    for (index_t row = begin; row < end; ++row) {
      index_t const n = row / P, oh = row % P;
      for (index_t ow = 0; ow < Q; ++ow) {
        for (index_t k = 0; k < p.K; ++k) {
          index_t const c0 = (k / kg) * cg;  // first input channel of k's group
          Acc sum = Acc(0);
          for (index_t r = 0; r < p.R; ++r) {
            index_t const h = oh * p.stride_h - p.pad_h + r * p.dilation_h;
            if (h < 0 || h >= p.H) continue;
            for (index_t s = 0; s < p.S; ++s) {
              index_t const wi = ow * p.stride_w - p.pad_w + s * p.dilation_w;
              if (wi < 0 || wi >= p.W) continue;
              for (index_t c = 0; c < cg; ++c) {
                sum += widen<Acc>(x.at(n, h, wi, c0 + c)) * widen<Acc>(w.at(k, r, s, c));
              }
            }
          }
          y_acc.at(n, oh, ow, k) = sum;
        }
      }
    }
  });
  return Status::success();
}

// Data gradient, the adjoint of fprop in x: dx(n, h, w, c) = sum of dy(n, p, q, k) * w(k, r, s, c')
// over the filters k of c's group and the taps (r, s) for which fprop's output (p, q) reads input
// (h, w): p*stride_h - pad_h + r*dilation_h == h (same for q). Computed by gathering into each dx
// element directly, not through fprop. dx_acc is overwritten.
template <class Acc, class TDY, class TW>
Status conv2d_dgrad(Conv2dProblem const& problem, TensorNHWC<TDY const> dy, TensorKRSC<TW const> w,
                    TensorNHWC<Acc> dx_acc) {
  detail::static_check_accumulator<Acc>();
  Conv2dProblem const& p = problem;
  TILEFUSE_RETURN_IF_ERROR(check(p));
  char const* op = "conv2d_dgrad";
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "dy", dy, p.output_extent(), "(N, P, Q, K)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "w", w, p.filter_extent(), "(K, R, S, C / groups)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "dx_acc", dx_acc, p.activation_extent(), "(N, H, W, C)", true));

  index_t const cg = p.channels_per_group();
  index_t const kg = p.filters_per_group();
  index_t const P = p.P();
  index_t const Q = p.Q();
  // Input rows (n, h) in blocks over threads (parallel.hpp).
  for_row_blocks(p.N * p.H, static_cast<double>(p.W) * p.C * p.R * p.S * kg, [&](index_t begin, index_t end) {
    for (index_t row = begin; row < end; ++row) {
      index_t const n = row / p.H, h = row % p.H;
      for (index_t wi = 0; wi < p.W; ++wi) {
        for (index_t c = 0; c < p.C; ++c) {
          index_t const g = c / cg;
          index_t const cl = c - g * cg;  // c within its group: the filter's channel index
          Acc sum = Acc(0);
          for (index_t r = 0; r < p.R; ++r) {
            // Tap r of output row op reads input row h when op*stride_h == h + pad_h - r*dilation_h.
            index_t const th = h + p.pad_h - r * p.dilation_h;
            if (th < 0 || th % p.stride_h != 0) continue;
            index_t const oh = th / p.stride_h;
            if (oh >= P) continue;
            for (index_t s = 0; s < p.S; ++s) {
              index_t const tw = wi + p.pad_w - s * p.dilation_w;
              if (tw < 0 || tw % p.stride_w != 0) continue;
              index_t const ow = tw / p.stride_w;
              if (ow >= Q) continue;
              for (index_t k = g * kg; k < (g + 1) * kg; ++k) {
                sum += widen<Acc>(dy.at(n, oh, ow, k)) * widen<Acc>(w.at(k, r, s, cl));
              }
            }
          }
          dx_acc.at(n, h, wi, c) = sum;
        }
      }
    }
  });
  return Status::success();
}

// Filter gradient, the adjoint of fprop in w: dw(k, r, s, c') = sum over n, p, q of
//   x(n, p*stride_h - pad_h + r*dilation_h, q*stride_w - pad_w + s*dilation_w, c) * dy(n, p, q, k)
// where c is channel c' of k's group and taps in the padding contribute zero. dw_acc is overwritten.
template <class Acc, class TX, class TDY>
Status conv2d_wgrad(Conv2dProblem const& problem, TensorNHWC<TX const> x, TensorNHWC<TDY const> dy,
                    TensorKRSC<Acc> dw_acc) {
  detail::static_check_accumulator<Acc>();
  Conv2dProblem const& p = problem;
  TILEFUSE_RETURN_IF_ERROR(check(p));
  char const* op = "conv2d_wgrad";
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "x", x, p.activation_extent(), "(N, H, W, C)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "dy", dy, p.output_extent(), "(N, P, Q, K)", false));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_tensor(op, "dw_acc", dw_acc, p.filter_extent(), "(K, R, S, C / groups)", true));

  index_t const cg = p.channels_per_group();
  index_t const kg = p.filters_per_group();
  index_t const P = p.P();
  index_t const Q = p.Q();
  // Filters k in blocks over threads (parallel.hpp).
  for_row_blocks(p.K, static_cast<double>(p.R) * p.S * cg * p.N * P * Q, [&](index_t begin, index_t end) {
    for (index_t k = begin; k < end; ++k) {
      index_t const c0 = (k / kg) * cg;  // first input channel of k's group
      for (index_t r = 0; r < p.R; ++r) {
        for (index_t s = 0; s < p.S; ++s) {
          for (index_t c = 0; c < cg; ++c) {
            Acc sum = Acc(0);
            for (index_t n = 0; n < p.N; ++n) {
              for (index_t oh = 0; oh < P; ++oh) {
                index_t const h = oh * p.stride_h - p.pad_h + r * p.dilation_h;
                if (h < 0 || h >= p.H) continue;
                for (index_t ow = 0; ow < Q; ++ow) {
                  index_t const wi = ow * p.stride_w - p.pad_w + s * p.dilation_w;
                  if (wi < 0 || wi >= p.W) continue;
                  sum += widen<Acc>(x.at(n, h, wi, c0 + c)) * widen<Acc>(dy.at(n, oh, ow, k));
                }
              }
            }
            dw_acc.at(k, r, s, c) = sum;
          }
        }
      }
    }
  });
  return Status::success();
}

}  // namespace tilefuse::reference
