// tilefuse-fp8-bench: gemm::ScaledGemm (FP8, torch._scaled_mm's semantics) beside cuBLASLt's FP8 matmul
// (what torch._scaled_mm calls) with the same scales and accumulation, in the same process and run.
//   per-tensor  cuBLASLt A/B scale pointers (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
//   row-wise    CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F (one scale per row of A, per column of B)
//   block-wise  VEC128_32F for A (1 x 128 along K), BLK128x128_32F for B (the scale values are random;
//               their layout only matters for correctness, which the GPU tests check)
//   fast / promoted accumulation: CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1 / 0 (torch's use_fast_accum)
// e4m3 A (m x k row-major) and B (k x n column-major), bf16 D. Inputs random normal (quantized to e4m3),
// scales uniform in [0.5, 2]; rotating sets of A, B, D larger than twice the L2. Timing: the shared
// harness (timing.hpp), tilefuse and cuBLASLt in the order A B B A per row (time_pair). Prints a
// markdown table (TFLOP/s, ratio to cuBLASLt, ratio to the FP8 dense peak) and writes it as JSON with
// --json FILE (with tilefuse's host time per call).
// Shapes: issue 7's (8192^3, 4096^3, 4096x14336x4096, 16384x8192x1024), or --m --n --k for one.
// --launch-early off: tilefuse's kernels launched strictly after the previous kernel (the library launches
// its Hopper kernels early by default: LaunchConfig::after_previous_early), to time what that costs or saves.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilefuse/gemm/device/scaled_gemm.hpp>
#include <tilefuse/runtime/default_host_adapter.hpp>

#include "timing.hpp"

#include "fp8_experiment_configs.hpp"  // bench/fp8

namespace {

using namespace tilefuse;
using gemm::Fp8Accumulation;
using gemm::ScalingMode;
using E4m3 = float_e4m3_t;

#define BENCH_CUDA(call)                                                                        \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

__global__ void fill_normal_e4m3(E4m3* data, index_t count, unsigned seed) {
  for (index_t i = index_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += index_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
    unsigned const g = h * 747796405u + 2891336453u;
    float const u1 = (static_cast<float>(h >> 8) + 1.0f) / 16777217.0f;
    float const u2 = static_cast<float>(g >> 8) / 16777216.0f;
    data[i] = convert<E4m3>(sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

__global__ void fill_uniform(float* data, index_t count, unsigned seed, float lo, float hi) {
  for (index_t i = index_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += index_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 2246822519u, h ^= h >> 13;
    data[i] = lo + (hi - lo) * static_cast<float>(h >> 8) / 16777216.0f;
  }
}

struct Set {  // one rotating set of operands
  E4m3* a = nullptr;
  E4m3* b = nullptr;
  float* scale_a = nullptr;  // m values (per-tensor uses the first)
  float* scale_b = nullptr;  // n values
  bfloat16_t* d = nullptr;
  float* amax = nullptr;     // one value (variant 9)
};

// One row's two sides timed by the shared harness (timing.hpp: warm-up, CUDA events per call, host
// enqueue kept out by a delay kernel) in the order A B B A, half the reps each time: the H200's clock
// drifts by 10-20% over a run of FP8 GEMMs (power), so each side's result is the mean of its two
// medians, taken under the same drift as the other's. Returns {A ms, B ms}; B is skipped when absent.
struct PairTiming {
  double a_ms = -1, b_ms = -1;
  double a_host_us = 0;
};
PairTiming time_pair(std::vector<Set> const& sets, std::function<void(Set const&)> const& a,
                     std::function<void(Set const&)> const& b) {
  bench::TimingOptions options;
  options.reps = 25;
  int const n = static_cast<int>(sets.size());
  auto side = [&](std::function<void(Set const&)> const& op) {
    return bench::time_rotating([&](int i) { op(sets[static_cast<std::size_t>(i)]); }, n, options, nullptr);
  };
  PairTiming t;
  bench::Timing const a0 = side(a);
  bench::Timing const b0 = b ? side(b) : bench::Timing{};
  bench::Timing const b1 = b ? side(b) : bench::Timing{};
  bench::Timing const a1 = side(a);
  t.a_ms = (a0.median_ms + a1.median_ms) / 2;
  if (b) t.b_ms = (b0.median_ms + b1.median_ms) / 2;
  t.a_host_us = (a0.host_us_per_call + a1.host_us_per_call) / 2;
  return t;
}

// cuBLASLt's FP8 matmul for one (mode, accumulation); nullopt-like `ok = false` when it has no
// algorithm (e.g. row-wise scales on an older cuBLASLt).
struct LtFp8 {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* workspace = nullptr;
  std::size_t workspace_bytes = 64u << 20;
  bool ok = false;
  std::string why;

  // Row-major D (m x n) = A (m x k, row-major) * B (k x n, column-major) is, column-major,
  // D^T (n x m) = B^T A: cuBLAS's "A" is our B (k x n, ld k, transposed), its "B" our A (ld k).
  LtFp8(index_t m, index_t n, index_t k, ScalingMode mode, bool fast) {
    cublasLtCreate(&handle);
    cudaMalloc(&workspace, workspace_bytes);
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t const t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt));
    std::int8_t const fast_accum = fast ? 1 : 0;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof(fast_accum));
    if (mode == ScalingMode::kRowWise) {
      cublasLtMatmulMatrixScale_t const vec = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &vec, sizeof(vec));
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof(vec));
    } else if (mode == ScalingMode::kBlockWise) {
      // cuBLAS's A is our B (128 x 128 blocks), its B our A (1 x 128 along K).
      cublasLtMatmulMatrixScale_t const blk = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
      cublasLtMatmulMatrixScale_t const vec = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blk, sizeof(blk));
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec, sizeof(vec));
    }
    cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, n, k);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, m, k);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, m, n);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                         sizeof(workspace_bytes));
    // The scale pointers are part of the descriptor; the heuristic needs them set to something.
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    float* dummy = nullptr;
    cudaMalloc(&dummy, 4);
    set_scales(dummy, dummy);
    cublasStatus_t const s = cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, lc, pref, 1, &result, &found);
    cudaFree(dummy);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      why = "cuBLASLt has no algorithm (status " + std::to_string(static_cast<int>(s)) + ")";
      return;
    }
    algo = result.algo;
    ok = true;
  }
  ~LtFp8() {
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    cudaFree(workspace);
    cublasLtDestroy(handle);
  }
  void set_scales(float const* scale_a, float const* scale_b) {
    // cuBLAS's A is our B and the reverse.
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_b, sizeof(scale_b));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a, sizeof(scale_a));
  }
  cublasStatus_t run(Set const& s) {
    set_scales(s.scale_a, s.scale_b);
    float const alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle, desc, &alpha, s.b, la, s.a, lb, &beta, s.d, lc, s.d, lc, &algo, workspace,
                          workspace_bytes, nullptr);
  }
};

// tilefuse's launcher for one (mode, accumulation, config), or an empty one (and the reason in
// `describe`) when it cannot run the problem.
template <ScalingMode Mode, Fp8Accumulation Acc, class Config = void, bool kAmax = false>
std::function<void(Set const&)> tilefuse_launcher(index_t m, index_t n, index_t k, std::vector<Set> const& sets,
                                                  std::string* describe) {
  using Op = gemm::ScaledGemm<E4m3, bfloat16_t, Mode, false, Acc, bfloat16_t, Config, E4m3, kAmax>;
  auto args_of = [=](Set const& s) {  // by value: the launcher outlives this call
    typename Op::Arguments args;
    args.m = m, args.n = n, args.k = k;
    args.a = s.a, args.b = s.b, args.scale_a = s.scale_a, args.scale_b = s.scale_b, args.d = s.d;
    if constexpr (kAmax) args.amax = s.amax;
    return args;
  };
  Status const st = Op::can_implement(args_of(sets[0]));
  *describe = Op::describe(args_of(sets[0]));
  if (!st.ok()) return {};
  return [args_of](Set const& s) {
    if (!Op::run(args_of(s), nullptr).ok()) throw std::runtime_error("ScaledGemm::run failed");
  };
}

// --launch-early off: every launch without programmatic dependent launch, otherwise the default adapter's.
class StrictLaunches final : public DefaultHostAdapter {
 public:
  char const* name() const override { return "bench-strict-launches"; }
  Status launch(LaunchConfig const& config, void const* kernel, void** kernel_args) override {
    LaunchConfig strict = config;
    strict.after_previous_early = false;
    return DefaultHostAdapter::launch(strict, kernel, kernel_args);
  }
};

struct Row {
  index_t m, n, k;
  std::string mode, accumulation, describe, peer_note;
  double tilefuse_ms = -1, peer_ms = -1;
  double host_us = 0;  // tilefuse's host time per call (argument checks, tensor maps, launch)
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::array<index_t, 3>> shapes = {{8192, 8192, 8192}, {4096, 4096, 4096}, {4096, 14336, 4096},
                                                {16384, 8192, 1024}, {4096, 7168, 16384}};
  std::string json_path;
  index_t m1 = 0, n1 = 0, k1 = 0;
  bool launch_early = true;
  bool usage = argc % 2 == 0;  // options come in pairs
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string const o = argv[i], v = argv[i + 1];
    if (o == "--json") json_path = v;
    else if (o == "--m") m1 = std::atoll(v.c_str());
    else if (o == "--n") n1 = std::atoll(v.c_str());
    else if (o == "--k") k1 = std::atoll(v.c_str());
    else if (o == "--launch-early" && (v == "on" || v == "off")) launch_early = v == "on";
    else usage = true;
  }
  if (usage) {
    std::fprintf(stderr, "usage: tilefuse-fp8-bench [--m M --n N --k K] [--launch-early on|off] [--json FILE]\n");
    return 2;
  }
  if (m1 > 0 && n1 > 0 && k1 > 0) shapes = {{m1, n1, k1}};
  if (!launch_early) set_host_adapter(std::make_shared<StrictLaunches>());

  int device = 0, l2 = 0;
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDevice(&device));
  BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  // FP8 dense tensor peak of the H100 / H200 SXM (1979 TFLOP/s at 1980 MHz boost).
  double const peak_tflops = 1979.0;
  std::printf("device %s, L2 %d MiB; FP8 dense peak taken as %.0f TFLOP/s; tilefuse launched %s\n\n", prop.name,
              l2 >> 20, peak_tflops, launch_early ? "early (the default)" : "strictly after the previous kernel");
  std::printf("| problem | scales | accumulation | tilefuse ms | TFLOP/s | cuBLASLt ms | TFLOP/s | tilefuse / cuBLASLt | of peak |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|---:|\n");

  std::vector<Row> rows;
  for (auto const& [m, n, k] : shapes) {
    std::size_t const bytes = static_cast<std::size_t>(m * k + k * n + 2 * m * n + 4 * (m + n));
    int const count = static_cast<int>(std::max<std::size_t>(2, (2 * static_cast<std::size_t>(l2)) / bytes + 1));
    std::vector<Set> sets(count);
    for (int i = 0; i < count; ++i) {
      Set& s = sets[i];
      BENCH_CUDA(cudaMalloc(&s.a, m * k));
      BENCH_CUDA(cudaMalloc(&s.b, k * n));
      // Room for every mode's scales (block-wise: m x ceil(k/128) and ceil(k/128) x ceil(n/128)).
      index_t const kb = (k + 127) / 128, nb = (n + 127) / 128;
      index_t const count_a = m * kb, count_b = std::max(n, kb * nb);
      BENCH_CUDA(cudaMalloc(&s.scale_a, 4 * count_a));
      BENCH_CUDA(cudaMalloc(&s.scale_b, 4 * count_b));
      BENCH_CUDA(cudaMalloc(&s.d, 2 * m * n));
      BENCH_CUDA(cudaMalloc(&s.amax, sizeof(float)));
      fill_normal_e4m3<<<2048, 256>>>(s.a, m * k, 17u + i);
      fill_normal_e4m3<<<2048, 256>>>(s.b, k * n, 91u + i);
      fill_uniform<<<256, 256>>>(s.scale_a, count_a, 5u + i, 0.5f, 2.0f);
      fill_uniform<<<256, 256>>>(s.scale_b, count_b, 7u + i, 0.5f, 2.0f);
    }
    BENCH_CUDA(cudaDeviceSynchronize());
    for (ScalingMode mode : {ScalingMode::kPerTensor, ScalingMode::kRowWise, ScalingMode::kBlockWise}) {
      // variant 0: fast, the library's default (128 x 256 cooperative or ping-pong, picked per problem),
      // 1: fast on the ping-pong config, 2: promoted (128 x 128),
      // 3: fast on the promoted config's 128 x 128 cooperative tile (what promotion itself costs).
      // 4: promoted every 256 of K instead of 128 (half the waits).
      // 5: fast on ping-pong with 2-CTA multicast clusters, 6: promoted with one partial set, each k-tile
      // waited for before the next is issued (Sm90PromotionInLine: the A/B baseline of the default's two
      // sets; per-tensor and block-wise), 7: fast on the 128 x 256 cooperative tile (where the default
      // picks ping-pong), 8: promoted with 2-CTA multicast clusters (per-tensor and block-wise),
      // 9: the default with amax (max |y| over D: per-row reductions in the epilogue, then one block;
      // cuBLASLt's side of the row computes no amax, so the ratio includes amax's cost).
      for (int variant : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
        if (variant == 9 && mode == ScalingMode::kRowWise) continue;
        if ((variant == 3 || variant == 4) && mode != ScalingMode::kPerTensor) continue;
        if (variant == 7 && mode == ScalingMode::kBlockWise) continue;
        if ((variant == 6 || variant == 8) && mode == ScalingMode::kRowWise) continue;
        if (variant != 2 && variant != 6 && variant != 8 && variant != 9 && mode == ScalingMode::kBlockWise) continue;  // needs promotion
        bool const fast = variant != 2 && variant != 4 && variant != 6 && variant != 8 &&
                          !(variant == 9 && mode == ScalingMode::kBlockWise);
        Row r{m, n, k, gemm::name_of(mode),
              variant == 0 ? "fast (default)" : variant == 1 ? "fast, ping-pong" : variant == 2   ? "promoted"
              : variant == 3 ? "fast, 128x128"
              : variant == 4 ? "promoted every 256"
              : variant == 5 ? "fast, ping-pong + multicast"
              : variant == 6 ? "promoted in line (one partial set)"
              : variant == 8 ? "promoted + multicast"
              : variant == 9 ? (mode == ScalingMode::kBlockWise ? "promoted + amax" : "fast (default) + amax")
                             : "fast, 128x256 cooperative"};
        using PPMC = gemm::Sm90Fp8PingPongMulticastConfig;
        using PP = gemm::Sm90Fp8PingPongConfig;
        constexpr auto kFast = Fp8Accumulation::kFast;
        constexpr auto kPromoted = Fp8Accumulation::kPromoted;
        std::function<void(Set const&)> tilefuse;
        if (variant == 5) {
          tilefuse = mode == ScalingMode::kPerTensor
                              ? tilefuse_launcher<ScalingMode::kPerTensor, kFast, PPMC>(m, n, k, sets, &r.describe)
                              : tilefuse_launcher<ScalingMode::kRowWise, kFast, PPMC>(m, n, k, sets, &r.describe);
        } else if (variant == 9) {
          tilefuse = mode == ScalingMode::kPerTensor
                         ? tilefuse_launcher<ScalingMode::kPerTensor, kFast, void, true>(m, n, k, sets, &r.describe)
                         : tilefuse_launcher<ScalingMode::kBlockWise, kPromoted, void, true>(m, n, k, sets, &r.describe);
        } else if (variant == 8) {
          tilefuse =
              mode == ScalingMode::kPerTensor
                  ? tilefuse_launcher<ScalingMode::kPerTensor, kPromoted, gemm::Sm90Fp8PromotedMulticastConfig>(m, n, k, sets,
                                                                                                             &r.describe)
                  : tilefuse_launcher<ScalingMode::kBlockWise, kPromoted, gemm::Sm90Fp8BlockScaledMulticastConfig>(
                        m, n, k, sets, &r.describe);
        } else if (variant == 6) {
          tilefuse =
              mode == ScalingMode::kPerTensor
                  ? tilefuse_launcher<ScalingMode::kPerTensor, kPromoted, gemm::Sm90Fp8PromotedInLineConfig>(m, n, k, sets,
                                                                                                          &r.describe)
                  : tilefuse_launcher<ScalingMode::kBlockWise, kPromoted, gemm::Sm90Fp8BlockScaledInLineConfig>(
                        m, n, k, sets, &r.describe);
        } else if (mode == ScalingMode::kPerTensor) {
          tilefuse =
              variant == 0   ? tilefuse_launcher<ScalingMode::kPerTensor, kFast>(m, n, k, sets, &r.describe)
              : variant == 1 ? tilefuse_launcher<ScalingMode::kPerTensor, kFast, PP>(m, n, k, sets, &r.describe)
              : variant == 2 ? tilefuse_launcher<ScalingMode::kPerTensor, kPromoted>(m, n, k, sets, &r.describe)
              : variant == 3 ? tilefuse_launcher<ScalingMode::kPerTensor, kFast, gemm::Sm90Fp8MediumConfig>(m, n, k, sets,
                                                                                                       &r.describe)
              : variant == 7 ? tilefuse_launcher<ScalingMode::kPerTensor, kFast, gemm::Sm90Fp8LargeConfig>(m, n, k, sets,
                                                                                                      &r.describe)
                             : tilefuse_launcher<ScalingMode::kPerTensor, kPromoted, gemm::Sm90Fp8PromotedEvery2Config>(
                                   m, n, k, sets, &r.describe);
        } else if (mode == ScalingMode::kBlockWise) {
          tilefuse = tilefuse_launcher<ScalingMode::kBlockWise, kPromoted>(m, n, k, sets, &r.describe);
        } else {
          tilefuse = variant == 0 ? tilefuse_launcher<ScalingMode::kRowWise, kFast>(m, n, k, sets, &r.describe)
                          : variant == 1 ? tilefuse_launcher<ScalingMode::kRowWise, kFast, PP>(m, n, k, sets, &r.describe)
                          : variant == 7
                              ? tilefuse_launcher<ScalingMode::kRowWise, kFast, gemm::Sm90Fp8LargeConfig>(m, n, k, sets, &r.describe)
                              : tilefuse_launcher<ScalingMode::kRowWise, kPromoted>(m, n, k, sets, &r.describe);
        }
        LtFp8 lt(m, n, k, mode, fast);
        std::function<void(Set const&)> peer;
        if (lt.ok) {
          cublasStatus_t first = lt.run(sets[0]);
          if (first == CUBLAS_STATUS_SUCCESS) {
            peer = [&lt](Set const& s) {
              if (lt.run(s) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasLtMatmul failed");
            };
          } else {
            r.peer_note = "cuBLASLt run failed (status " + std::to_string(static_cast<int>(first)) + ")";
          }
        } else {
          r.peer_note = lt.why;
        }
        if (tilefuse) {
          PairTiming const t = time_pair(sets, tilefuse, peer);
          r.tilefuse_ms = t.a_ms;
          r.peer_ms = t.b_ms;
          r.host_us = t.a_host_us;
        }
        double const flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
        auto tflops = [&](double ms) { return ms > 0 ? flops / ms * 1e-9 : 0.0; };
        std::printf("| %lldx%lldx%lld | %s | %s | %.4f | %.1f | %s | %s | %s | %.3f |\n", static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k), r.mode.c_str(), r.accumulation.c_str(),
                    r.tilefuse_ms, tflops(r.tilefuse_ms),
                    r.peer_ms > 0 ? std::to_string(r.peer_ms).c_str() : r.peer_note.c_str(),
                    r.peer_ms > 0 ? std::to_string(tflops(r.peer_ms)).c_str() : "-",
                    r.peer_ms > 0 && r.tilefuse_ms > 0 ? std::to_string(r.peer_ms / r.tilefuse_ms).c_str() : "-",
                    tflops(r.tilefuse_ms) / peak_tflops);
        std::fflush(stdout);
        rows.push_back(r);
      }
    }
    for (Set& s : sets) {
      cudaFree(s.a), cudaFree(s.b), cudaFree(s.scale_a), cudaFree(s.scale_b), cudaFree(s.d), cudaFree(s.amax);
    }
  }
  std::printf("\n");
  for (Row const& r : rows) std::printf("%lldx%lldx%lld %s %s: %s\n", static_cast<long long>(r.m),
                                        static_cast<long long>(r.n), static_cast<long long>(r.k), r.mode.c_str(),
                                        r.accumulation.c_str(), r.describe.c_str());
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (f == nullptr) return 1;
    std::fprintf(f, "{\"device\": \"%s\", \"launch_early\": %s, \"rows\": [\n", prop.name,
                 launch_early ? "true" : "false");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Row const& r = rows[i];
      std::fprintf(f, "  {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"scales\": \"%s\", \"accumulation\": \"%s\", "
                      "\"tilefuse_ms\": %.6f, \"cublaslt_ms\": %.6f, \"tilefuse_host_us\": %.1f, \"peer_note\": \"%s\"}%s\n",
                   static_cast<long long>(r.m), static_cast<long long>(r.n), static_cast<long long>(r.k),
                   r.mode.c_str(), r.accumulation.c_str(), r.tilefuse_ms, r.peer_ms, r.host_us, r.peer_note.c_str(),
                   i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
