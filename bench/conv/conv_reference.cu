// The float64 direct-convolution reference at sampled coordinates (see conv_reference.hpp).
#include "conv_reference.hpp"

#include <tilefuse/core/numeric_types.h>

namespace tilefuse::bench {
namespace {

// The extents as plain integers, so the kernel does not depend on tilefuse's problem type.
struct ConvGeometryParams {
  std::int64_t n, h, w, c, k, r, s, p, q;
  std::int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int mode;  // 0 fprop, 1 dgrad, 2 wgrad
  bool fused;
};

template <class T>
struct ReferenceInputs {
  T const* x;
  T const* w;
  T const* dy;
  T const* bias;
  T const* residual;
};

template <class T>
__device__ double product(T a, T b) {
  return static_cast<double>(to_float(a)) * static_cast<double>(to_float(b));
}

// One term of the reduction of output element (row, col), j < the reduction length; 0 where the filter
// tap falls into the padding (or, for dgrad, between strides).
template <class T>
__device__ double term(ConvGeometryParams const& g, ReferenceInputs<T> const& in, std::int64_t row, std::int64_t col,
                       std::int64_t j) {
  if (g.mode == 0) {  // fprop: row (n, p, q), col k, j (r, s, c)
    std::int64_t const q = row % g.q, p = (row / g.q) % g.p, n = row / (g.q * g.p);
    std::int64_t const c = j % g.c, s = (j / g.c) % g.s, r = j / (g.c * g.s);
    std::int64_t const h = p * g.stride_h - g.pad_h + r * g.dil_h;
    std::int64_t const w = q * g.stride_w - g.pad_w + s * g.dil_w;
    if (h < 0 || h >= g.h || w < 0 || w >= g.w) return 0.0;
    return product(in.x[((n * g.h + h) * g.w + w) * g.c + c], in.w[((col * g.r + r) * g.s + s) * g.c + c]);
  }
  if (g.mode == 1) {  // dgrad: row (n, h, w), col c, j (k, r, s)
    std::int64_t const w = row % g.w, h = (row / g.w) % g.h, n = row / (g.w * g.h);
    std::int64_t const s = j % g.s, r = (j / g.s) % g.r, k = j / (g.s * g.r);
    std::int64_t const ph = h + g.pad_h - r * g.dil_h;  // = p * stride_h when this tap reaches (h, w)
    std::int64_t const qw = w + g.pad_w - s * g.dil_w;
    if (ph < 0 || qw < 0 || ph % g.stride_h != 0 || qw % g.stride_w != 0) return 0.0;
    std::int64_t const p = ph / g.stride_h, q = qw / g.stride_w;
    if (p >= g.p || q >= g.q) return 0.0;
    return product(in.dy[((n * g.p + p) * g.q + q) * g.k + k], in.w[((k * g.r + r) * g.s + s) * g.c + col]);
  }
  // wgrad: row k, col (r, s, c), j (n, p, q)
  std::int64_t const c = col % g.c, s = (col / g.c) % g.s, r = col / (g.c * g.s);
  std::int64_t const q = j % g.q, p = (j / g.q) % g.p, n = j / (g.q * g.p);
  std::int64_t const h = p * g.stride_h - g.pad_h + r * g.dil_h;
  std::int64_t const w = q * g.stride_w - g.pad_w + s * g.dil_w;
  if (h < 0 || h >= g.h || w < 0 || w >= g.w) return 0.0;
  return product(in.x[((n * g.h + h) * g.w + w) * g.c + c], in.dy[((n * g.p + p) * g.q + q) * g.k + row]);
}

// One warp per sample: lanes stride over the reduction, then a shuffle sum; lane 0 applies the epilogue.
template <class T>
__global__ void conv_reference_kernel(SampleCoordinate const* samples, int count, ConvGeometryParams g,
                                      ReferenceInputs<T> in, std::int64_t cols, double* out) {
  int const warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  int const lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= count) return;
  SampleCoordinate const sample = samples[warp];
  std::int64_t const length = g.mode == 0 ? g.r * g.s * g.c : g.mode == 1 ? g.k * g.r * g.s : g.n * g.p * g.q;
  double acc = 0.0;
  for (std::int64_t j = lane; j < length; j += 32) acc += term(g, in, sample.row, sample.col, j);
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (lane != 0) return;
  if (g.fused) {
    acc += static_cast<double>(to_float(in.bias[sample.col])) +
           static_cast<double>(to_float(in.residual[sample.row * cols + sample.col]));
    acc = acc < 0.0 ? 0.0 : acc;
  }
  out[warp] = acc;
}

template <class T>
ReferenceInputs<T> typed_inputs(ConvOperands const& ops) {
  return ReferenceInputs<T>{static_cast<T const*>(ops.x), static_cast<T const*>(ops.w), static_cast<T const*>(ops.dy),
                            static_cast<T const*>(ops.bias), static_cast<T const*>(ops.residual)};
}

}  // namespace

SampledReference conv_sampled_reference(ConvProblem const& problem, ConvOperands const& ops, int count,
                                        std::uint64_t seed, cudaStream_t stream) {
  Conv2dProblem const& s = problem.shape;
  OutputMatrix const om = output_matrix(problem);
  std::vector<SampleCoordinate> coordinates = choose_samples(1, om.rows, om.cols, count, seed);
  int const n = static_cast<int>(coordinates.size());

  ConvGeometryParams g{};
  g.n = s.N, g.h = s.H, g.w = s.W, g.c = s.C, g.k = s.K, g.r = s.R, g.s = s.S, g.p = s.P(), g.q = s.Q();
  g.pad_h = s.pad_h, g.pad_w = s.pad_w, g.stride_h = s.stride_h, g.stride_w = s.stride_w;
  g.dil_h = s.dilation_h, g.dil_w = s.dilation_w;
  g.mode = s.mode == ConvMode::kFprop ? 0 : s.mode == ConvMode::kDgrad ? 1 : 2;
  g.fused = problem.epilogue == ConvEpilogue::kBiasReluResidual;

  DeviceBuffer device_samples(sizeof(SampleCoordinate) * coordinates.size());
  DeviceBuffer device_values(sizeof(double) * coordinates.size());
  BENCH_CUDA_CHECK(cudaMemcpyAsync(device_samples.get(), coordinates.data(), device_samples.bytes(),
                                   cudaMemcpyHostToDevice, stream));
  int constexpr kThreads = 256;
  auto const blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) * 32 + kThreads - 1) / kThreads);
  auto const* samples = device_samples.as<SampleCoordinate const>();
  if (problem.dtype == DType::kBF16) {
    conv_reference_kernel<<<blocks, kThreads, 0, stream>>>(samples, n, g, typed_inputs<bfloat16_t>(ops), om.cols,
                                                           device_values.as<double>());
  } else {
    conv_reference_kernel<<<blocks, kThreads, 0, stream>>>(samples, n, g, typed_inputs<half_t>(ops), om.cols,
                                                           device_values.as<double>());
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
  std::vector<double> reference(coordinates.size());
  BENCH_CUDA_CHECK(cudaMemcpyAsync(reference.data(), device_values.get(), device_values.bytes(),
                                   cudaMemcpyDeviceToHost, stream));
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return SampledReference(std::move(coordinates), std::move(reference), om.rows, om.cols, problem.dtype, stream);
}

}  // namespace tilefuse::bench
