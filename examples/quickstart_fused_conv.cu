// The quickstart: one fused convolution, y = relu(conv2d(x, w) + bias) + residual, checked and timed.
//
// On a GPU it runs tilefuse's Conv2d (one kernel: the implicit-GEMM mainloop with the epilogue tree
// fused; the Hopper kernel on sm_90, the sm_80 path elsewhere), checks every output against the host
// reference and times it with CUDA events. On a machine without a GPU it says so and runs the same
// operation on the host reference: the reference convolution, then the same epilogue tree the kernel
// fuses, applied by the host driver.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tilefuse/conv/conv2d_problem_check.hpp>
#include <tilefuse/conv/device/conv2d.hpp>
#include <tilefuse/epilogue/host_driver.hpp>
#include <tilefuse/reference/conv2d.hpp>

using namespace tilefuse;
using namespace tilefuse::epilogue;

// relu(acc + bias[k]) + residual, stored as bfloat16: ResNet's conv + bias + ReLU + add in one epilogue.
using FusedEpilogue = Store<"y", bfloat16_t, Add<Relu<Add<Acc, RowBroadcast<"bias", bfloat16_t>>>, AuxLoad<"residual", bfloat16_t>>>;
using FusedConv = conv::Conv2d<bfloat16_t, ConvMode::kFprop, FusedEpilogue>;

namespace {

std::vector<bfloat16_t> random_integers(std::size_t count, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<bfloat16_t> v(count);
  for (auto& x : v) x = convert<bfloat16_t>(static_cast<float>(dist(rng)));
  return v;
}

// The GPU to run on, or -1 (and why) when there is none.
int find_gpu() {
  int count = 0;
  cudaError_t const err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("No CUDA GPU on this machine (cudaGetDeviceCount: %s): running the fused convolution on the "
                "host reference.\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    (void)cudaGetLastError();
    return -1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU 0: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  return 0;
}

struct Tensors {
  std::vector<bfloat16_t> x, w, bias, residual;
};

// The host reference: conv2d in float (exact on these integers), then the epilogue tree on the host.
Status run_reference(Conv2dProblem const& problem, Tensors const& t, std::vector<bfloat16_t>& y, double* ms) {
  Coord4D const y_extent = problem.output_extent();
  index_t const rows = y_extent.d0 * y_extent.d1 * y_extent.d2;
  index_t const cols = y_extent.d3;
  std::vector<float> acc(static_cast<std::size_t>(rows * cols));
  auto const start = std::chrono::steady_clock::now();
  Status s = reference::conv2d_fprop(problem, TensorNHWC<bfloat16_t const>::packed(t.x.data(), problem.activation_extent()),
                                     TensorKRSC<bfloat16_t const>::packed(t.w.data(), problem.filter_extent()),
                                     TensorNHWC<float>::packed(acc.data(), y_extent));
  EpilogueArguments<FusedEpilogue> args;
  args.set("bias", t.bias.data(), {.batch_stride = 0}).set("residual", t.residual.data()).set("y", y.data());
  if (s.ok()) s = run_host(args, MatrixRef<float const, RowMajor>::packed(acc.data(), rows, cols), {rows, cols, 1});
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return s;
}

#define QUICKSTART_CHECK(call)                                                                     \
  do {                                                                                             \
    cudaError_t const e = (call);                                                                  \
    if (e != cudaSuccess) {                                                                        \
      std::printf("%s failed: %s\n", #call, cudaGetErrorString(e));                                \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

// Runs the fused Conv2d on the GPU, copies y back, and times it (median of 20 calls after warm-up).
int run_gpu(Conv2dProblem const& problem, Tensors const& t, std::vector<bfloat16_t>& y, double* median_ms) {
  auto bytes = [](auto const& v) { return v.size() * sizeof(v[0]); };
  bfloat16_t *x = nullptr, *w = nullptr, *bias = nullptr, *residual = nullptr, *out = nullptr;
  QUICKSTART_CHECK(cudaMalloc(&x, bytes(t.x)));
  QUICKSTART_CHECK(cudaMalloc(&w, bytes(t.w)));
  QUICKSTART_CHECK(cudaMalloc(&bias, bytes(t.bias)));
  QUICKSTART_CHECK(cudaMalloc(&residual, bytes(t.residual)));
  QUICKSTART_CHECK(cudaMalloc(&out, bytes(y)));
  QUICKSTART_CHECK(cudaMemcpy(x, t.x.data(), bytes(t.x), cudaMemcpyHostToDevice));
  QUICKSTART_CHECK(cudaMemcpy(w, t.w.data(), bytes(t.w), cudaMemcpyHostToDevice));
  QUICKSTART_CHECK(cudaMemcpy(bias, t.bias.data(), bytes(t.bias), cudaMemcpyHostToDevice));
  QUICKSTART_CHECK(cudaMemcpy(residual, t.residual.data(), bytes(t.residual), cudaMemcpyHostToDevice));
  QUICKSTART_CHECK(cudaMemset(out, 0xff, bytes(y)));  // NaN: an output the kernel skips shows up

  FusedConv::Arguments args;
  args.problem = problem;
  args.x = x;
  args.w = w;
  args.epilogue.set("y", out).set("bias", bias, {.batch_stride = 0}).set("residual", residual);
  if (Status s = FusedConv::can_implement(args); !s.ok()) {
    std::printf("Conv2d refused the problem: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("kernel: %s\n", FusedConv::describe(args).c_str());
  std::size_t const workspace_bytes = FusedConv::workspace_size(args);
  void* workspace = nullptr;
  if (workspace_bytes > 0) QUICKSTART_CHECK(cudaMalloc(&workspace, workspace_bytes));

  cudaStream_t stream = nullptr;
  QUICKSTART_CHECK(cudaStreamCreate(&stream));
  if (Status s = FusedConv::run(args, workspace, stream); !s.ok()) {
    std::printf("Conv2d::run failed: %s\n", s.to_string().c_str());
    return 1;
  }
  QUICKSTART_CHECK(cudaStreamSynchronize(stream));
  QUICKSTART_CHECK(cudaMemcpy(y.data(), out, bytes(y), cudaMemcpyDeviceToHost));

  cudaEvent_t begin, end;
  QUICKSTART_CHECK(cudaEventCreate(&begin));
  QUICKSTART_CHECK(cudaEventCreate(&end));
  for (int i = 0; i < 5; ++i) (void)FusedConv::run(args, workspace, stream);  // warm-up
  std::vector<float> times;
  for (int i = 0; i < 20; ++i) {
    QUICKSTART_CHECK(cudaEventRecord(begin, stream));
    (void)FusedConv::run(args, workspace, stream);
    QUICKSTART_CHECK(cudaEventRecord(end, stream));
    QUICKSTART_CHECK(cudaEventSynchronize(end));
    float ms = 0;
    QUICKSTART_CHECK(cudaEventElapsedTime(&ms, begin, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  *median_ms = times[times.size() / 2];
  cudaEventDestroy(begin), cudaEventDestroy(end), cudaStreamDestroy(stream);
  cudaFree(x), cudaFree(w), cudaFree(bias), cudaFree(residual), cudaFree(out), cudaFree(workspace);
  return 0;
}

}  // namespace

int main() {
  int const gpu = find_gpu();

  // A ResNet-50 3x3 layer at batch 8 (the host reference takes a second or two to check it).
  Conv2dProblem problem;
  problem.N = 8, problem.H = 56, problem.W = 56, problem.C = 64, problem.K = 64;
  problem.R = 3, problem.S = 3, problem.pad_h = 1, problem.pad_w = 1;
  if (gpu < 0) problem.N = 2, problem.H = problem.W = 14, problem.C = 16, problem.K = 32;  // host: keep it quick
  if (Status s = check(problem); !s.ok()) {
    std::printf("bad problem: %s\n", s.to_string().c_str());
    return 1;
  }
  Coord4D const y_extent = problem.output_extent();
  index_t const rows = y_extent.d0 * y_extent.d1 * y_extent.d2;  // N * P * Q: the implicit GEMM's M
  index_t const cols = y_extent.d3;                              // K: its N

  // Small integers keep every product and sum exact in float, so the check below is exact.
  std::mt19937 rng(2026);
  Tensors t;
  t.x = random_integers(problem.N * problem.H * problem.W * problem.C, rng, -2, 2);
  t.w = random_integers(problem.K * problem.R * problem.S * problem.C, rng, -2, 2);
  t.bias = random_integers(static_cast<std::size_t>(cols), rng, -8, 8);
  t.residual = random_integers(static_cast<std::size_t>(rows * cols), rng, -8, 8);

  std::vector<bfloat16_t> expected(static_cast<std::size_t>(rows * cols), convert<bfloat16_t>(NAN));
  double host_ms = 0;
  if (Status s = run_reference(problem, t, expected, &host_ms); !s.ok()) {
    std::printf("host reference failed: %s\n", s.to_string().c_str());
    return 1;
  }
  double const flops = 2.0 * rows * cols * problem.R * problem.S * problem.C;
  std::printf("conv2d fprop + bias + relu + residual, N=%lld H=%lld W=%lld C=%lld K=%lld R=S=3 pad=1 (bf16)\n",
              static_cast<long long>(problem.N), static_cast<long long>(problem.H), static_cast<long long>(problem.W),
              static_cast<long long>(problem.C), static_cast<long long>(problem.K));
  std::printf("host reference: %.2f ms (%.3f GFLOP/s)\n", host_ms, flops / host_ms * 1e-6);

  // Independent check of the reference itself (tap by tap) on the host run; the GPU run is then
  // compared with the reference element by element, bit for bit.
  std::vector<bfloat16_t> y = expected;
  double gpu_ms = 0;
  if (gpu >= 0) {
    std::fill(y.begin(), y.end(), convert<bfloat16_t>(NAN));
    if (int const rc = run_gpu(problem, t, y, &gpu_ms); rc != 0) return rc;
  }
  auto const xr = TensorNHWC<bfloat16_t const>::packed(t.x.data(), problem.activation_extent());
  auto const wr = TensorKRSC<bfloat16_t const>::packed(t.w.data(), problem.filter_extent());
  index_t mismatches = 0;
  for (index_t row = 0; row < rows; ++row) {
    for (index_t k = 0; k < cols; ++k) {
      double want = 0.0;
      if (gpu >= 0) {
        want = to_double(expected[row * cols + k]);
      } else {
        index_t const n = row / (problem.P() * problem.Q());
        index_t const p = (row / problem.Q()) % problem.P();
        index_t const q = row % problem.Q();
        double sum = 0.0;
        for (index_t r = 0; r < problem.R; ++r)
          for (index_t s = 0; s < problem.S; ++s) {
            index_t const h = p * problem.stride_h - problem.pad_h + r * problem.dilation_h;
            index_t const v = q * problem.stride_w - problem.pad_w + s * problem.dilation_w;
            if (h < 0 || h >= problem.H || v < 0 || v >= problem.W) continue;
            for (index_t c = 0; c < problem.C; ++c) sum += to_double(xr.at(n, h, v, c)) * to_double(wr.at(k, r, s, c));
          }
        want = to_double(convert<bfloat16_t>(std::max(sum + to_double(t.bias[k]), 0.0) + to_double(t.residual[row * cols + k])));
      }
      double const got = to_double(y[row * cols + k]);
      if (!(got == want) && mismatches++ < 5) {
        std::printf("mismatch at output row %lld, channel %lld: got %g, want %g\n", static_cast<long long>(row),
                    static_cast<long long>(k), got, want);
      }
    }
  }
  if (gpu >= 0) {
    std::printf("GPU: %.4f ms median of 20 (%.1f TFLOP/s); ", gpu_ms, flops / gpu_ms * 1e-9);
  }
  std::printf("%lld of %lld outputs checked exactly: %s\n", static_cast<long long>(rows * cols - mismatches),
              static_cast<long long>(rows * cols), mismatches == 0 ? "all correct" : "MISMATCHES");
  return mismatches == 0 ? 0 : 1;
}
