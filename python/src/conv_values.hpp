// tilefuse._C's spellings of conv values as Python passes them (names, the 13-int geometry), shared by
// the planner bindings (plan.cpp) and the launch bindings (launch.cpp). Each refuses what it does not know.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>

namespace tilefuse_python {

inline tilefuse::conv::ConvElement conv_element(std::string const& name) {
  using tilefuse::conv::ConvElement;
  if (name == "bfloat16") return ConvElement::kBfloat16;
  if (name == "float16") return ConvElement::kFloat16;
  if (name == "float8_e4m3") return ConvElement::kE4m3;
  if (name == "float8_e5m2") return ConvElement::kE5m2;
  if (name == "float32") return ConvElement::kFloat32;
  throw std::invalid_argument("tilefuse: the conv planner has no element type '" + name +
                              "': pass bfloat16, float16, float8_e4m3, float8_e5m2 or float32");
}

inline tilefuse::ConvMode conv_mode(std::string const& name) {
  if (name == "fprop") return tilefuse::ConvMode::kFprop;
  if (name == "dgrad") return tilefuse::ConvMode::kDgrad;
  if (name == "wgrad") return tilefuse::ConvMode::kWgrad;
  throw std::invalid_argument("tilefuse: mode '" + name + "' is not fprop, dgrad or wgrad");
}

// The problem of `mode` over geometry: N, H, W, C, K, R, S, pad_h, pad_w, stride_h, stride_w, dilation_h,
// dilation_w.
inline tilefuse::Conv2dProblem conv_problem(std::string const& mode, std::vector<std::int64_t> const& g) {
  if (g.size() != 13) throw std::invalid_argument("tilefuse: a conv geometry has 13 integers");
  tilefuse::Conv2dProblem p;
  p.mode = conv_mode(mode);
  p.N = g[0], p.H = g[1], p.W = g[2], p.C = g[3], p.K = g[4], p.R = g[5], p.S = g[6], p.pad_h = g[7], p.pad_w = g[8];
  p.stride_h = g[9], p.stride_w = g[10], p.dilation_h = g[11], p.dilation_w = g[12];
  return p;
}

}  // namespace tilefuse_python
