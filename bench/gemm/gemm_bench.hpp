// One benchmark row, end to end: allocate rotating operand sets, check every implementation against a
// float64 sample (a wrong kernel is marked, never timed), then time tilefuse and its peers in the same
// process on the same data.
//
// Peers: epilogue none -> cuBLAS cublasGemmEx (tf32: CUBLAS_COMPUTE_32F_FAST_TF32). bias_gelu_residual ->
// (a) cuBLASLt GELU_BIAS + a residual add kernel, (b) cuBLAS + a bias+GELU kernel + a residual add kernel
// (the unfused baseline).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cublas_gemm.hpp"
#include "cublaslt_gemm.hpp"
#include "cuda_check.hpp"
#include "device_info.hpp"
#include "problems.hpp"
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
};

class GemmBench {
 public:
  GemmBench(DeviceInfo const& device, BenchSettings const& settings, cudaStream_t stream);

  // Throws FatalDeviceError when the device is unusable afterwards; any other failure is in the row.
  ResultRow run(GemmProblem const& problem);

  CublasGemm const& cublas() const { return cublas_; }
  // Device memory a run may take for operand sets: most of what is free now.
  std::size_t memory_budget() const;

 private:
  DeviceInfo device_;
  BenchSettings settings_;
  cudaStream_t stream_;
  CublasGemm cublas_;
  CublasLtGeluBias cublaslt_;
};

}  // namespace tilefuse::bench
