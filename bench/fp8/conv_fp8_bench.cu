// tilefuse-conv-fp8-bench: the FP8 (e4m3) Conv2d fprop against the bf16 one on the same problem, in one
// process (issue 8: "FP8 conv faster than the bf16 conv of the same problem on the compute-bound
// layers"). For each layer of the ResNet-50 (N = 64) and UNet (N = 8) presets and each epilogue
//   bare   D = bf16(acc)                                   (FP8: acc * scale_x * scale_w)
//   fused  D = bf16(relu(acc + bias[k] + residual))        (FP8: acc * scale_x * scale_w + ...)
// it times tilefuse's bf16 conv and its e4m3 conv (per-tensor scales as device pointers, as an FP8
// recipe passes them), both on the Hopper kernel Conv2d picks, in the order bf16 FP8 FP8 bf16 (each
// side's time is the mean of its two medians, so the H200's clock drift falls on both alike), on
// random-normal operands (e4m3: bf16 normals quantized) in rotating sets larger than twice the L2.
// Each row is first checked: the FP8 conv of set 0 (scales 1) against the bf16 conv of the same
// quantized values, which bf16 holds exactly, normwise within 1e-2 (the two differ by accumulation
// order and precision and by the bf16 rounding of D only).
// A layer is "compute" bound when its FLOPs at 800 TFLOP/s (the bf16 dense rate measured on the H200)
// take longer than its bf16 bytes at 4.2 TB/s, else "memory".
// Prints a markdown table; --preset resnet50|unet restricts the layers, --epilogue bare|fused the trees.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/epilogue/evt.h>

#include "conv_problems.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"
#include "operands.hpp"
#include "random_fill.hpp"
#include "timing.hpp"

namespace tilefuse::bench {
namespace {

using namespace tilefuse::epilogue;
using Bf16 = bfloat16_t;
using E4m3 = float_e4m3_t;

using Scaled = Mul<Mul<Acc, Scalar<"scale_x">>, Scalar<"scale_w">>;
template <class In>
using Fused = Relu<Add<Add<In, RowBroadcast<"bias", Bf16>>, AuxLoad<"residual", Bf16>>>;

using Bf16Bare = conv::Conv2d<Bf16, ConvMode::kFprop, Store<"D", Bf16, Acc>>;
using Bf16Fused = conv::Conv2d<Bf16, ConvMode::kFprop, Store<"D", Bf16, Fused<Acc>>>;
using Fp8Bare = conv::Conv2d<E4m3, ConvMode::kFprop, Store<"D", Bf16, Scaled>>;
using Fp8Fused = conv::Conv2d<E4m3, ConvMode::kFprop, Store<"D", Bf16, Fused<Scaled>>>;

__global__ void quantize_e4m3(Bf16 const* in, E4m3* out, Bf16* dequantized, std::int64_t count) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    E4m3 const q = convert<E4m3>(static_cast<float>(in[i]));
    out[i] = q;
    if (dequantized != nullptr) dequantized[i] = convert<Bf16>(to_float(q));
  }
}

void quantize(Bf16 const* in, E4m3* out, Bf16* dequantized, std::int64_t count, cudaStream_t stream) {
  quantize_e4m3<<<static_cast<unsigned>(std::min<std::int64_t>((count + 255) / 256, 132 * 16)), 256, 0, stream>>>(
      in, out, dequantized, count);
  BENCH_CUDA_CHECK(cudaGetLastError());
}

// One rotating set: the bf16 operands, their e4m3 quantization, the epilogue's inputs and D.
struct Set {
  DeviceBuffer x16, w16, x8, w8, bias, residual, y, scales;
};

template <class Op, class Element>
typename Op::Arguments arguments(Conv2dProblem const& p, Set const& s, Element const* x, Element const* w, Bf16* y,
                                 bool fused) {
  typename Op::Arguments a;
  a.problem = p;
  a.x = x;
  a.w = w;
  a.epilogue.set("D", y);
  if constexpr (sizeof(Element) == 1) {
    a.epilogue.set("scale_x", s.scales.as<float>());
    a.epilogue.set("scale_w", s.scales.as<float>() + 1);
  }
  if (fused) {
    a.epilogue.set("bias", s.bias.as<Bf16>());
    a.epilogue.set("residual", s.residual.as<Bf16>());
  }
  return a;
}

template <class Op>
void run_op(typename Op::Arguments const& a, cudaStream_t stream) {
  Status const st = Op::run(a, nullptr, stream);
  if (!st.ok()) throw BenchError(st.to_string());
}

std::vector<Bf16> download(Bf16 const* data, std::int64_t count) {
  std::vector<Bf16> host(static_cast<std::size_t>(count));
  BENCH_CUDA_CHECK(cudaMemcpy(host.data(), data, host.size() * sizeof(Bf16), cudaMemcpyDeviceToHost));
  return host;
}

struct Row {
  double bf16_ms = 0, fp8_ms = 0, error = 0;
  std::string fp8_path;
};

template <class Op16, class Op8>
Row measure(ConvProblem const& cp, bool fused, DeviceInfo const& device, cudaStream_t stream) {
  Conv2dProblem const& p = cp.shape;
  std::int64_t const xs = activation_elements(cp), ws = filter_elements(cp), ys = output_elements(cp);
  std::size_t const set_bytes = static_cast<std::size_t>(3 * xs + 3 * ws + (fused ? 4 : 2) * ys + 2 * p.K);
  int const sets = static_cast<int>(rotating_set_count(set_bytes, device.l2_bytes, std::size_t{24} << 30));
  std::vector<Set> pool(static_cast<std::size_t>(sets));
  DeviceBuffer xq(xs * 2), wq(ws * 2), y_ref(ys * 2);  // set 0's quantized operands in bf16, for the check
  for (int i = 0; i < sets; ++i) {
    Set& s = pool[static_cast<std::size_t>(i)];
    s.x16 = DeviceBuffer(xs * 2), s.w16 = DeviceBuffer(ws * 2), s.x8 = DeviceBuffer(xs), s.w8 = DeviceBuffer(ws);
    s.y = DeviceBuffer(ys * 2), s.scales = DeviceBuffer(2 * sizeof(float));
    fill_normal(s.x16.get(), DType::kBF16, xs, 11 + i, 1.0f, stream);
    fill_normal(s.w16.get(), DType::kBF16, ws, 1011 + i, 1.0f, stream);
    quantize(s.x16.as<Bf16>(), s.x8.as<E4m3>(), i == 0 ? xq.as<Bf16>() : nullptr, xs, stream);
    quantize(s.w16.as<Bf16>(), s.w8.as<E4m3>(), i == 0 ? wq.as<Bf16>() : nullptr, ws, stream);
    float const ones[2] = {1.0f, 1.0f};
    BENCH_CUDA_CHECK(cudaMemcpy(s.scales.get(), ones, sizeof(ones), cudaMemcpyHostToDevice));
    if (fused) {
      s.bias = DeviceBuffer(p.K * 2), s.residual = DeviceBuffer(ys * 2);
      fill_normal(s.bias.get(), DType::kBF16, p.K, 2011 + i, 1.0f, stream);
      fill_normal(s.residual.get(), DType::kBF16, ys, 3011 + i, 1.0f, stream);
    }
  }
  Row row;
  // The check: set 0's e4m3 operands dequantized to bf16 (exact) through the bf16 conv.
  {
    Set& s = pool[0];
    run_op<Op16>(arguments<Op16>(p, s, xq.as<Bf16>(), wq.as<Bf16>(), y_ref.as<Bf16>(), fused), stream);
    BENCH_CUDA_CHECK(cudaMemsetAsync(s.y.get(), 0xff, ys * 2, stream));
    auto const a8 = arguments<Op8>(p, s, s.x8.as<E4m3>(), s.w8.as<E4m3>(), s.y.as<Bf16>(), fused);
    row.fp8_path = Op8::describe(a8);
    run_op<Op8>(a8, stream);
    BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<Bf16> const want = download(y_ref.as<Bf16>(), ys), got = download(s.y.as<Bf16>(), ys);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      double const w = to_double(want[i]), g = to_double(got[i]);
      diff += (g - w) * (g - w);  // NaN (an unwritten element) makes the error NaN
      norm += w * w;
    }
    row.error = std::sqrt(diff / std::max(norm, 1e-30));
  }
  auto bf16 = [&](int i) {
    Set const& s = pool[static_cast<std::size_t>(i)];
    run_op<Op16>(arguments<Op16>(p, s, s.x16.as<Bf16>(), s.w16.as<Bf16>(), s.y.as<Bf16>(), fused), stream);
  };
  auto fp8 = [&](int i) {
    Set const& s = pool[static_cast<std::size_t>(i)];
    run_op<Op8>(arguments<Op8>(p, s, s.x8.as<E4m3>(), s.w8.as<E4m3>(), s.y.as<Bf16>(), fused), stream);
  };
  TimingOptions timing;
  timing.reps = 30;
  double const a0 = time_rotating(bf16, sets, timing, stream).median_ms;
  double const b0 = time_rotating(fp8, sets, timing, stream).median_ms;
  double const b1 = time_rotating(fp8, sets, timing, stream).median_ms;
  double const a1 = time_rotating(bf16, sets, timing, stream).median_ms;
  row.bf16_ms = (a0 + a1) / 2;
  row.fp8_ms = (b0 + b1) / 2;
  return row;
}

int run(int argc, char** argv) {
  std::vector<std::string> presets = {"resnet50", "unet"};
  std::vector<std::string> epilogues = {"bare", "fused"};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--preset") == 0) presets = {argv[i + 1]};
    if (std::strcmp(argv[i], "--epilogue") == 0) epilogues = {argv[i + 1]};
  }
  DeviceInfo const device = query_device(0);
  cudaStream_t stream = nullptr;
  BENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("# tilefuse-conv-fp8-bench on %s (%d SMs)\n\n", device.name.c_str(), device.sm_count);
  bool ok = true;
  std::vector<std::string> paths;
  for (std::string const& epilogue : epilogues) {
    bool const fused = epilogue == "fused";
    for (std::string const& preset : presets) {
      ConvPresetOptions options;
      options.dtypes = {DType::kBF16};
      options.modes = {ConvMode::kFprop};
      options.epilogue = fused ? ConvEpilogue::kBiasReluResidual : ConvEpilogue::kNone;  // the floor's bytes
      auto const problems = conv_preset_problems(preset, options);
      if (!problems) throw BenchError("no preset " + preset);
      std::printf("## %s, %s\n\n| layer | problem | bound | bf16 ms | e4m3 ms | bf16 TFLOP/s | e4m3 TFLOP/s | "
                  "e4m3 speedup | check (normwise error) |\n|---|---|---|---:|---:|---:|---:|---:|---|\n",
                  preset.c_str(), fused ? "fused bias + residual + ReLU" : "bare");
      double log_all = 0, log_compute = 0;
      int rows = 0, compute_rows = 0;
      for (ConvProblem const& cp : *problems) {
        Row const r = fused ? measure<Bf16Fused, Fp8Fused>(cp, true, device, stream)
                            : measure<Bf16Bare, Fp8Bare>(cp, false, device, stream);
        double const flops = conv_flops(cp);
        bool const compute = flops / 800e12 > conv_minimal_bytes(cp) / 4.2e12;
        bool const checked = r.error < 1e-2;  // false for NaN
        ok = ok && checked;
        double const speedup = r.bf16_ms / r.fp8_ms;
        std::printf("| %s | %s | %s | %.4f | %.4f | %.0f | %.0f | %.3f | %s %.1e |\n", cp.layer.c_str(),
                    conv_shape_name(cp).c_str(), compute ? "compute" : "memory", r.bf16_ms, r.fp8_ms,
                    flops / r.bf16_ms * 1e-9, flops / r.fp8_ms * 1e-9, speedup, checked ? "ok" : "FAILED", r.error);
        std::fflush(stdout);
        paths.push_back(cp.layer + " " + epilogue + ": " + r.fp8_path);
        log_all += std::log(speedup);
        ++rows;
        if (compute) {
          log_compute += std::log(speedup);
          ++compute_rows;
        }
      }
      std::printf("\ngeomean e4m3 speedup over bf16: all %d layers %.3f", rows, std::exp(log_all / rows));
      if (compute_rows > 0) {
        std::printf(", the %d compute-bound layers %.3f", compute_rows, std::exp(log_compute / compute_rows));
      }
      std::printf("\n\n");
    }
  }
  std::printf("## e4m3 kernels (Conv2d::describe)\n\n");
  for (std::string const& path : paths) std::printf("- %s\n", path.c_str());
  cudaStreamDestroy(stream);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tilefuse::bench

int main(int argc, char** argv) {
  try {
    return tilefuse::bench::run(argc, argv);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tilefuse-conv-fp8-bench: %s\n", e.what());
    return 1;
  }
}
