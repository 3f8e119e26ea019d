// Check, judge and time the implementations of one row (see candidates.hpp).
#include "candidates.hpp"

#include <algorithm>
#include <cmath>

namespace tilefuse::bench {

char const* name_of(MeasurementState s) {
  switch (s) {
    case MeasurementState::kOk: return "ok";
    case MeasurementState::kMismatch: return "MISMATCH";
    case MeasurementState::kRefused: return "refused";
    case MeasurementState::kNotBuilt: return "not built";
    default: return "error";
  }
}

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
    if (!c.op || c.checked_elsewhere) continue;
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

namespace {

// One result from the two halves of a mirrored run: the median is the mean of the two medians (each
// half saw the other candidates' drift in the opposite order), the extremes are the extremes of both.
Timing combine_halves(Timing const& first, Timing const& second) {
  Timing t;
  t.reps = first.reps + second.reps;
  t.warmup_calls = first.warmup_calls + second.warmup_calls;
  t.median_ms = (first.median_ms + second.median_ms) / 2;
  t.min_ms = std::min(first.min_ms, second.min_ms);
  t.max_ms = std::max(first.max_ms, second.max_ms);
  t.mean_ms = (first.mean_ms * first.reps + second.mean_ms * second.reps) / t.reps;
  t.p10_ms = (first.p10_ms + second.p10_ms) / 2;
  t.p90_ms = (first.p90_ms + second.p90_ms) / 2;
  t.host_us_per_call = (first.host_us_per_call + second.host_us_per_call) / 2;
  return t;
}

// A candidate's timed result, and its rate.
void record_timing(Candidate& c, Timing const& t, double flops) {
  c.measurement.timing = t;
  c.measurement.tflops = flops / (t.median_ms * 1e-3) / 1e12;
  c.measurement.state = MeasurementState::kOk;
}

// --interleave: every runnable candidate in one run of rounds (A B C, C B A, ..., each on its own operand
// set), so that all see the same clocks. NOTES (v129f2): in mirrored halves each candidate's warm-up and
// groups run at its own duty cycle; cuDNN's ~105 us of host time per call leaves the GPU idle ~75% of its
// warm-up, so its timed calls ran at the 1.98 GHz boost clock while ours (8 us) held the H200 at its
// 700 W cap (1.42-1.71 GHz). The first version (v129g) ran every candidate of a round on the same set, and
// the second read warm inputs. False (the caller falls back to mirrored halves) if a candidate fails.
bool time_interleaved_candidates(std::vector<Candidate>& candidates, int num_sets, TimingOptions const& timing,
                                 double flops, cudaStream_t stream) {
  std::vector<std::function<void(int)> const*> ops;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i].op) continue;
    ops.push_back(&candidates[i].op);
    which.push_back(i);
  }
  if (ops.empty()) return true;
  std::vector<Timing> times;
  try {
    times = time_interleaved(ops, num_sets, timing, stream);
  } catch (BenchError const&) {
    return false;
  }
  for (std::size_t j = 0; j < ops.size(); ++j) record_timing(candidates[which[j]], times[j], flops);
  return true;
}

}  // namespace

void time_candidates(std::vector<Candidate>& candidates, int num_sets, TimingOptions const& timing, double flops,
                     cudaStream_t stream) {
  // NOTES: mirrored order A B C C B A, half the reps each time: the H200's clocks drift by 10% and more
  // as it heats (reports v43, v84), so timing the candidates one after another favoured whichever ran
  // first. Each half warms up again.
  if (timing.interleave && time_interleaved_candidates(candidates, num_sets, timing, flops, stream)) return;
  TimingOptions half = timing;
  half.reps = std::max(1, timing.reps / 2);
  std::vector<Timing> first(candidates.size());
  auto const time_one = [&](std::size_t i, Timing* out) {
    Candidate& c = candidates[i];
    if (!c.op) return;
    try {
      *out = time_rotating(c.op, num_sets, half, stream);
    } catch (BenchError const& e) {
      c.measurement.state = MeasurementState::kError;
      c.measurement.message = e.what();
      c.op = nullptr;
      check_device_alive(c.measurement.implementation);
    }
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) time_one(i, &first[i]);
  for (std::size_t i = candidates.size(); i-- > 0;) {
    Timing second;
    time_one(i, &second);
    if (candidates[i].op) record_timing(candidates[i], combine_halves(first[i], second), flops);
  }
}

void check_row(RowResults& row, std::vector<Candidate>& candidates, SampledReference const& reference,
               std::function<void()> const& poison, void const* output, DType dtype, cudaStream_t stream) {
  row.check_samples = reference.size();
  row.reference_rms = reference.rms();
  check_candidates(candidates, reference, poison, output, stream);
  judge_candidates(candidates, dtype);
  if (candidates.size() > 1 && !candidates[0].sampled.empty() && !candidates[1].sampled.empty()) {
    row.has_peer_difference = true;
    row.tilefuse_vs_first_peer = reference.difference(candidates[0].sampled, candidates[1].sampled);
  }
}

void record_measurements(RowResults& row, std::vector<Candidate>& candidates) {
  row.tilefuse = std::move(candidates[0].measurement);
  for (std::size_t i = 1; i < candidates.size(); ++i) row.peers.push_back(std::move(candidates[i].measurement));
}

}  // namespace tilefuse::bench
