// The correctness guard: a benchmark must not time a wrong kernel. D is computed in float64 at a sample
// of coordinates straight from the inputs (one warp per element, no cuBLAS, no tilefuse), and every
// implementation's D is compared with it at those coordinates after one run on a poisoned (NaN) output.
//
// Two numbers per implementation, over the samples (a non-finite value counts as infinite):
//   max_error     = max |x - ref| / (|ref| + 0.01 rms(ref)): relative, with a small floor so that entries
//                   near zero (where relative error means nothing) do not fail on rounding alone;
//   max_abs_error = max |x - ref| / rms(ref): absolute, in units of the output's size.
// Rounding once to bf16 (unit roundoff u = 2^-8) or fp16 (u = 2^-11) gives about u and 3u; a dropped
// 16-wide k-slice gives a max_abs_error near 0.2, a misplaced tile near 1 (emulated on the host with
// K = 1024..8192 and 4096 samples).
// tf32 (fp32 inputs rounded to tf32, u = 2^-11, fp32 accumulation, fp32 D): the reference is the exact
// product of the fp32 inputs, so the inputs' rounding is the error: about 0.8u * sqrt(sum_k (a b)^2)
// per element, absolute (rms(ref) = sqrt(K) rms(a) rms(b), so max_abs_error already scales with K and
// the magnitudes). Host emulation, K = 1024..8192, 4096 samples, 20 draws: max_abs_error <= 3.2u
// rounding to nearest, <= 7.6u truncating; max_error up to 230u (entries near zero); one dropped
// product gives a max_abs_error above 260u.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "operands.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

// One sampled output element.
struct SampleCoordinate {
  std::int64_t batch, row, col;
};

struct SampleError {
  double max_error = 0;
  double max_abs_error = 0;
  std::int64_t nonfinite = 0;
  std::string worst;  // "D[b, r, c] = x, expected y"
};

// What a correct kernel stays below: max_error <= 4u, max_abs_error <= 16u (u: the output's unit
// roundoff; bf16: 0.0156 and 0.0625, fp16: 0.00195 and 0.0078). tf32: max_abs_error <= 16u = 0.0078
// (u = 2^-11, the inputs' rounding), and max_error <= 16u / 0.01 = 0.78, which the first implies.
struct Tolerance {
  double max_error;
  double max_abs_error;
};
Tolerance error_tolerance(DType dtype);
// A peer whose max_abs_error exceeds this computes something else (a setup bug in the benchmark): it is
// not timed. Below it, a peer above the tolerance is still timed (cuBLAS may sum split-K partials in
// bf16/fp16, which PyTorch allows by default too) and only noted.
inline constexpr double kPeerGrossError = 0.1;

// `count` random coordinates of a batch x rows x cols output plus the four corners of the first and last
// batch entries and up to 256 points each along the last row and the last column (partial tiles live there).
std::vector<SampleCoordinate> choose_samples(std::int64_t batch, std::int64_t rows, std::int64_t cols, int count,
                                             std::uint64_t seed);

class SampledReference {
 public:
  // The GEMM's D at choose_samples(batch, m, n, count, seed), computed in float64 from A and B.
  SampledReference(GemmProblem const& problem, GemmOperands const& ops, int count, std::uint64_t seed,
                   cudaStream_t stream);
  // Samples whose float64 values were computed elsewhere (the conv2d reference), of an output that is one
  // packed row-major rows x cols matrix of `dtype`.
  SampledReference(std::vector<SampleCoordinate> coordinates, std::vector<double> reference, std::int64_t rows,
                   std::int64_t cols, DType dtype, cudaStream_t stream);

  int size() const { return static_cast<int>(reference_.size()); }
  double rms() const { return rms_; }

  // D (a device pointer with the problem's packed strides) at the sampled coordinates.
  std::vector<float> gather(void const* d) const;
  // Against the float64 reference.
  SampleError error_of(std::vector<float> const& values) const;
  // Against another implementation's values at the same samples (the same formula, `baseline` as ref).
  SampleError difference(std::vector<float> const& values, std::vector<float> const& baseline) const;

 private:
  SampleError compare(std::vector<float> const& values, std::vector<double> const& expected, double rms) const;
  void upload_coordinates();
  void set_reference(std::vector<double> reference);

  GemmProblem problem_;
  PackedStrides strides_;
  cudaStream_t stream_;
  std::vector<SampleCoordinate> coordinates_;
  DeviceBuffer device_coordinates_;
  DeviceBuffer device_values_;
  std::vector<double> reference_;
  double rms_ = 0;
};

}  // namespace tilefuse::bench
