// A strided dgrad as stride_h x stride_w stride-1 fprops of dy, one per phase of dx: the dx rows a, a + S,
// a + 2S, ... and columns b, b + S, ... are reached only by the filter taps r = (a + pad) mod S + S t (and
// likewise s), so each phase is a small stride-1 convolution of dy over those taps, flipped, with the
// filter transposed (C outputs from K inputs), which the Hopper fprop runs; its output is interleaved
// into dx. The Hopper dgrad runs stride 1 only, and the sm80 kernel's strided dgrad wastes most of its
// work on taps that do not reach a pixel (docs/notes/conv_sm90.md, "strided dgrad by phases").
// plan_dgrad_phases says whether to, with the reason; phase_row_map says where each phase's output pixels go
// in dx, so that the phase's kernel stores them there itself (gemm/kernel/sm90_row_map.h) instead of into an
// intermediate that a strided copy interleaves. Both callers run the phases from this answer: conv::Conv2d
// (conv2d_dgrad_by_phases.hpp) and the Python package (python/tilefuse/conv2d_phases.py). Host code.
#pragma once

#include <string>
#include <vector>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/kernel/sm90_row_map.h>

namespace tilefuse::conv {

// One phase of dx along one axis: which filter taps reach it (in the phase fprop's order), the fprop's
// symmetric padding of dy, and which of the fprop's outputs are the phase's `extent` dx positions.
struct DgradPhaseAxis {
  std::vector<index_t> taps;  // filter indices, the fprop's tap 0 first (descending: the filter flipped)
  index_t pad = 0;            // the phase fprop's padding of dy along this axis
  index_t crop = 0;           // its first output that is dx's
  index_t extent = 0;         // dx positions in this phase: ceil((size - phase) / stride)
};

// The phase `phase` (0 <= phase < stride) of an axis of dx of `size`, for a filter of `taps` with
// `stride` and `pad`, from dy of `dy_size`. For dx[S i + a]: the taps r = r0 + S t reach dy[i + off - t],
// with r0 = (a + pad) mod S and off = (a + pad - r0) / S; as a correlation of dy over the taps reversed
// that is dy[i + u - lead] x tap[u], lead = T - 1 - off, whose zero padding pad >= lead and >= the
// overhang at the far end makes the fprop's output (crop = pad - lead) + i.
inline DgradPhaseAxis dgrad_phase_axis(index_t phase, index_t size, index_t taps, index_t stride, index_t pad,
                                       index_t dy_size) {
  DgradPhaseAxis axis;
  index_t const r0 = (phase + pad) % stride;
  index_t const count = r0 < taps ? (taps - r0 + stride - 1) / stride : 0;
  axis.extent = phase < size ? (size - phase + stride - 1) / stride : 0;
  if (count == 0 || axis.extent == 0) return axis;
  for (index_t u = 0; u < count; ++u) axis.taps.push_back(r0 + stride * (count - 1 - u));
  index_t const off = (phase + pad - r0) / stride;
  index_t const lead = count - 1 - off;
  index_t const overhang = axis.extent + count - 1 - lead - dy_size;
  axis.pad = std::max<index_t>({lead, overhang, 0});
  axis.crop = axis.pad - lead;
  return axis;
}

struct DgradPhase {
  index_t a = 0, b = 0;  // dx[:, a::stride_h, b::stride_w]
  DgradPhaseAxis h, w;
  // The phase's stride-1 fprop: x = dy (N, P, Q, K), w = the taps' filter transposed (C, Th, Tw, K).
  Conv2dProblem fprop;
  bool empty() const { return h.taps.empty() || w.taps.empty(); }  // no tap reaches it: dx is 0 there
};

struct DgradPhases {
  bool use = false;
  std::string why;
  std::vector<DgradPhase> phases;
};

// Every phase of a dgrad problem (dilation 1), whether or not they pay.
inline std::vector<DgradPhase> dgrad_phases(Conv2dProblem const& p) {
  std::vector<DgradPhase> phases;
  for (index_t a = 0; a < p.stride_h; ++a) {
    for (index_t b = 0; b < p.stride_w; ++b) {
      DgradPhase ph;
      ph.a = a;
      ph.b = b;
      ph.h = dgrad_phase_axis(a, p.H, p.R, p.stride_h, p.pad_h, p.P());
      ph.w = dgrad_phase_axis(b, p.W, p.S, p.stride_w, p.pad_w, p.Q());
      if (!ph.empty()) {
        Conv2dProblem& f = ph.fprop;
        f.mode = ConvMode::kFprop;
        f.N = p.N;
        f.H = p.P();
        f.W = p.Q();
        f.C = p.K;
        f.K = p.C;
        f.R = static_cast<index_t>(ph.h.taps.size());
        f.S = static_cast<index_t>(ph.w.taps.size());
        f.pad_h = ph.h.pad;
        f.pad_w = ph.w.pad;
      }
      phases.push_back(std::move(ph));
    }
  }
  return phases;
}

// Where the phase fprop's output pixels go in dx (N, H, W, C channels-last, dgrad problem p; `ld` elements
// from one pixel to the next, C where 0): pixel (n, crop_h + i, crop_w + j) of the fprop's P' x Q' grid is
// dx's (n, a + stride_h i, b + stride_w j); the rest of the grid (the crop's margin) is not stored. For a
// phase with taps.
inline gemm::sm90::OutputRowMap phase_row_map(DgradPhase const& ph, Conv2dProblem const& p, index_t ld = 0) {
  index_t const pitch = ld > 0 ? ld : p.C;
  gemm::sm90::OutputRowMap map;
  map.pixels_q = ph.fprop.Q();
  map.pixels_p = ph.fprop.P();
  map.crop_h = ph.h.crop;
  map.crop_w = ph.w.crop;
  map.extent_h = ph.h.extent;
  map.extent_w = ph.w.extent;
  map.image_pitch = p.H * p.W * pitch;
  map.row_pitch = p.stride_h * p.W * pitch;
  map.column_pitch = p.stride_w * pitch;
  map.origin = (ph.a * p.W + ph.b) * pitch;
  map.by_q = gemm::sm90::row_divisor(map.pixels_q);
  map.by_pq = gemm::sm90::row_divisor(map.pixels_p * map.pixels_q);
  return map;
}

// Whether a dgrad runs by phases: strided, dilation 1, a bare epilogue (`bare_tree`: the output is the
// accumulator; an epilogue would see each phase's rows, not dx's), and every phase with taps planned on the
// Hopper kernel (the sm80 dgrad is left to the problems where it is not). in.problem is the dgrad.
inline DgradPhases plan_dgrad_phases(ConvPlanInput const& in, bool bare_tree) {
  Conv2dProblem const& p = in.problem;
  DgradPhases out;
  if (p.mode != ConvMode::kDgrad || (p.stride_h == 1 && p.stride_w == 1)) {
    out.why = "not a strided dgrad";
    return out;
  }
  if (p.dilation_h != 1 || p.dilation_w != 1) {
    out.why = "dilated: the phases are worked out for dilation 1";
    return out;
  }
  if (!bare_tree) {
    out.why = "an epilogue other than the identity would see each phase's rows instead of dx's";
    return out;
  }
  if (in.split_k > 1) {
    out.why = status_message("split_k = ", in.split_k, " was asked for, and the phases' fprops do not split");
    return out;
  }
  out.phases = dgrad_phases(p);
  int ran = 0;
  for (DgradPhase const& ph : out.phases) {
    if (ph.empty()) continue;
    ConvPlanInput sub = in;
    sub.problem = ph.fprop;
    sub.split_k = 1;
    ConvPlan const plan = plan_conv2d(sub);
    if (plan.family != ConvFamily::kSm90) {
      out.why = status_message("phase (", ph.a, ", ", ph.b, ")'s fprop would not run on the Hopper kernel: ",
                               plan.why_not_hopper);
      out.phases.clear();
      return out;
    }
    ++ran;
  }
  out.use = true;
  out.why = status_message("strides ", p.stride_h, "x", p.stride_w, ": dgrad by ", ran, " stride-1 Hopper fprops of dy (one "
                           "per phase of dx that a tap reaches",
                           ran < p.stride_h * p.stride_w ? ", the others zero" : "", ")");
  return out;
}

}  // namespace tilefuse::conv
