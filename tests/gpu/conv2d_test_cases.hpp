// The epilogue trees and case lists of the Conv2d GPU tests. Problems: edge cases (every filter size
// 1 ... 7, stride 2 and 3, dilation 2, padding 0 ... 3, asymmetric shapes, C and K not multiples of 8,
// outputs of 1 x 1, misaligned operands) and ResNet-50's layers (shared/workloads/resnet50_conv_layers.json,
// stride-1 forms, at a small batch; plus its stride-2 layers). The host reference of a whole list costs
// a few 1e9 multiply-adds, spread over the CPU's cores.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "conv2d_harness.hpp"

namespace tilefuse::gpu_test {

using gemm::Sm80LargeConfig;
using gemm::Sm80SmallConfig;

// ---- epilogue specifications (see gemm_harness.hpp for what a Spec provides) ----
namespace conv_specs {

using namespace tilefuse::epilogue;

struct Plain {
  template <class T>
  using Tree = Store<"D", T, Acc>;
  static constexpr char const* kName = "D = acc";
  static constexpr bool kExact = true;
};

// The fused block of the issue: y = relu(conv + bias[k] + residual).
struct BiasReluResidual {
  template <class T>
  using Tree = Store<"D", T, Relu<Add<Add<Acc, RowBroadcast<"bias", T>>, AuxLoad<"residual", T>>>>;
  static constexpr char const* kName = "D = relu(acc + bias[k] + residual)";
  static constexpr bool kExact = true;
};

// The residual added after the activation (pre-activation ResNets): y = relu(conv + bias[k]) + residual.
struct ResidualAfterRelu {
  template <class T>
  using Tree = Store<"D", T, Add<Relu<Add<Acc, RowBroadcast<"bias", T>>>, AuxLoad<"residual", T>>>;
  static constexpr char const* kName = "D = relu(acc + bias[k]) + residual";
  static constexpr bool kExact = true;
};

struct AlphaBetaResidual {
  template <class T>
  using Tree = Store<"D", T, Add<Mul<Scalar<"alpha">, Acc>, Mul<Scalar<"beta">, AuxLoad<"residual", T>>>>;
  static constexpr char const* kName = "D = alpha * acc + beta * residual";
  static constexpr bool kExact = true;  // powers of two times integers
  static float scalar(std::string_view name, GemmCoord const&) { return name == "alpha" ? 0.5f : -2.0f; }
};

// Folded batch-norm (a per-channel scale and shift) and SiLU, compared with a float64 formula.
struct FoldedBnSilu {
  template <class T>
  using Tree = Store<"D", T, Silu<Add<Mul<Acc, RowBroadcast<"scale", T>>, RowBroadcast<"shift", T>>>>;
  static constexpr char const* kName = "D = silu(acc * scale[k] + shift[k])";
  static constexpr bool kExact = false;
  static double reference(double acc, Place const& at, InputLookup const& in, GemmCoord const&) {
    double const z = acc * in("scale", at) + in("shift", at);
    return z / (1.0 + std::exp(-z));
  }
};

// An auxiliary output: the pre-activation stored beside D.
struct AuxPreactivation {
  template <class T>
  using Tree = Store<"D", T, Relu<Store<"preact", T, Add<Acc, RowBroadcast<"bias", T>>>>>;
  static constexpr char const* kName = "preact = acc + bias[k]; D = relu(preact)";
  static constexpr bool kExact = true;
};

}  // namespace conv_specs

// ---- problems ----

// A problem with the same padding, stride and dilation on both axes.
inline Conv2dProblem conv_problem(index_t n, index_t h, index_t w, index_t c, index_t k, index_t r, index_t s,
                                  index_t pad, index_t stride = 1, index_t dilation = 1) {
  Conv2dProblem p;
  p.N = n, p.H = h, p.W = w, p.C = c, p.K = k, p.R = r, p.S = s;
  p.pad_h = p.pad_w = pad;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

inline ConvCase conv_case(Conv2dProblem const& p, int split_k = 1, bool misaligned = false) {
  ConvCase c;
  c.problem = p;
  c.split_k = split_k;
  c.misaligned = misaligned;
  return c;
}

// Seeds every case of a list differently.
inline std::vector<ConvCase> seeded(std::vector<ConvCase> cases, std::uint64_t seed) {
  for (std::size_t i = 0; i < cases.size(); ++i) cases[i].seed = seed * 1000 + i;
  return cases;
}

// Edge cases, valid in every mode.
inline std::vector<ConvCase> conv_edge_cases(std::uint64_t seed) {
  std::vector<ConvCase> cases = {
      conv_case(conv_problem(1, 1, 1, 1, 1, 1, 1, 0)),          // everything 1: a 1 x 1 output
      conv_case(conv_problem(2, 7, 5, 3, 5, 1, 1, 0)),          // 1x1, C = 3, K = 5: element-wise
      conv_case(conv_problem(1, 9, 9, 16, 24, 1, 1, 0, 2)),     // 1x1 stride 2: dgrad leaves every other pixel 0
      conv_case(conv_problem(2, 6, 11, 8, 16, 3, 3, 1)),        // 3x3 "same", H != W
      conv_case(conv_problem(1, 7, 7, 3, 5, 3, 3, 0, 2)),       // 3x3 stride 2, no padding, element-wise
      conv_case(conv_problem(2, 14, 14, 32, 64, 3, 3, 1, 2)),   // ResNet v1.5 3x3 stride 2
      conv_case(conv_problem(1, 8, 8, 8, 8, 3, 3, 0, 2)),       // stride 2 drops the last row and column of x
      conv_case(conv_problem(1, 10, 10, 16, 8, 3, 3, 2, 1, 2)), // 3x3 dilation 2, padding 2
      conv_case(conv_problem(1, 9, 13, 5, 7, 5, 5, 2)),         // 5x5, odd channels
      conv_case(conv_problem(1, 8, 8, 24, 8, 5, 5, 3, 2, 2)),   // 5x5 dilation 2 stride 2 padding 3
      conv_case(conv_problem(1, 32, 32, 3, 64, 7, 7, 3, 2)),    // 7x7 stride 2, C = 3: a first layer
      conv_case(conv_problem(2, 7, 7, 16, 32, 7, 7, 0)),        // 7x7 on 7x7: outputs of 1 x 1
      conv_case(conv_problem(1, 4, 4, 8, 8, 3, 3, 3)),          // padding 3: taps entirely in the padding
      conv_case(conv_problem(1, 8, 8, 3, 5, 3, 3, 1)),          // 3x3, C = 3, K = 5
      conv_case(conv_problem(1, 11, 11, 8, 24, 4, 4, 2, 3)),    // 4x4 stride 3: dgrad with gaps
      conv_case(conv_problem(1, 33, 33, 1, 1, 3, 3, 1)),        // one channel, one filter
      conv_case(conv_problem(2, 20, 20, 64, 96, 3, 3, 1)),      // several tiles in every GEMM extent
      conv_case(conv_problem(1, 8, 8, 16, 16, 3, 3, 1), 1, true),  // misaligned operands: element-wise
  };
  // Asymmetric in everything: a 2x3 filter, padding (0, 1), stride (1, 2), dilation (2, 1).
  Conv2dProblem a = conv_problem(2, 5, 17, 8, 8, 2, 3, 0);
  a.pad_w = 1, a.stride_w = 2, a.dilation_h = 2;
  cases.push_back(conv_case(a));
  // And the other way round: a 3x2 filter, padding (2, 0), stride (3, 1), dilation (1, 2), odd channels.
  Conv2dProblem b = conv_problem(1, 12, 6, 9, 6, 3, 2, 0);
  b.pad_h = 2, b.stride_h = 3, b.dilation_w = 2;
  cases.push_back(conv_case(b));
  return seeded(cases, seed);
}

// ResNet-50's bottleneck layers (stride-1 forms, from shared/workloads/resnet50_conv_layers.json) at
// batch n, followed by its stride-2 layers (conv1, the v1.5 3x3 and the 1x1 downsample).
inline std::vector<ConvCase> resnet50_cases(index_t n, std::uint64_t seed) {
  struct Layer {
    index_t hw, c, k, rs, pad, stride;
  };
  static constexpr Layer kLayers[] = {
      {56, 64, 64, 1, 0, 1},    {56, 64, 64, 3, 1, 1},    {56, 64, 256, 1, 0, 1},   {56, 256, 128, 1, 0, 1},
      {28, 128, 128, 3, 1, 1},  {28, 128, 512, 1, 0, 1},  {28, 512, 256, 1, 0, 1},  {14, 256, 256, 3, 1, 1},
      {14, 256, 1024, 1, 0, 1}, {14, 1024, 512, 1, 0, 1}, {7, 512, 512, 3, 1, 1},   {7, 512, 2048, 1, 0, 1},
      {224, 3, 64, 7, 3, 2},    {56, 128, 128, 3, 1, 2},  {56, 256, 512, 1, 0, 2},
  };
  std::vector<ConvCase> cases;
  for (Layer const& l : kLayers) {
    cases.push_back(conv_case(conv_problem(n, l.hw, l.hw, l.c, l.k, l.rs, l.rs, l.pad, l.stride)));
  }
  return seeded(cases, seed);
}

// Parallel split-K (wgrad: its GEMM K = N * P * Q is the long one).
inline std::vector<ConvCase> wgrad_split_k_cases(std::uint64_t seed) {
  return seeded({conv_case(conv_problem(2, 14, 14, 32, 64, 3, 3, 1), 3),
                 conv_case(conv_problem(1, 9, 13, 5, 7, 5, 5, 2), 3),
                 conv_case(conv_problem(4, 28, 28, 128, 128, 3, 3, 1), 3),
                 conv_case(conv_problem(2, 32, 32, 3, 64, 7, 7, 3, 2), 3),
                 conv_case(conv_problem(1, 8, 8, 16, 16, 3, 3, 1), 3, true),
                 conv_case(conv_problem(1, 3, 3, 8, 8, 3, 3, 0), 3)},  // K = 1: more splits than k-tiles
                seed);
}

// What every fused epilogue runs: both operand paths, partial tiles, a ResNet layer.
inline std::vector<ConvCase> conv_epilogue_cases(std::uint64_t seed) {
  return seeded({conv_case(conv_problem(1, 1, 1, 1, 1, 1, 1, 0)),
                 conv_case(conv_problem(1, 8, 8, 3, 5, 3, 3, 1)),
                 conv_case(conv_problem(2, 6, 11, 8, 16, 3, 3, 1)),
                 conv_case(conv_problem(2, 7, 7, 16, 32, 7, 7, 0)),
                 conv_case(conv_problem(1, 8, 8, 16, 16, 3, 3, 1), 1, true),
                 conv_case(conv_problem(2, 28, 28, 128, 128, 3, 3, 1)),
                 conv_case(conv_problem(2, 14, 14, 256, 1024, 1, 1, 0))},
                seed);
}

// Small problems on every path, for compute-sanitizer (Conv2dSmall.*).
inline std::vector<ConvCase> conv_small_cases(std::uint64_t seed, int split_k = 1) {
  return seeded({conv_case(conv_problem(1, 5, 6, 3, 5, 3, 3, 1, 2), split_k),
                 conv_case(conv_problem(2, 6, 5, 16, 24, 3, 3, 1), split_k),
                 conv_case(conv_problem(1, 6, 6, 8, 8, 3, 3, 1), split_k, true)},
                seed);
}

}  // namespace tilefuse::gpu_test
