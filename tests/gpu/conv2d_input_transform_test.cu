// Mainloop fusion (fprop): Conv2d with ScaleShiftActivation applies x' = act(x * scale[c] + shift[c])
// to the activation tiles as they load. Checked exactly against the reference convolution of the
// transformed input (integer data: x in [-2, 2], scale in {-1, 1, 2}, shift in {-1, 0, 1}), on the
// 16-byte path (C multiple of 8) and the element-wise path (C = 3), with padding that must stay zero
// after the transform (shift = 1 would turn a transformed padding zero into 1), stride and dilation.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/conv/input_transform.h>
#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/reference/conv2d.hpp>

#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {
namespace {

using Element = bfloat16_t;
using Plain = epilogue::Store<"D", float, epilogue::Acc>;

template <class Config, class Act>
void run_case(Conv2dProblem p, unsigned seed) {
  using Op = conv::Conv2d<Element, ConvMode::kFprop, Plain, Config, conv::ScaleShiftActivation<Act>>;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(-2, 2), scale_pick(0, 2), shift_pick(-1, 1);
  std::vector<Element> x(p.N * p.H * p.W * p.C), w(p.K * p.R * p.S * p.C);
  std::vector<float> scale(p.C), shift(p.C), x_transformed(x.size()), w_float(w.size());
  for (auto& v : x) v = convert<Element>(float(value(rng)));
  for (auto& v : w) v = convert<Element>(float(value(rng)));
  for (index_t c = 0; c < p.C; ++c) {
    int const pick = scale_pick(rng);
    scale[c] = float(pick == 0 ? -1 : pick == 1 ? 1 : 2);
    shift[c] = float(shift_pick(rng));
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    index_t const c = static_cast<index_t>(i) % p.C;
    x_transformed[i] = Act::apply(to_float(x[i]) * scale[c] + shift[c]);
  }
  for (std::size_t i = 0; i < w.size(); ++i) w_float[i] = to_float(w[i]);

  GemmCoord const out = Op::output_matrix(p);
  std::vector<double> expected(out.m * out.n);
  ASSERT_TRUE(reference::conv2d_fprop(p, TensorNHWC<float const>::packed(x_transformed.data(), p.activation_extent()),
                                      TensorKRSC<float const>::packed(w_float.data(), p.filter_extent()),
                                      TensorNHWC<double>::packed(expected.data(), p.output_extent()))
                  .ok());

  Stream stream;
  DeviceBuffer dx(x.size() * sizeof(Element)), dw(w.size() * sizeof(Element));
  DeviceBuffer dscale(scale.size() * sizeof(float)), dshift(shift.size() * sizeof(float));
  DeviceBuffer dd(expected.size() * sizeof(float));
  dx.upload(x.data(), stream.get());
  dw.upload(w.data(), stream.get());
  dscale.upload(scale.data(), stream.get());
  dshift.upload(shift.data(), stream.get());
  dd.fill_bytes(0xff, stream.get());  // NaN: an element the kernel skips stays NaN

  typename Op::Arguments args;

  args.overrides = test_conv_overrides();
  args.problem = p;
  args.x = dx.as<Element>();
  args.w = dw.as<Element>();
  args.input_transform = {dscale.as<float>(), dshift.as<float>()};
  args.epilogue.set("D", dd.as<float>());
  Status const s = Op::run(args, nullptr, stream.get());
  ASSERT_TRUE(s.ok()) << s.to_string();
  stream.synchronize();
  std::vector<float> got(expected.size());
  dd.download(got.data(), stream.get());
  int mismatches = 0;
  for (std::size_t i = 0; i < got.size() && mismatches < 5; ++i) {
    if (got[i] != float(expected[i])) {
      ++mismatches;
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << expected[i] << " ("
                    << Op::describe(args) << ")";
    }
  }
}

Conv2dProblem problem(index_t n, index_t h, index_t w, index_t c, index_t k, index_t r, index_t s, index_t pad,
                      index_t stride, index_t dilation) {
  Conv2dProblem p;
  p.N = n, p.H = h, p.W = w, p.C = c, p.K = k, p.R = r, p.S = s;
  p.pad_h = p.pad_w = pad;
  p.stride_h = p.stride_w = stride;
  p.dilation_h = p.dilation_w = dilation;
  p.mode = ConvMode::kFprop;
  return p;
}

TEST(Conv2dInputTransform, ScaleShiftReluSixteenBytePath) {
  run_case<gemm::Sm80LargeConfig, epilogue::op::Relu>(problem(2, 9, 11, 16, 24, 3, 3, 1, 1, 1), 1);
  run_case<gemm::Sm80SmallConfig, epilogue::op::Relu>(problem(1, 13, 7, 64, 40, 3, 3, 2, 2, 1), 2);
  run_case<gemm::Sm80NarrowConfig, epilogue::op::Relu>(problem(3, 8, 8, 32, 64, 5, 5, 2, 1, 2), 3);
}

TEST(Conv2dInputTransform, ScaleShiftReluElementWisePath) {
  run_case<gemm::Sm80LargeConfig, epilogue::op::Relu>(problem(2, 10, 9, 3, 5, 3, 3, 1, 1, 1), 4);
  run_case<gemm::Sm80SmallConfig, epilogue::op::Relu>(problem(1, 7, 12, 5, 17, 7, 7, 3, 2, 1), 5);
}

TEST(Conv2dInputTransform, ScaleShiftIdentity) {
  run_case<gemm::Sm80LargeConfig, conv::IdentityActivation>(problem(2, 6, 6, 8, 8, 3, 3, 1, 1, 1), 6);
}

}  // namespace
}  // namespace tilefuse::gpu_test
