// The output coordinate in a conv epilogue on the GPU: Conv2d sets conv_P, conv_Q and conv_PQ itself
// for trees that read OutputN / OutputP / OutputQ (conv/epilogue_coordinates.h), on both kernels
// (explicit Sm80 config, and the auto config that takes the Hopper kernel for aligned fprop on sm_90).
#include <gtest/gtest.h>

#include <vector>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/conv/epilogue_coordinates.h>

#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {
namespace {

using namespace tilefuse::epilogue;
using conv::OutputChannel;
using conv::OutputN;
using conv::OutputP;
using conv::OutputQ;
// D = acc + 1e4 * n + 1e3 * p + 10 * q + channel / 4 (acc is 0: x holds zeros); every term is exact.
using Tree = Store<"D", float,
                   Add<Add<Acc, Add<Mul<OutputN, Constant<10000.0f>>, Mul<OutputP, Constant<1000.0f>>>>,
                       Add<Mul<OutputQ, Constant<10.0f>>, Mul<OutputChannel, Constant<0.25f>>>>>;

template <ConvMode kMode, class Config>
void check_coordinates(Conv2dProblem p) {
  using Op = conv::Conv2d<half_t, kMode, Tree, Config>;
  p.mode = kMode;
  GemmCoord const out = Op::output_matrix(p);
  Stream stream;
  DeviceBuffer x(p.N * p.H * p.W * p.C * sizeof(half_t)), w(p.K * p.R * p.S * p.C * sizeof(half_t));
  DeviceBuffer dy(p.N * p.P() * p.Q() * p.K * sizeof(half_t)), d(out.m * out.n * sizeof(float));
  x.fill_bytes(0, stream.get()), w.fill_bytes(0, stream.get()), dy.fill_bytes(0, stream.get());
  d.fill_bytes(0xff, stream.get());
  typename Op::Arguments args;
  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = x.as<half_t>(), args.w = w.as<half_t>(), args.dy = dy.as<half_t>();
  args.epilogue.set("D", d.as<float>());
  Status const s = Op::run(args, nullptr, stream.get());
  ASSERT_TRUE(s.ok()) << s.to_string();
  stream.synchronize();
  std::vector<float> got(out.m * out.n);
  d.download(got.data(), stream.get());
  index_t const P = kMode == ConvMode::kDgrad ? p.H : p.P();
  index_t const Q = kMode == ConvMode::kDgrad ? p.W : p.Q();
  int bad = 0;
  for (index_t row = 0; row < out.m; ++row) {
    for (index_t k = 0; k < out.n; ++k) {
      float const want = 0.0f + (float(row / (P * Q)) * 10000.0f + float((row / Q) % P) * 1000.0f) +
                         (float(row % Q) * 10.0f + float(k) * 0.25f);
      float const have = got[row * out.n + k];
      if (have != want && bad++ < 5) ADD_FAILURE() << "row " << row << " channel " << k << ": " << have << " != " << want
                                                    << " (" << Op::describe(args) << ")";
    }
  }
}

Conv2dProblem problem() {
  Conv2dProblem p;
  p.N = 3, p.H = 9, p.W = 13, p.C = 16, p.K = 24, p.R = 3, p.S = 3;
  p.pad_h = p.pad_w = 1;
  p.stride_h = 2, p.stride_w = 1;
  return p;
}

TEST(Conv2dCoordinates, FpropSm80) { check_coordinates<ConvMode::kFprop, gemm::Sm80SmallConfig>(problem()); }
TEST(Conv2dCoordinates, FpropAuto) { check_coordinates<ConvMode::kFprop, gemm::Sm80AutoConfig>(problem()); }
TEST(Conv2dCoordinates, DgradSm80) { check_coordinates<ConvMode::kDgrad, gemm::Sm80LargeConfig>(problem()); }
// Stride 1 and K = 64: the Hopper dgrad on an sm_90 device.
TEST(Conv2dCoordinates, DgradAuto) {
  Conv2dProblem p = problem();
  p.stride_h = 1, p.K = 64;
  check_coordinates<ConvMode::kDgrad, gemm::Sm80AutoConfig>(p);
}

}  // namespace
}  // namespace tilefuse::gpu_test
