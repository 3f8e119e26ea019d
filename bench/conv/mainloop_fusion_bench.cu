// tilefuse-fusion-bench: what mainloop fusion costs. For each ResNet-50 layer (fprop, bf16, N = 64) it
// times, in one process on the same random-normal data (operand sets rotating past 2 x L2):
//   plain      Conv2d                                       y = conv(x, w)
//   fused      Conv2d with ScaleShiftActivation<Relu>       y = conv(relu(x * scale[c] + shift[c]), w)
//   unfused    a BN-ReLU kernel writing x', then plain      what the fusion replaces
// and prints fused / plain (the cost of the transform in the mainloop) and unfused / fused.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/conv/input_transform.h>
#include <tilefuse/epilogue/evt.h>

#include "conv_problems.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"
#include "operands.hpp"
#include "random_fill.hpp"
#include "timing.hpp"

namespace tilefuse::bench {
namespace {

using Element = bfloat16_t;
using Plain = epilogue::Store<"D", Element, epilogue::Acc>;
using PlainConv = conv::Conv2d<Element, ConvMode::kFprop, Plain, gemm::Sm80PathAutoConfig>;  // same path as fused
using FusedConv =
    conv::Conv2d<Element, ConvMode::kFprop, Plain, gemm::Sm80PathAutoConfig, conv::ScaleShiftActivation<epilogue::op::Relu>>;

// x'[i] = relu(x[i] * scale[c] + shift[c]), 8 channels per thread (C is a multiple of 8 here).
__global__ void bn_relu_kernel(Element const* x, float const* scale, float const* shift, Element* out,
                               std::int64_t vectors, int channels) {
  for (std::int64_t v = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; v < vectors;
       v += std::int64_t{gridDim.x} * blockDim.x) {
    Array<Element, 8> in = reinterpret_cast<Array<Element, 8> const*>(x)[v];
    int const c0 = static_cast<int>((v * 8) % channels);
    Array<Element, 8> o;
    for (int e = 0; e < 8; ++e) {
      float const z = static_cast<float>(in[e]) * scale[c0 + e] + shift[c0 + e];
      o[e] = Element(z < 0.0f ? 0.0f : z);
    }
    reinterpret_cast<Array<Element, 8>*>(out)[v] = o;
  }
}

struct Set {
  DeviceBuffer x, x_transformed, w, y, scale, shift;
};

template <class Op>
typename Op::Arguments arguments(Conv2dProblem const& p, Set const& s, Element const* x) {
  typename Op::Arguments a;
  a.problem = p;
  a.x = x;
  a.w = s.w.as<Element>();
  a.epilogue.set("D", s.y.as<Element>());
  return a;
}

int run() {
  DeviceInfo const device = query_device(0);
  cudaStream_t stream = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ConvPresetOptions options;
  options.dtypes = {DType::kBF16};
  options.modes = {ConvMode::kFprop};
  auto const problems = conv_preset_problems("resnet50", options);
  TimingOptions timing;
  std::printf("| layer | problem | plain ms | fused ms | unfused (BN-ReLU kernel + plain) ms | fused / plain | unfused / fused |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  double log_cost = 0, log_gain = 0;
  int rows = 0;
  for (ConvProblem const& cp : *problems) {
    Conv2dProblem const& p = cp.shape;
    std::size_t const x_bytes = activation_elements(cp) * sizeof(Element);
    std::size_t const w_bytes = filter_elements(cp) * sizeof(Element);
    std::size_t const y_bytes = output_elements(cp) * sizeof(Element);
    std::size_t const set_bytes = 2 * x_bytes + w_bytes + y_bytes;
    int const sets = static_cast<int>(rotating_set_count(set_bytes, device.l2_bytes, std::size_t{24} << 30));
    std::vector<Set> pool(sets);
    for (int i = 0; i < sets; ++i) {
      Set& s = pool[i];
      s.x = DeviceBuffer(x_bytes), s.x_transformed = DeviceBuffer(x_bytes), s.w = DeviceBuffer(w_bytes);
      s.y = DeviceBuffer(y_bytes), s.scale = DeviceBuffer(p.C * sizeof(float)), s.shift = DeviceBuffer(p.C * sizeof(float));
      fill_normal(s.x.get(), DType::kBF16, activation_elements(cp), 11 + i, 1.0f, stream);
      fill_normal(s.w.get(), DType::kBF16, filter_elements(cp), 1011 + i, 1.0f, stream);
      std::vector<float> scale(p.C), shift(p.C);
      for (auto& v : scale) v = normal(rng);
      for (auto& v : shift) v = normal(rng);
      BENCH_CUDA_CHECK(cudaMemcpy(s.scale.get(), scale.data(), p.C * sizeof(float), cudaMemcpyHostToDevice));
      BENCH_CUDA_CHECK(cudaMemcpy(s.shift.get(), shift.data(), p.C * sizeof(float), cudaMemcpyHostToDevice));
    }
    auto plain = [&](int i) {
      Status const st = PlainConv::run(arguments<PlainConv>(p, pool[i], pool[i].x.as<Element>()), nullptr, stream);
      if (!st.ok()) throw BenchError(st.to_string());
    };
    auto fused = [&](int i) {
      auto a = arguments<FusedConv>(p, pool[i], pool[i].x.as<Element>());
      a.input_transform = {pool[i].scale.as<float>(), pool[i].shift.as<float>()};
      Status const st = FusedConv::run(a, nullptr, stream);
      if (!st.ok()) throw BenchError(st.to_string());
    };
    auto unfused = [&](int i) {
      std::int64_t const vectors = activation_elements(cp) / 8;
      bn_relu_kernel<<<static_cast<unsigned>(std::min<std::int64_t>((vectors + 255) / 256, 4 * 132 * 8)), 256, 0, stream>>>(
          pool[i].x.as<Element>(), pool[i].scale.as<float>(), pool[i].shift.as<float>(),
          pool[i].x_transformed.as<Element>(), vectors, static_cast<int>(p.C));
      Status const st = PlainConv::run(arguments<PlainConv>(p, pool[i], pool[i].x_transformed.as<Element>()), nullptr, stream);
      if (!st.ok()) throw BenchError(st.to_string());
    };
    double const t_plain = time_rotating(plain, sets, timing, stream).median_ms;
    double const t_fused = time_rotating(fused, sets, timing, stream).median_ms;
    double const t_unfused = time_rotating(unfused, sets, timing, stream).median_ms;
    std::printf("| %s | %s | %.4f | %.4f | %.4f | %.3f | %.3f |\n", cp.layer.c_str(), conv_shape_name(cp).c_str(), t_plain,
                t_fused, t_unfused, t_fused / t_plain, t_unfused / t_fused);
    log_cost += std::log(t_fused / t_plain);
    log_gain += std::log(t_unfused / t_fused);
    ++rows;
  }
  std::printf("\ngeometric means over %d layers: fused / plain = %.3f, unfused / fused = %.3f\n", rows,
              std::exp(log_cost / rows), std::exp(log_gain / rows));
  std::printf("plain: %s\nfused: %s\n", "Conv2d<bf16, fprop, Store<D, bf16, Acc>, Sm80PathAutoConfig> (the sm80 path, as the fused one)",
              "the same with ScaleShiftActivation<Relu> (mainloop fusion)");
  return 0;
}

}  // namespace
}  // namespace tilefuse::bench

int main() {
  try {
    return tilefuse::bench::run();
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tilefuse-fusion-bench: %s\n", e.what());
    return 1;
  }
}
