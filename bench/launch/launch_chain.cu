// tilefuse-launch-chain: what launching the Hopper GEMM early beside the previous kernel (programmatic
// dependent launch, GemmSm90::Plan::after_previous_early) saves in a chain of back-to-back calls, as a
// model's layers run them: per call, the chain's time over its length, launched strictly after (false) and
// early (true), beside cuBLAS's chain of the same calls; each from a stream and replayed from a CUDA graph.
// The bench's other timings bracket every call with events, which no kernel can start beside.
// Usage: tilefuse-launch-chain [--reps N]. Writes a markdown table to stdout.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/gemm_sm90.hpp>

namespace {

using namespace tilefuse;
using T = bfloat16_t;
using Store = epilogue::Store<"D", T, epilogue::Acc>;

void check(cudaError_t e, char const* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, char const* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(s));
}
void check(Status const& s, char const* what) {
  if (!s.ok()) throw std::runtime_error(std::string(what) + ": " + s.to_string());
}

// Normal values (Box-Muller over a hash of the index), scaled by `scale`.
__global__ void fill_normal(T* data, std::size_t count, unsigned seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count; i += std::size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed * 2246822519u;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    unsigned g = h * 3266489917u + 374761393u;
    g ^= g >> 16;
    float const u1 = (static_cast<float>(h >> 8) + 1.0f) / 16777217.0f;
    float const u2 = static_cast<float>(g >> 8) / 16777216.0f;
    data[i] = T(scale * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2));
  }
}

// Holds the stream for `nanoseconds`, so that a whole chain is queued before its first call runs.
__global__ void hold_stream(unsigned long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

struct Shape {
  int m, n, k;
  char const* tile;  // the tile the planner picks there (docs/notes/gemm_sm90.md)
};

struct Operands {
  std::vector<T*> a, b, d;
};

template <class Config>
struct Chain {
  using Op = gemm::GemmSm90<T, RowMajor, ColumnMajor, Store, Config>;
  std::vector<typename Op::Plan> plans;

  void plan(Shape const& s, Operands const& ops) {
    for (std::size_t i = 0; i < ops.a.size(); ++i) {
      typename Op::Arguments args;
      args.problem = {s.m, s.n, s.k, 1};
      args.a = ops.a[i];
      args.b = ops.b[i];
      args.epilogue.set("D", ops.d[i]);
      plans.emplace_back();
      check(Op::initialize(args, &plans.back()), "GemmSm90::initialize");
    }
  }
  void run(bool early, cudaStream_t stream) {
    for (auto& p : plans) {
      p.after_previous_early = early;
      check(Op::run(p, stream), "GemmSm90::run");
    }
  }
};

// Median per-call microseconds of `chain(stream)` (one chain of `calls` calls), from the stream and from a
// graph of it.
struct Times {
  double stream_us, graph_us;
};
Times time_chain(std::function<void(cudaStream_t)> const& chain, int calls, int reps, cudaStream_t stream) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  auto measure = [&](std::function<void()> const& body) {
    std::vector<double> us;
    for (int r = 0; r < reps + 2; ++r) {
      hold_stream<<<1, 1, 0, stream>>>(300'000ull + 20'000ull * calls);
      check(cudaEventRecord(start, stream), "record");
      body();
      check(cudaEventRecord(stop, stream), "record");
      check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      if (r >= 2) us.push_back(1e3 * ms / calls);  // two warm-up chains
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  Times t{};
  t.stream_us = measure([&] { chain(stream); });
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  chain(stream);
  check(cudaStreamEndCapture(stream, &graph), "capture");
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  t.graph_us = measure([&] { check(cudaGraphLaunch(exec, stream), "graph launch"); });
  check(cudaGraphExecDestroy(exec), "graph");
  check(cudaGraphDestroy(graph), "graph");
  check(cudaEventDestroy(start), "event");
  check(cudaEventDestroy(stop), "event");
  return t;
}

template <class Config>
void row(Shape const& s, int reps, cublasHandle_t handle, cudaStream_t stream) {
  // Operand sets: together more than 2 x a 60 MB L2, at most 64; the chain walks them once.
  std::size_t const bytes = (std::size_t{1} * s.m * s.k + std::size_t{1} * s.n * s.k + std::size_t{1} * s.m * s.n) * sizeof(T);
  int const sets = static_cast<int>(std::clamp<std::size_t>((120u << 20) / bytes + 1, 4, 64));
  Operands ops;
  for (int i = 0; i < sets; ++i) {
    T *a, *b, *d;
    check(cudaMalloc(&a, std::size_t{1} * s.m * s.k * sizeof(T)), "malloc");
    check(cudaMalloc(&b, std::size_t{1} * s.n * s.k * sizeof(T)), "malloc");
    check(cudaMalloc(&d, std::size_t{1} * s.m * s.n * sizeof(T)), "malloc");
    fill_normal<<<256, 256, 0, stream>>>(a, std::size_t{1} * s.m * s.k, 2 * i + 1, 1.0f);
    fill_normal<<<256, 256, 0, stream>>>(b, std::size_t{1} * s.n * s.k, 2 * i + 2, 1.0f);
    ops.a.push_back(a), ops.b.push_back(b), ops.d.push_back(d);
  }
  check(cudaStreamSynchronize(stream), "fill");
  Chain<Config> chain;
  chain.plan(s, ops);
  float const alpha = 1.0f, beta = 0.0f;
  check(cublasSetStream(handle, stream), "cublasSetStream");
  auto cublas = [&](cudaStream_t) {
    for (int i = 0; i < sets; ++i) {
      // D (m x n row-major) = A (m x k row-major) * B (k x n column-major): column-major D^T = B^T A^T.
      check(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, s.n, s.m, s.k, &alpha, ops.b[i], CUDA_R_16BF, s.k,
                         ops.a[i], CUDA_R_16BF, s.k, &beta, ops.d[i], CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
    }
  };
  // Interleaved: strict, early, cuBLAS, then the same again; the median of each.
  std::vector<Times> strict, early, peer;
  for (int round = 0; round < 2; ++round) {
    strict.push_back(time_chain([&](cudaStream_t st) { chain.run(false, st); }, sets, reps, stream));
    early.push_back(time_chain([&](cudaStream_t st) { chain.run(true, st); }, sets, reps, stream));
    peer.push_back(time_chain(cublas, sets, reps, stream));
  }
  auto best = [](std::vector<Times> const& v, bool graph) {
    double x = 1e30;
    for (auto const& t : v) x = std::min(x, graph ? t.graph_us : t.stream_us);
    return x;
  };
  for (bool graph : {false, true}) {
    double const st = best(strict, graph), ea = best(early, graph), cb = best(peer, graph);
    std::printf("| %d x %d x %d | %s | %s | %d | %.2f | %.2f | %.3f | %.2f | %.3f | %.3f |\n", s.m, s.n, s.k, s.tile,
                graph ? "graph" : "stream", sets, st, ea, st / ea, cb, cb / st, cb / ea);
  }
  std::fflush(stdout);
  for (int i = 0; i < sets; ++i) cudaFree(ops.a[i]), cudaFree(ops.b[i]), cudaFree(ops.d[i]);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: tilefuse-launch-chain [--reps N]\n");
      return 2;
    }
  }
  try {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    if (prop.major != 9) {
      std::printf("tilefuse-launch-chain: needs an sm_90 GPU (found %s, sm_%d%d)\n", prop.name, prop.major, prop.minor);
      return 0;
    }
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    cublasHandle_t handle;
    check(cublasCreate(&handle), "cublasCreate");
    std::printf("# Chains of back-to-back GEMMs (bf16, tn, D = A B), %s: per-call us, median of %d chains, best of 2 "
                "interleaved rounds\n\n",
                prop.name, reps);
    std::printf("| m x n x k | tile | from | calls per chain | strict us | early us | strict / early | cuBLAS us | "
                "cuBLAS / strict | cuBLAS / early |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    row<gemm::Sm90ShortConfig>({197, 768, 3072, "64x64 ping-pong"}, reps, handle, stream);
    row<gemm::Sm90ShortConfig>({197, 768, 768, "64x64 ping-pong"}, reps, handle, stream);
    row<gemm::Sm90ShortConfig>({197, 3072, 768, "64x64 ping-pong"}, reps, handle, stream);
    row<gemm::Sm90ShortConfig>({394, 768, 3072, "64x64 ping-pong"}, reps, handle, stream);
    row<gemm::Sm90MediumConfig>({1576, 768, 3072, "128x128"}, reps, handle, stream);
    row<gemm::Sm90MediumConfig>({1576, 3072, 768, "128x128"}, reps, handle, stream);
    row<gemm::Sm90LargeConfig>({4096, 4096, 4096, "128x256"}, reps, handle, stream);
    cublasDestroy(handle);
    cudaStreamDestroy(stream);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tilefuse-launch-chain: %s\n", e.what());
    return 1;
  }
  return 0;
}
