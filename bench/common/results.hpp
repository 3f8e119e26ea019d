// What the benchmark harness records, shared by the GEMM and conv2d benchmarks: one implementation's
// measurement (checked, timed, or why not), what every row holds beside its problem, and the run's settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "reference_check.hpp"
#include "timing.hpp"

namespace tilefuse::bench {

// A device error after which no later call can succeed (an illegal address, a trap): the run stops.
class FatalDeviceError : public BenchError {
 public:
  using BenchError::BenchError;
};

enum class MeasurementState {
  kOk,        // checked and timed
  kMismatch,  // failed the check: not timed
  kRefused,   // can_implement (or cuBLASLt's heuristic) refused the problem
  kNotBuilt,  // no instantiation for this dtype / layout / epilogue
  kError,     // a call failed
};
char const* name_of(MeasurementState s);

struct Measurement {
  std::string implementation;
  MeasurementState state = MeasurementState::kError;
  std::string message;
  Timing timing;
  double tflops = 0;
  bool checked = false;
  SampleError error;       // against the float64 reference
  Tolerance tolerance{};   // what error had to stay within
  std::string warning;     // a peer timed although above the tolerance (see reference_check.hpp)
};

// What every benchmark row holds besides its problem (gemm and conv2d rows).
struct RowResults {
  int operand_sets = 0;
  std::size_t bytes_per_set = 0;
  int check_samples = 0;
  double reference_rms = 0;
  std::string describe;  // tilefuse's Gemm::describe or Conv2d::describe
  Measurement tilefuse;
  std::vector<Measurement> peers;
  bool has_peer_difference = false;
  SampleError tilefuse_vs_first_peer;  // tilefuse's output against the first peer's at the samples
  // A fused row: tilefuse (A) and its plain-epilogue twin (B) timed again in interleaved pairs
  // (timing.hpp time_paired); the fusion's cost is ratio_median - 1.
  bool has_fusion_pairs = false;
  PairedTiming fusion_pairs;
};

struct ResultRow : RowResults {
  GemmProblem problem;
};

struct BenchSettings {
  TimingOptions timing;
  int check_samples = 4096;
  std::uint64_t seed = 0x7f4a7c15u;
  std::string kernel = "sm80";  // gemm: which tilefuse kernel (--kernel sm80 | sm90[-tile] | auto)
  bool peers = true;            // gemm: false (--peers none) times tilefuse alone, e.g. under a clock sampler
};

}  // namespace tilefuse::bench
