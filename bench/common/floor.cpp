// Measures the floor's two rates (see floor.hpp).
#include "floor.hpp"

#include <algorithm>

#include "cuda_check.hpp"
#include "operands.hpp"
#include "random_fill.hpp"

namespace tilefuse::bench {

GemmProblem matmul_rate_problem(OperandLayout layout) {
  return GemmProblem{8192, 8192, 8192, 1, DType::kBF16, layout, EpilogueKind::kNone, 1};
}

namespace {

bool is_matmul_rate_shape(GemmProblem const& p) {
  return p.m == 8192 && p.n == 8192 && p.k == 8192 && p.batch == 1 && p.epilogue == EpilogueKind::kNone;
}

}  // namespace

bool is_matmul_rate_problem(GemmProblem const& p) { return is_matmul_rate_shape(p) && p.dtype == DType::kBF16; }

void consider_matmul_rate(FloorRates& rates, GemmProblem const& p, double tflops, std::string const& source) {
  if (!rates.measured || !is_matmul_rate_shape(p)) return;
  if (p.dtype == DType::kBF16 && tflops > rates.matmul_tflops) {
    rates.matmul_tflops = tflops;
    rates.matmul_source = source;
  }
  if (p.dtype == DType::kTF32 && tflops > rates.tf32_row_tflops) {
    rates.tf32_row_tflops = tflops;
    rates.tf32_row_source = source;
  }
}

double matmul_tflops_for(DType dtype, FloorRates const& rates) {
  if (dtype != DType::kTF32) return rates.matmul_tflops;
  return std::max(kTf32PeakPerBf16Peak * rates.matmul_tflops, rates.tf32_row_tflops);
}

std::string matmul_source_for(DType dtype, FloorRates const& rates) {
  if (dtype != DType::kTF32) return rates.matmul_source;
  if (rates.tf32_row_tflops > kTf32PeakPerBf16Peak * rates.matmul_tflops) return rates.tf32_row_source;
  return "half the bf16 rate (tf32 dense tensor peak = bf16's / 2) of " + rates.matmul_source;
}

FloorRates measure_floor_rates(CublasGemm const& cublas, std::int64_t l2_bytes, std::size_t memory_budget,
                               TimingOptions const& timing, std::uint64_t seed, cudaStream_t stream) {
  FloorRates rates;
  // ---- copy bandwidth: 1 GiB device to device; far larger than L2, so no rotation is needed ----
  std::size_t constexpr kCopyBytes = std::size_t{1} << 30;
  if (2 * kCopyBytes > memory_budget) {
    rates.note = "not enough device memory for the 1 GiB copy";
    return rates;
  }
  {
    DeviceBuffer source(kCopyBytes);
    DeviceBuffer destination(kCopyBytes);
    fill_normal(source.get(), DType::kBF16, static_cast<std::int64_t>(kCopyBytes / 2), seed ^ 0xc0b1, 1.0f, stream);
    TimingOptions copy_timing = timing;
    copy_timing.reps = std::max(10, timing.reps / 2);
    Timing const t = time_rotating(
        [&](int) {
          BENCH_CUDA_CHECK(
              cudaMemcpyAsync(destination.get(), source.get(), kCopyBytes, cudaMemcpyDeviceToDevice, stream));
        },
        1, copy_timing, stream);
    rates.copy_ms = t.median_ms;
    rates.copy_gbps = 2.0 * static_cast<double>(kCopyBytes) / (t.median_ms * 1e-3) / 1e9;
  }
  // ---- matmul rate: cuBLAS 8192^3 bf16 in every layout, the best one ----
  for (OperandLayout layout : all_layouts()) {
    GemmProblem const p = matmul_rate_problem(layout);
    OperandPool pool(p, l2_bytes, memory_budget, seed, stream);
    Timing const t = time_rotating([&](int set) { cublas.run(p, pool[set]); }, pool.size(), timing, stream);
    double const tflops = gemm_flops(p) / (t.median_ms * 1e-3) / 1e12;
    rates.matmul_by_layout.emplace_back(name_of(layout), tflops);
    if (tflops > rates.matmul_tflops) {
      rates.matmul_tflops = tflops;
      rates.matmul_source = "cuBLAS bf16 8192^3 " + name_of(layout) + " (start-up measurement)";
    }
  }
  rates.measured = true;
  return rates;
}

double floor_ms(GemmProblem const& p, FloorRates const& rates) {
  double const matmul_tflops = matmul_tflops_for(p.dtype, rates);
  if (!rates.measured || matmul_tflops <= 0 || rates.copy_gbps <= 0) return 0.0;
  double const compute_s = gemm_flops(p) / (matmul_tflops * 1e12);
  double const memory_s = minimal_bytes(p) / (rates.copy_gbps * 1e9);
  return std::max(compute_s, memory_s) * 1e3;
}

}  // namespace tilefuse::bench
