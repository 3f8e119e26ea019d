// A wgrad of few channels (C not whole 16-byte chunks: ResNet's stem, C = 3) as an im2col and the Hopper wgrad
// of a 1x1 convolution: x gathered once into an NHWC image of R*S*C channels (a pixel's filter window, in
// the filter's (r, s, c) order, padded with zero channels to the Hopper wgrad's multiple of 64), then
// dw[K, R*S*C] = the 1x1 wgrad of dy over it, dy read as it is (by TMA, M-major) and K split in the kernel.
// The Hopper wgrad needs C in multiples of 64 and the sm80 kernel pads C to 8 and stages x element by element
// (0.90 ms against cuDNN's 0.30 on the stem at N = 64, docs/notes/conv_sm90.md, "the stem's wgrad").
// The caller gathers (the Python package; conv::Conv2d has no gather and keeps the sm80 kernel):
// plan_wgrad_im2col says whether to, with the reason and the 1x1 wgrad's plan. Host code.
#pragma once

#include <cstdint>
#include <string>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/core/status.hpp>

namespace tilefuse::conv {

struct WgradIm2col {
  bool use = false;
  std::string why;
  index_t columns = 0;         // R * S * C
  index_t padded_columns = 0;  // the 1x1 wgrad's channels: columns rounded up to kWgradIm2colChannels
  std::int64_t workspace_bytes = 0;  // the gathered image: N * P * Q x padded_columns
  Conv2dProblem wgrad;         // the 1x1 wgrad: dy (N, P, Q, K) over the gathered image (N, P, Q, padded_columns)
  ConvPlan plan;               // its plan (the Hopper wgrad)
};

// The Hopper wgrad reads x by 64-channel k-tiles.
inline constexpr index_t kWgradIm2colChannels = 64;

// Whether a wgrad runs as im2col + the Hopper wgrad of a 1x1: the identity epilogue (`bare_tree`), a caller
// that gathers (`caller_gathers`), 16-bit elements, a problem the Hopper wgrad does not take whose channels
// the sm80 kernel reads element by element or pads (C not whole 16-byte chunks), and a 1x1 wgrad over the
// gathered image that plans on the Hopper kernel.
inline WgradIm2col plan_wgrad_im2col(ConvPlanInput const& in, bool bare_tree, bool caller_gathers) {
  Conv2dProblem const& p = in.problem;
  WgradIm2col out;
  if (p.mode != ConvMode::kWgrad) {
    out.why = "not a wgrad";
    return out;
  }
  if (!is_16bit(in.element)) {
    out.why = "the Hopper wgrad takes bf16 or fp16";
    return out;
  }
  if (!bare_tree) {
    out.why = "an epilogue other than the identity would see the gathered image's padded channels";
    return out;
  }
  if (!caller_gathers) {
    out.why = "the caller has no im2col gather (conv::Conv2d)";
    return out;
  }
  ConvPlanInput direct = in;
  direct.split_k = 0;
  if (plan_conv2d(direct).family == ConvFamily::kSm90) {
    out.why = "the Hopper wgrad takes it";
    return out;
  }
  if (index_t const chunk = 16 / element_bytes(in.element); p.C % chunk == 0) {
    out.why = status_message("C = ", p.C, " is whole 16-byte chunks: the sm80 kernel reads x by chunks");
    return out;
  }
  out.columns = p.R * p.S * p.C;
  out.padded_columns = (out.columns + kWgradIm2colChannels - 1) / kWgradIm2colChannels * kWgradIm2colChannels;
  index_t const pixels = p.N * p.P() * p.Q();
  out.workspace_bytes = static_cast<std::int64_t>(pixels) * out.padded_columns * element_bytes(in.element);
  Conv2dProblem& one = out.wgrad;
  one.mode = ConvMode::kWgrad;
  one.N = p.N, one.H = p.P(), one.W = p.Q(), one.C = out.padded_columns, one.K = p.K, one.R = 1, one.S = 1;
  ConvPlanInput sub = in;
  sub.problem = one;
  sub.split_k = 0;
  out.plan = plan_conv2d(sub);
  if (out.plan.family != ConvFamily::kSm90) {
    out.why = "the 1x1 wgrad over the gathered image would not run on the Hopper kernel: " + out.plan.why_not_hopper;
    return out;
  }
  out.use = true;
  out.why = status_message("C = ", p.C, " (not whole 16-byte chunks): x gathered into an image of ", out.columns,
                           " channels (", out.padded_columns, " with padding) of ", pixels, " pixels (",
                           out.workspace_bytes >> 20, " MiB), then the Hopper wgrad of a 1x1 over it (GEMM ", p.K,
                           " x ", out.padded_columns, " x ", pixels, ")");
  return out;
}

}  // namespace tilefuse::conv
