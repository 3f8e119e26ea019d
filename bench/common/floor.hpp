// The floor: the shortest time the device could take for a problem, from two rates measured in this
// run. floor = max(FLOPs / matmul rate, minimal bytes / copy bandwidth), where
//   matmul rate    = the best cuBLAS TFLOP/s on an 8192^3 bf16 GEMM in this run (all four layouts are
//                    measured at start; a faster 8192^3 bf16 cuBLAS row later in the run raises it),
//   copy bandwidth = cudaMemcpyAsync device-to-device of 1 GiB, counting read + write (2 GiB per copy).
// fp16 rows use the bf16 rate (the tensor cores run both at the same rate). tf32 rows use the tf32 rate:
// half the bf16 rate, the ratio of the dense tensor-core peaks (H100 / H200 SXM: 494.7 against 989.4
// TFLOP/s; A100: 156 against 312), or the best cuBLAS tf32 8192^3 row of the run where that is faster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cublas_gemm.hpp"
#include "problems.hpp"
#include "timing.hpp"

namespace tilefuse::bench {

struct FloorRates {
  bool measured = false;
  double matmul_tflops = 0;
  std::string matmul_source;  // which measurement gave the rate
  std::vector<std::pair<std::string, double>> matmul_by_layout;  // cuBLAS 8192^3 bf16, TFLOP/s
  double tf32_row_tflops = 0;      // the best cuBLAS tf32 8192^3 row so far (0: none yet)
  std::string tf32_row_source;
  double copy_gbps = 0;
  double copy_ms = 0;  // median time of one 1 GiB copy
  std::string note;    // why not measured
};

FloorRates measure_floor_rates(CublasGemm const& cublas, std::int64_t l2_bytes, std::size_t memory_budget,
                               TimingOptions const& timing, std::uint64_t seed, cudaStream_t stream);

// tf32 dense tensor-core peak / bf16 dense tensor-core peak: one half on the A100, H100 and H200.
inline constexpr double kTf32PeakPerBf16Peak = 0.5;

// The problem the matmul rate is measured on (8192^3 bf16, epilogue none) in a given layout.
GemmProblem matmul_rate_problem(OperandLayout layout);
bool is_matmul_rate_problem(GemmProblem const& p);
// Raises the rate of the row's dtype when a cuBLAS row of the rate shape (8192^3, epilogue none; bf16
// or tf32) ran faster than what the rate is now.
void consider_matmul_rate(FloorRates& rates, GemmProblem const& p, double tflops, std::string const& source);
// The matmul rate a row of `dtype` is held to, in TFLOP/s, and where it comes from.
double matmul_tflops_for(DType dtype, FloorRates const& rates);
std::string matmul_source_for(DType dtype, FloorRates const& rates);

// In milliseconds; 0 when the rates were not measured.
double floor_ms(GemmProblem const& p, FloorRates const& rates);

}  // namespace tilefuse::bench
