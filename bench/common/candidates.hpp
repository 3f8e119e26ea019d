// The implementations of one benchmark row (tilefuse first, then its peers) and the three steps every
// row takes with them, shared by the gemm and conv2d benchmarks:
//   check:  each runs once on operand set 0 with the output poisoned, and is compared with the sampled
//           float64 reference;
//   judge:  a peer grossly off is not timed, a peer above the dtype's tolerance is timed and noted;
//           tilefuse must stay within the tolerance, or within twice the best peer's error where that is
//           larger (peers round intermediates to the output type; cuBLAS may sum split-K partials in it);
//   time:   the ones still runnable are timed on the rotating sets, in the mirrored order A B C C B A
//           (half the reps each pass; a result is the mean of its two medians), or with --interleave
//           call by call in turn (A B C, C B A, ..., each call of a round on its own operand set).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "reference_check.hpp"
#include "results.hpp"
#include "timing.hpp"

namespace tilefuse::bench {

struct Candidate {
  Measurement measurement;
  std::function<void(int)> op;  // runs on one operand set; empty when it cannot run
  std::vector<float> sampled;   // its output at the reference's samples
  // Computes something else than the row (tilefuse's plain epilogue beside its fused one, to time what
  // the fusion costs under the same clocks): not checked here; its own row checks it.
  bool checked_elsewhere = false;
};

// After a failed call: throws FatalDeviceError when the CUDA context is gone, so the run stops.
void check_device_alive(std::string const& what);

// poison() fills set 0's output with NaN; `output` is set 0's output as the reference gathers it.
void check_candidates(std::vector<Candidate>& candidates, SampledReference const& reference,
                      std::function<void()> const& poison, void const* output, cudaStream_t stream);
// candidates[0] is tilefuse. A candidate that fails is marked and its op cleared.
void judge_candidates(std::vector<Candidate>& candidates, DType dtype);
void time_candidates(std::vector<Candidate>& candidates, int num_sets, TimingOptions const& timing, double flops,
                     cudaStream_t stream);

// check and judge, with what the row records of them: the sample count, the reference's size, and
// tilefuse's output against the first peer's.
void check_row(RowResults& row, std::vector<Candidate>& candidates, SampledReference const& reference,
               std::function<void()> const& poison, void const* output, DType dtype, cudaStream_t stream);
// After timing: tilefuse's measurement and its peers' into the row.
void record_measurements(RowResults& row, std::vector<Candidate>& candidates);

}  // namespace tilefuse::bench
