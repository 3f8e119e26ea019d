// The timing harness: CUDA events around every call, warm-up first, median of many calls, and each
// call on the next operand set in rotation.
//
// Host launch overhead is kept out of the GPU times: before each group of calls a short delay kernel
// holds the stream while the host queues the group, so a call's start event never fires while the
// GPU waits for the host. What the host spends per call is reported separately.
#pragma once

#include <functional>
#include <vector>

#include <cuda_runtime.h>

namespace tilefuse::bench {

struct TimingOptions {
  int reps = 50;               // timed calls; the median of their times is the result
  int min_warmup_calls = 10;   // warm-up runs at least this many calls ...
  double min_warmup_ms = 100;  // ... and at least this much GPU time (clocks settle)
  // Candidates timed call by call in turn (A B C, C B A, ... each on its own operand set) instead of in
  // mirrored halves (A B C C B A, each with its own warm-up): every candidate then runs at the same
  // clocks. (--interleave; docs/notes/conv_sm90.md v129.)
  bool interleave = false;
};

struct Timing {
  int reps = 0;
  int warmup_calls = 0;
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double mean_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  double host_us_per_call = 0;  // host time to enqueue one call (argument checks, launch)
};

// Calls op(set) with set = 0, 1, ..., num_sets - 1, 0, 1, ... on `stream`. op must only enqueue work
// on `stream` and throw on failure.
Timing time_rotating(std::function<void(int)> const& op, int num_sets, TimingOptions const& options,
                     cudaStream_t stream);

// Two ops timed call by call in turn (A B A B ..., each call on the next operand set), so that both see
// the same clocks: the H200's drift of 10% and more over seconds cancels in each pair's ratio. For a
// cost of one variant over another (a fused epilogue over the plain one), the median of the per-pair
// ratios is steadier than a ratio of two medians taken apart.
struct PairedTiming {
  Timing a;
  Timing b;
  int pairs = 0;
  double ratio_median = 0;  // median over pairs of time(A) / time(B)
  double ratio_p10 = 0;
  double ratio_p90 = 0;
};
PairedTiming time_paired(std::function<void(int)> const& op_a, std::function<void(int)> const& op_b, int num_sets,
                         TimingOptions const& options, cudaStream_t stream);

// Several ops timed call by call in turn, one warm-up and one delay kernel per group for all of them: the
// same clocks for every op, whatever each one's host time. Each op of a round runs on its own operand set
// and the order alternates (round_schedule.hpp), so none reads inputs another has just brought into L2.
// One Timing per op.
std::vector<Timing> time_interleaved(std::vector<std::function<void(int)> const*> const& ops, int num_sets,
                                     TimingOptions const& options, cudaStream_t stream);

// Median of a sample (by value: it sorts).
double median(std::vector<double> values);

}  // namespace tilefuse::bench
