// Check, judge and time the implementations of one row (see candidates.hpp).
#include "candidates.hpp"

#include <algorithm>
#include <cmath>

namespace tilefuse::bench {

void check_device_alive(std::string const& what) {
  cudaError_t const error = cudaDeviceSynchronize();
  if (is_sticky(error) || is_sticky(cudaPeekAtLastError())) {
    throw FatalDeviceError(what + " left the device unusable: " + cudaGetErrorString(error));
  }
  cudaGetLastError();  // clear a non-sticky error
}

void check_candidates(std::vector<Candidate>& candidates, SampledReference const& reference,
                      std::function<void()> const& poison, void const* output, cudaStream_t stream) {
  for (Candidate& c : candidates) {
    if (!c.op) continue;
    try {
      poison();
      c.op(0);
      BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
      c.sampled = reference.gather(output);
      c.measurement.error = reference.error_of(c.sampled);
      c.measurement.checked = true;
    } catch (BenchError const& e) {
      c.measurement.state = MeasurementState::kError;
      c.measurement.message = e.what();
      c.op = nullptr;
      check_device_alive(c.measurement.implementation);
    }
  }
}

void judge_candidates(std::vector<Candidate>& candidates, DType dtype) {
  Tolerance const tolerance = error_tolerance(dtype);
  Tolerance best_peer{INFINITY, INFINITY};
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    Measurement& m = candidates[i].measurement;
    if (!m.checked) continue;
    m.tolerance = tolerance;
    if (!(m.error.max_abs_error <= kPeerGrossError)) {
      m.state = MeasurementState::kMismatch;
      m.message = "max abs error " + std::to_string(m.error.max_abs_error) + " x rms > " +
                  std::to_string(kPeerGrossError) + ": the peer computes something else, at " + m.error.worst;
      candidates[i].op = nullptr;
      continue;
    }
    if (m.error.max_error > tolerance.max_error || m.error.max_abs_error > tolerance.max_abs_error) {
      m.warning = "above the " + std::string(name_of(dtype)) + " tolerance (max error " +
                  std::to_string(m.error.max_error) + ", max abs error " + std::to_string(m.error.max_abs_error) +
                  "), timed anyway";
    }
    best_peer.max_error = std::min(best_peer.max_error, m.error.max_error);
    best_peer.max_abs_error = std::min(best_peer.max_abs_error, m.error.max_abs_error);
  }
  Measurement& tf = candidates[0].measurement;
  if (!tf.checked) return;
  tf.tolerance = tolerance;
  if (std::isfinite(best_peer.max_error)) {
    tf.tolerance.max_error = std::max(tolerance.max_error, 2.0 * best_peer.max_error);
    tf.tolerance.max_abs_error = std::max(tolerance.max_abs_error, 2.0 * best_peer.max_abs_error);
  }
  if (!(tf.error.max_error <= tf.tolerance.max_error && tf.error.max_abs_error <= tf.tolerance.max_abs_error)) {
    tf.state = MeasurementState::kMismatch;
    tf.message = "max error " + std::to_string(tf.error.max_error) + " (tolerance " +
                 std::to_string(tf.tolerance.max_error) + "), max abs error " + std::to_string(tf.error.max_abs_error) +
                 " x rms (tolerance " + std::to_string(tf.tolerance.max_abs_error) + "), " +
                 std::to_string(tf.error.nonfinite) + " non-finite; worst " + tf.error.worst;
    candidates[0].op = nullptr;
  }
}

void time_candidates(std::vector<Candidate>& candidates, int num_sets, TimingOptions const& timing, double flops,
                     cudaStream_t stream) {
  for (Candidate& c : candidates) {
    if (!c.op) continue;
    try {
      c.measurement.timing = time_rotating(c.op, num_sets, timing, stream);
      c.measurement.tflops = flops / (c.measurement.timing.median_ms * 1e-3) / 1e12;
      c.measurement.state = MeasurementState::kOk;
    } catch (BenchError const& e) {
      c.measurement.state = MeasurementState::kError;
      c.measurement.message = e.what();
      check_device_alive(c.measurement.implementation);
    }
  }
}

}  // namespace tilefuse::bench
