// The quickstart: one fused convolution, y = relu(conv2d(x, w) + bias) + residual, checked and timed.
//
// Today every kernel runs on the host reference: the sm_80 and Hopper convolution kernels arrive with
// their own issues, and this program will run them on a GPU and check them against the same reference.
// On a machine without a GPU it says so. The epilogue is the same visitor tree a kernel fuses.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/epilogue/host_driver.hpp>
#include <tilefuse/reference/conv2d.hpp>

using namespace tilefuse;
using namespace tilefuse::epilogue;

// relu(acc + bias[k]) + residual, stored as bfloat16: ResNet's conv + bias + ReLU + add in one epilogue.
using FusedEpilogue = Store<"y", bfloat16_t, Add<Relu<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"residual", bfloat16_t>>>;

namespace {

std::vector<bfloat16_t> random_integers(std::size_t count, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<bfloat16_t> v(count);
  for (auto& x : v) x = convert<bfloat16_t>(static_cast<float>(dist(rng)));
  return v;
}

void report_device() {
  int count = 0;
  cudaError_t const err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("No CUDA GPU on this machine (cudaGetDeviceCount: %s): running the fused convolution on the "
                "host reference.\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU 0: %s (sm_%d%d). tilefuse has no convolution kernel yet, so this run uses the host "
              "reference too.\n",
              prop.name, prop.major, prop.minor);
}

}  // namespace

int main() {
  report_device();

  Conv2dProblem problem;
  problem.N = 2, problem.H = 14, problem.W = 14, problem.C = 16, problem.K = 32;
  problem.R = 3, problem.S = 3, problem.pad_h = 1, problem.pad_w = 1;
  if (Status s = check(problem); !s.ok()) {
    std::printf("bad problem: %s\n", s.to_string().c_str());
    return 1;
  }
  Coord4D const x_extent = problem.activation_extent();
  Coord4D const w_extent = problem.filter_extent();
  Coord4D const y_extent = problem.output_extent();
  index_t const rows = y_extent.d0 * y_extent.d1 * y_extent.d2;  // N * P * Q: the implicit GEMM's M
  index_t const cols = y_extent.d3;                              // K: its N

  // Small integers keep every product and sum exact in float, so the check below is exact.
  std::mt19937 rng(2026);
  auto const x = random_integers(x_extent.d0 * x_extent.d1 * x_extent.d2 * x_extent.d3, rng, -2, 2);
  auto const w = random_integers(w_extent.d0 * w_extent.d1 * w_extent.d2 * w_extent.d3, rng, -2, 2);
  auto const bias = random_integers(static_cast<std::size_t>(cols), rng, -8, 8);
  auto const residual = random_integers(static_cast<std::size_t>(rows * cols), rng, -8, 8);
  std::vector<float> acc(static_cast<std::size_t>(rows * cols));
  std::vector<bfloat16_t> y(acc.size(), convert<bfloat16_t>(NAN));  // poisoned

  auto const start = std::chrono::steady_clock::now();
  Status s = reference::conv2d_fprop(problem, TensorNHWC<bfloat16_t const>::packed(x.data(), x_extent),
                                     TensorKRSC<bfloat16_t const>::packed(w.data(), w_extent),
                                     TensorNHWC<float>::packed(acc.data(), y_extent));
  EpilogueArguments<FusedEpilogue> args;
  args.set("bias", bias.data(), {.batch_stride = 0}).set("residual", residual.data()).set("y", y.data());
  if (s.ok()) s = run_host(args, MatrixRef<float const, RowMajor>::packed(acc.data(), rows, cols), {rows, cols, 1});
  double const ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    std::printf("fused convolution failed: %s\n", s.to_string().c_str());
    return 1;
  }

  // Check every element against the formula computed directly, tap by tap.
  auto const xr = TensorNHWC<bfloat16_t const>::packed(x.data(), x_extent);
  auto const wr = TensorKRSC<bfloat16_t const>::packed(w.data(), w_extent);
  index_t mismatches = 0;
  for (index_t n = 0; n < problem.N; ++n)
    for (index_t p = 0; p < problem.P(); ++p)
      for (index_t q = 0; q < problem.Q(); ++q)
        for (index_t k = 0; k < problem.K; ++k) {
          double sum = 0.0;
          for (index_t r = 0; r < problem.R; ++r)
            for (index_t t = 0; t < problem.S; ++t) {
              index_t const h = p * problem.stride_h - problem.pad_h + r * problem.dilation_h;
              index_t const v = q * problem.stride_w - problem.pad_w + t * problem.dilation_w;
              if (h < 0 || h >= problem.H || v < 0 || v >= problem.W) continue;
              for (index_t c = 0; c < problem.C; ++c) sum += to_double(xr.at(n, h, v, c)) * to_double(wr.at(k, r, t, c));
            }
          index_t const row = (n * problem.P() + p) * problem.Q() + q;
          double const want = std::max(sum + to_double(bias[k]), 0.0) + to_double(residual[row * cols + k]);
          double const got = to_double(y[row * cols + k]);
          if (got != to_double(convert<bfloat16_t>(want)) && mismatches++ < 5) {
            std::printf("mismatch at n=%lld p=%lld q=%lld k=%lld: got %g, want %g\n", static_cast<long long>(n),
                        static_cast<long long>(p), static_cast<long long>(q), static_cast<long long>(k), got, want);
          }
        }

  double const flops = 2.0 * rows * cols * problem.R * problem.S * problem.C;
  std::printf("conv2d fprop + bias + relu + residual, N=%lld H=%lld W=%lld C=%lld K=%lld R=S=3 pad=1 (bf16)\n",
              static_cast<long long>(problem.N), static_cast<long long>(problem.H), static_cast<long long>(problem.W),
              static_cast<long long>(problem.C), static_cast<long long>(problem.K));
  std::printf("host reference: %.2f ms (%.3f GFLOP/s); %lld of %lld outputs checked exactly: %s\n", ms,
              flops / ms * 1e-6, static_cast<long long>(rows * cols - mismatches), static_cast<long long>(rows * cols),
              mismatches == 0 ? "all correct" : "MISMATCHES");
  return mismatches == 0 ? 0 : 1;
}
