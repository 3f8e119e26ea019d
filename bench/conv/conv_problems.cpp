// Conv problem descriptions: output matrix, element, FLOP and byte counts, names and their parsing.
#include "conv_problems.hpp"

#include <sstream>

namespace tilefuse::bench {

OutputMatrix output_matrix(ConvProblem const& p) {
  GemmCoord const g = p.shape.gemm_extent(p.shape.mode);  // groups == 1: (rows, cols) of the output
  return OutputMatrix{g.m, g.n};
}

std::int64_t activation_elements(ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  return s.N * s.H * s.W * s.C;
}

std::int64_t filter_elements(ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  return s.K * s.R * s.S * s.C;
}

std::int64_t output_elements(ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  return s.N * s.P() * s.Q() * s.K;
}

double conv_flops(ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  return 2.0 * static_cast<double>(s.N * s.P() * s.Q()) * static_cast<double>(s.K) *
         static_cast<double>(s.R * s.S * s.C);
}

double conv_minimal_bytes(ConvProblem const& p) {
  double const e = static_cast<double>(element_bytes(p.dtype));
  double elements = static_cast<double>(activation_elements(p) + filter_elements(p) + output_elements(p));
  if (p.epilogue == ConvEpilogue::kBiasReluResidual) {
    elements += static_cast<double>(p.shape.K + output_elements(p));
  }
  return e * elements;
}

char const* name_of(ConvMode m) {
  switch (m) {
    case ConvMode::kDgrad: return "dgrad";
    case ConvMode::kWgrad: return "wgrad";
    default: return "fprop";
  }
}

char const* name_of(ConvEpilogue e) { return e == ConvEpilogue::kNone ? "none" : "bias_relu_residual"; }

std::string conv_shape_name(ConvProblem const& p) {
  Conv2dProblem const& s = p.shape;
  auto pair = [](std::int64_t h, std::int64_t w) {
    return h == w ? std::to_string(h) : std::to_string(h) + "x" + std::to_string(w);
  };
  std::ostringstream out;
  out << s.N << 'x' << s.H << 'x' << s.W << 'x' << s.C << " -> " << s.K << ", " << s.R << 'x' << s.S;
  if (s.pad_h != 0 || s.pad_w != 0) out << ", pad " << pair(s.pad_h, s.pad_w);
  if (s.stride_h != 1 || s.stride_w != 1) out << ", stride " << pair(s.stride_h, s.stride_w);
  if (s.dilation_h != 1 || s.dilation_w != 1) out << ", dil " << pair(s.dilation_h, s.dilation_w);
  return out.str();
}

std::optional<ConvMode> parse_conv_mode(std::string_view s) {
  if (s == "fprop" || s == "fwd") return ConvMode::kFprop;
  if (s == "dgrad" || s == "bwd_data") return ConvMode::kDgrad;
  if (s == "wgrad" || s == "bwd_filter") return ConvMode::kWgrad;
  return std::nullopt;
}

std::optional<ConvEpilogue> parse_conv_epilogue(std::string_view s) {
  if (s == "none") return ConvEpilogue::kNone;
  if (s == "bias_relu_residual") return ConvEpilogue::kBiasReluResidual;
  return std::nullopt;
}

}  // namespace tilefuse::bench
