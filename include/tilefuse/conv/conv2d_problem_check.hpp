// check(Conv2dProblem): host-side validation that names the first inconsistent field, its value and
// what to change.
#pragma once

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/core/status.hpp>

namespace tilefuse {

namespace detail {

// One spatial dimension (rows or columns) of a problem, with the names its fields have in messages.
struct ConvAxis {
  char const* input_name;     // "H"
  char const* filter_name;    // "R"
  char const* pad_name;       // "pad_h"
  char const* stride_name;    // "stride_h"
  char const* dilation_name;  // "dilation_h"
  char const* unit;           // "rows"
  index_t input, filter, pad, stride, dilation;
};

inline Status check_conv_axis(ConvAxis const& a) {
  if (a.pad < 0) {
    return invalid_argument("conv2d problem: ", a.pad_name, " = ", a.pad,
                            " is negative; padding adds zero ", a.unit, ", so use ", a.pad_name,
                            " >= 0 (crop the input to remove ", a.unit, ")");
  }
  if (a.stride < 1) {
    return invalid_argument("conv2d problem: ", a.stride_name, " = ", a.stride,
                            " must be at least 1 (1 visits every input position)");
  }
  if (a.dilation < 1) {
    return invalid_argument("conv2d problem: ", a.dilation_name, " = ", a.dilation,
                            " must be at least 1 (1 is an undilated filter)");
  }
  index_t const covered = a.dilation * (a.filter - 1) + 1;
  index_t const padded = a.input + 2 * a.pad;
  if (covered > padded) {
    return invalid_argument("conv2d problem: filter ", a.filter_name, " = ", a.filter, " with ",
                            a.dilation_name, " = ", a.dilation, " covers ", covered, " ", a.unit,
                            " but the padded input has only ", padded, " (", a.input_name, " + 2 * ",
                            a.pad_name, " = ", a.input, " + 2 * ", a.pad, "), so the output is empty; increase ",
                            a.pad_name, " or reduce ", a.filter_name, " or ", a.dilation_name);
  }
  return Status::success();
}

}  // namespace detail

// Success, or an invalid-argument Status for the first field that makes the problem meaningless.
// problem.mode is checked only for being one of the three modes: the extents are the same for all.
inline Status check(Conv2dProblem const& p) {
  struct Extent {
    char const* name;
    index_t value;
    char const* meaning;
  };
  Extent const extents[] = {
      {"N", p.N, "the batch size"},
      {"H", p.H, "the input height"},
      {"W", p.W, "the input width"},
      {"C", p.C, "the number of input channels"},
      {"K", p.K, "the number of output channels (filters)"},
      {"R", p.R, "the filter height"},
      {"S", p.S, "the filter width"},
  };
  for (Extent const& e : extents) {
    if (e.value < 1) {
      return invalid_argument("conv2d problem: ", e.name, " = ", e.value, " is not positive; set ",
                              e.name, " to ", e.meaning, " (at least 1)");
    }
  }
  if (p.groups < 1) {
    return invalid_argument("conv2d problem: groups = ", p.groups,
                            " must be at least 1 (1 is an ordinary convolution)");
  }
  if (p.C % p.groups != 0) {
    return invalid_argument("conv2d problem: C = ", p.C, " is not divisible by groups = ", p.groups,
                            "; every group needs the same number of input channels, so choose "
                            "groups dividing both C and K = ", p.K);
  }
  if (p.K % p.groups != 0) {
    return invalid_argument("conv2d problem: K = ", p.K, " is not divisible by groups = ", p.groups,
                            "; every group needs the same number of filters, so choose groups "
                            "dividing both C = ", p.C, " and K");
  }
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_axis(
      {"H", "R", "pad_h", "stride_h", "dilation_h", "rows", p.H, p.R, p.pad_h, p.stride_h, p.dilation_h}));
  TILEFUSE_RETURN_IF_ERROR(detail::check_conv_axis(
      {"W", "S", "pad_w", "stride_w", "dilation_w", "columns", p.W, p.S, p.pad_w, p.stride_w, p.dilation_w}));
  switch (p.mode) {
    case ConvMode::kFprop:
    case ConvMode::kDgrad:
    case ConvMode::kWgrad: break;
    default:
      return invalid_argument("conv2d problem: mode = ", static_cast<int>(p.mode),
                              " is not a ConvMode; use kFprop, kDgrad or kWgrad");
  }
  return Status::success();
}

}  // namespace tilefuse
