// The sampled float64 reference and the comparison (see reference_check.hpp).
#include "reference_check.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include <tilefuse/core/numeric_types.h>

#include "element_type.cuh"

namespace tilefuse::bench {
namespace {

struct ReferenceParams {
  std::int64_t k;
  PackedStrides s;
  bool a_row_major;
  bool b_row_major;
  bool fused;
};

__device__ double gelu_tanh_device(double x) {
  return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// One warp per sample: lanes stride over K, then a shuffle reduction; lane 0 applies the epilogue.
template <class T>
__global__ void reference_kernel(SampleCoordinate const* samples, int count, T const* a, T const* b, T const* bias,
                                 T const* c, ReferenceParams p, double* out) {
  int const warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  int const lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= count) return;
  SampleCoordinate const s = samples[warp];
  T const* a_batch = a + s.batch * p.s.batch_stride_a;
  T const* b_batch = b + s.batch * p.s.batch_stride_b;
  double acc = 0.0;
  for (std::int64_t kk = lane; kk < p.k; kk += 32) {
    T const x = p.a_row_major ? a_batch[s.row * p.s.lda + kk] : a_batch[kk * p.s.lda + s.row];
    T const y = p.b_row_major ? b_batch[kk * p.s.ldb + s.col] : b_batch[s.col * p.s.ldb + kk];
    acc += static_cast<double>(to_float(x)) * static_cast<double>(to_float(y));
  }
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (lane != 0) return;
  if (p.fused) {
    double const x = acc + static_cast<double>(to_float(bias[s.col]));
    acc = gelu_tanh_device(x) +
          static_cast<double>(to_float(c[s.batch * p.s.batch_stride_d + s.row * p.s.ldd + s.col]));
  }
  out[warp] = acc;
}

template <class T>
__global__ void gather_kernel(SampleCoordinate const* samples, int count, T const* d, PackedStrides s, float* out) {
  int const i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  SampleCoordinate const c = samples[i];
  out[i] = to_float(d[c.batch * s.batch_stride_d + c.row * s.ldd + c.col]);
}

}  // namespace

std::vector<SampleCoordinate> choose_samples(std::int64_t batch_count, std::int64_t rows, std::int64_t cols, int count,
                                             std::uint64_t seed) {
  std::vector<SampleCoordinate> out;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> batch(0, batch_count - 1), row(0, rows - 1), col(0, cols - 1);
  for (int i = 0; i < count; ++i) out.push_back({batch(rng), row(rng), col(rng)});
  for (std::int64_t b : {std::int64_t{0}, batch_count - 1}) {
    for (std::int64_t r : {std::int64_t{0}, rows - 1}) {
      for (std::int64_t c : {std::int64_t{0}, cols - 1}) out.push_back({b, r, c});
    }
  }
  std::int64_t constexpr kEdge = 256;
  for (std::int64_t i = 0; i < std::min(kEdge, cols); ++i) {
    out.push_back({batch_count - 1, rows - 1, cols - 1 - i * std::max<std::int64_t>(cols / kEdge, 1)});
  }
  for (std::int64_t i = 0; i < std::min(kEdge, rows); ++i) {
    out.push_back({batch_count - 1, rows - 1 - i * std::max<std::int64_t>(rows / kEdge, 1), cols - 1});
  }
  return out;
}

Tolerance error_tolerance(DType dtype) {
  if (dtype == DType::kTF32) {
    // The inputs' rounding to tf32 dominates: an absolute error of about 0.8u rms(ref) per element,
    // whatever |ref| is. So only the absolute bound carries information; the relative one is what it
    // implies through the 0.01 rms floor of max_error (16u / 0.01), so it never refuses on its own.
    double constexpr u = 0x1.0p-11;  // 11 significant bits, like fp16
    return Tolerance{16 * u / 0.01, 16 * u};
  }
  double const u = dtype == DType::kBF16 ? 0x1.0p-8 : 0x1.0p-11;  // 8 and 11 significant bits
  return Tolerance{4 * u, 16 * u};
}

SampledReference::SampledReference(GemmProblem const& problem, GemmOperands const& ops, int count, std::uint64_t seed,
                                   cudaStream_t stream)
    : problem_(problem), strides_(ops.strides), stream_(stream) {
  coordinates_ = choose_samples(problem.batch, problem.m, problem.n, count, seed);
  int const n = static_cast<int>(coordinates_.size());
  upload_coordinates();
  ReferenceParams const params{problem.k, ops.strides, problem.layout.a_row_major, problem.layout.b_row_major,
                               problem.epilogue == EpilogueKind::kBiasGeluResidual};
  int constexpr kThreads = 256;
  unsigned const blocks = static_cast<unsigned>((static_cast<std::int64_t>(n) * 32 + kThreads - 1) / kThreads);
  auto const* samples = device_coordinates_.as<SampleCoordinate const>();
  auto* out = device_values_.as<double>();
  with_element_type(problem.dtype, [&](auto element) {
    using T = decltype(element);
    reference_kernel<<<blocks, kThreads, 0, stream>>>(samples, n, static_cast<T const*>(ops.a),
                                                      static_cast<T const*>(ops.b), static_cast<T const*>(ops.bias),
                                                      static_cast<T const*>(ops.c), params, out);
  });
  BENCH_CUDA_CHECK(cudaGetLastError());
  std::vector<double> reference(coordinates_.size());
  BENCH_CUDA_CHECK(cudaMemcpyAsync(reference.data(), out, sizeof(double) * reference.size(), cudaMemcpyDeviceToHost,
                                   stream));
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  set_reference(std::move(reference));
}

SampledReference::SampledReference(std::vector<SampleCoordinate> coordinates, std::vector<double> reference,
                                   std::int64_t rows, std::int64_t cols, DType dtype, cudaStream_t stream)
    : strides_{}, stream_(stream), coordinates_(std::move(coordinates)) {
  problem_.m = rows;
  problem_.n = cols;
  problem_.dtype = dtype;
  strides_.ldd = cols;
  strides_.batch_stride_d = rows * cols;
  upload_coordinates();
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  set_reference(std::move(reference));
}

void SampledReference::upload_coordinates() {
  device_coordinates_ = DeviceBuffer(sizeof(SampleCoordinate) * coordinates_.size());
  device_values_ = DeviceBuffer(sizeof(double) * coordinates_.size());
  BENCH_CUDA_CHECK(cudaMemcpyAsync(device_coordinates_.get(), coordinates_.data(), device_coordinates_.bytes(),
                                   cudaMemcpyHostToDevice, stream_));
}

void SampledReference::set_reference(std::vector<double> reference) {
  reference_ = std::move(reference);
  double sum = 0;
  for (double r : reference_) sum += r * r;
  rms_ = reference_.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(reference_.size()));
}

std::vector<float> SampledReference::gather(void const* d) const {
  int const n = size();
  int constexpr kThreads = 256;
  unsigned const blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  auto const* samples = device_coordinates_.as<SampleCoordinate const>();
  auto* out = device_values_.as<float>();  // reuses the reference's buffer (large enough: doubles)
  with_element_type(problem_.dtype, [&](auto element) {
    using T = decltype(element);
    gather_kernel<<<blocks, kThreads, 0, stream_>>>(samples, n, static_cast<T const*>(d), strides_, out);
  });
  BENCH_CUDA_CHECK(cudaGetLastError());
  std::vector<float> values(static_cast<std::size_t>(n));
  BENCH_CUDA_CHECK(cudaMemcpyAsync(values.data(), out, sizeof(float) * values.size(), cudaMemcpyDeviceToHost, stream_));
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return values;
}

SampleError SampledReference::error_of(std::vector<float> const& values) const {
  return compare(values, reference_, rms_);
}

SampleError SampledReference::difference(std::vector<float> const& values, std::vector<float> const& baseline) const {
  std::vector<double> expected(baseline.begin(), baseline.end());
  double sum = 0;
  for (double e : expected) sum += std::isfinite(e) ? e * e : 0.0;
  double const rms = expected.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(expected.size()));
  return compare(values, expected, rms);
}

SampleError SampledReference::compare(std::vector<float> const& values, std::vector<double> const& expected,
                                      double rms) const {
  SampleError e;
  double const floor = 0.01 * rms + 1e-30;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < values.size() && i < expected.size(); ++i) {
    double const x = values[i];
    double error = INFINITY;
    if (!std::isfinite(x) || !std::isfinite(expected[i])) {
      ++e.nonfinite;
      e.max_abs_error = INFINITY;
    } else {
      double const difference = std::fabs(x - expected[i]);
      error = difference / (std::fabs(expected[i]) + floor);
      e.max_abs_error = std::max(e.max_abs_error, difference / (rms + 1e-30));
    }
    if (error > e.max_error) {
      e.max_error = error;
      worst = i;
    }
  }
  if (!values.empty()) {
    SampleCoordinate const c = coordinates_[worst];
    std::ostringstream where;
    where << "D[" << c.batch << ", " << c.row << ", " << c.col << "] = " << values[worst] << ", expected "
          << expected[worst];
    e.worst = where.str();
  }
  return e;
}

}  // namespace tilefuse::bench
