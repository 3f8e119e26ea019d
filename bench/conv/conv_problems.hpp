// What one conv2d benchmark row measures: a convolution (tilefuse's Conv2dProblem: NHWC activations,
// KRSC filters, padding, stride, dilation and the mode), its element type and epilogue, its FLOP and
// minimal byte counts, and the named layer lists (presets).
//
// Every mode writes one packed row-major matrix, the implicit GEMM's output (conv/device/conv2d.hpp):
//   fprop: y  (N*P*Q) x K       from x (N, H, W, C) and w (K, R, S, C)
//   dgrad: dx (N*H*W) x C       from dy (N, P, Q, K) and w
//   wgrad: dw K x (R*S*C)       from x and dy
// bias_relu_residual (fprop only): y = relu(conv(x, w) + bias[k] + residual), residual shaped like y.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>

#include "problems.hpp"

namespace tilefuse::bench {

enum class ConvEpilogue { kNone, kBiasReluResidual };

struct ConvProblem {
  Conv2dProblem shape;  // groups is always 1 here
  DType dtype = DType::kBF16;
  ConvEpilogue epilogue = ConvEpilogue::kNone;
  int split_k = 1;      // tilefuse's; cuDNN chooses its own
  conv::ConvOverrides overrides;  // tilefuse's planner choices forced (--sm90-tile, --sm90-source, --split-reduction)
  std::string layer;    // "resnet50 #3" for a preset's layer, empty otherwise
};

// The output matrix of the mode: rows x cols as in the table above.
struct OutputMatrix {
  std::int64_t rows, cols;
};
OutputMatrix output_matrix(ConvProblem const& p);

std::int64_t activation_elements(ConvProblem const& p);  // N*H*W*C: x, or dx
std::int64_t filter_elements(ConvProblem const& p);      // K*R*S*C: w, or dw
std::int64_t output_elements(ConvProblem const& p);      // N*P*Q*K: y, dy, residual

// 2*N*P*Q*K*R*S*C in every mode (the multiply-adds; the epilogue's few FLOPs are not counted).
double conv_flops(ConvProblem const& p);
// A perfect kernel reads its two inputs once and writes its output once (in every mode the three tensors
// are the activation, the filter and the output); the fused epilogue adds the bias and the residual.
double conv_minimal_bytes(ConvProblem const& p);

char const* name_of(ConvMode m);
char const* name_of(ConvEpilogue e);
// "64x56x56x64 -> 256, 3x3, pad 1, stride 2" (NHWC input, K, RxS; dilation and asymmetric values when used).
std::string conv_shape_name(ConvProblem const& p);

std::optional<ConvMode> parse_conv_mode(std::string_view s);
std::optional<ConvEpilogue> parse_conv_epilogue(std::string_view s);

// Named layer lists; each layer is run in every requested dtype and mode with the requested epilogue.
struct ConvPresetOptions {
  std::vector<DType> dtypes;
  std::vector<ConvMode> modes;
  ConvEpilogue epilogue = ConvEpilogue::kNone;
  int split_k = 1;
  conv::ConvOverrides overrides;
};
std::optional<std::vector<ConvProblem>> conv_preset_problems(std::string_view name, ConvPresetOptions const& options);
std::vector<std::string> conv_preset_names();

}  // namespace tilefuse::bench
