// Tile-configuration sweep for the sm_80 GEMM: bf16, A row-major, B column-major (on Hopper: operands by
// TMA unless a row says cp.async), plain epilogue (and the issue-3 fused tree on the default tile), at
// 8192^3, 4096^3, 8192x8192x1024 and two shapes that isolate the fixed cost per tile. Prints the median
// TFLOP/s of each configuration; the winners become Sm80LargeConfig / Sm80SmallConfig (see
// docs/notes/gemm_sm80.md). Not a peer comparison: tilefuse-bench is.
// NOTES: shape by shape, the configurations in the order A B C ... C B A, each row the mean of its two
// medians: the H200's clocks drift by 10% and more as it heats (report v43), so a sweep that ran one
// configuration's shapes after another's favoured whichever ran first. Each median comes from the
// shared harness (timing.hpp), so host launch work stays out of the times.
#include <cuda_runtime.h>

#include <cstdio>
#include <type_traits>

#include <tilefuse/gemm/device/gemm.hpp>

#include "random_fill.hpp"
#include "timing.hpp"

namespace {

using namespace tilefuse;
using Element = bfloat16_t;
using Plain = epilogue::Store<"D", bfloat16_t, epilogue::Acc>;
// The issue-3 fused tree: D = gelu_tanh(A * B + bias[col]) + C.
using Fused = epilogue::Store<
    "D", bfloat16_t,
    epilogue::Add<epilogue::GeluTanh<epilogue::Add<epilogue::Acc, epilogue::RowBroadcast<"bias", bfloat16_t>>>,
                  epilogue::AuxLoad<"C", bfloat16_t>>>;

// Parts of the fused tree, to see what each costs.
using BiasGelu = epilogue::Store<"D", bfloat16_t,
                                 epilogue::GeluTanh<epilogue::Add<epilogue::Acc, epilogue::RowBroadcast<"bias", bfloat16_t>>>>;
using Residual = epilogue::Store<"D", bfloat16_t, epilogue::Add<epilogue::Acc, epilogue::AuxLoad<"C", bfloat16_t>>>;

// The median time of one configuration on one shape, in ms (negative if it cannot run).
template <class Config, class Epilogue = Plain>
double time_config(index_t m, index_t n, index_t k) {
  using Op = gemm::Gemm<Element, RowMajor, ColumnMajor, Epilogue, Config>;
  Element *a, *b, *d, *c = nullptr, *bias = nullptr;
  cudaMalloc(&a, m * k * sizeof(Element));
  cudaMalloc(&b, k * n * sizeof(Element));
  cudaMalloc(&d, m * n * sizeof(Element));
  bench::fill_normal(a, bench::DType::kBF16, m * k, 1u, 1.0f, nullptr);
  bench::fill_normal(b, bench::DType::kBF16, k * n, 2u, 1.0f, nullptr);
  typename Op::Arguments args;
  args.problem = {m, n, k, 1};
  args.a = a;
  args.b = b;
  args.epilogue.set("D", d);
  if constexpr (std::is_same_v<Epilogue, Fused> || std::is_same_v<Epilogue, Residual>) {
    cudaMalloc(&c, m * n * sizeof(Element));
    bench::fill_normal(c, bench::DType::kBF16, m * n, 3u, 1.0f, nullptr);
    args.epilogue.set("C", static_cast<Element const*>(c));
  }
  if constexpr (std::is_same_v<Epilogue, Fused> || std::is_same_v<Epilogue, BiasGelu>) {
    cudaMalloc(&bias, n * sizeof(Element));
    bench::fill_normal(bias, bench::DType::kBF16, n, 4u, 1.0f, nullptr);
    args.epilogue.set("bias", static_cast<Element const*>(bias), {.batch_stride = 0});
  }
  auto const release = [&] { cudaFree(a), cudaFree(b), cudaFree(d), cudaFree(c), cudaFree(bias); };
  Status s = Op::run(args, nullptr, nullptr);
  if (!s.ok()) {
    std::printf("%s\n", s.to_string().c_str());
    release();
    return -1.0;
  }
  bench::TimingOptions options;
  options.reps = 20;
  options.min_warmup_ms = 30;
  double const median_ms =
      bench::time_rotating([&](int) { (void)Op::run(args, nullptr, nullptr); }, 1, options, nullptr).median_ms;
  release();
  return median_ms;
}

// A tile loading by cp.async on Hopper too (gemm::Gemm otherwise loads these operands by TMA there).
template <int M, int N, int K, int WM, int WN, int S>
struct CpAsync : gemm::Sm80TileConfig<M, N, K, WM, WN, S> {
  static constexpr bool kTmaOnHopper = false;
};

// The default tile with another epilogue load batch (kernel/sm80_gemm.h).
template <int kBatch>
struct EpilogueSchedule : gemm::Sm80LargeConfig {
  static constexpr int kEpilogueLoadBatch = kBatch;
};

struct Candidate {
  char const* name;
  double (*time)(index_t, index_t, index_t);
};

}  // namespace

int main() {
  using Default = gemm::Sm80TileConfig<128, 256, 64, 2, 4, 3>;
  Candidate const candidates[] = {
      {"128x256x64 s3 (TMA)", time_config<Default>},
      {"  fused (batch 4)", time_config<Default, Fused>},
      {"  fused batch 1", time_config<EpilogueSchedule<1>, Fused>},
      {"  fused batch 8", time_config<EpilogueSchedule<8>, Fused>},
      {"  bias + GELU only", time_config<Default, BiasGelu>},
      {"  residual only", time_config<Default, Residual>},
      {"128x128x64 s3, 2 per SM (TMA)", time_config<gemm::Sm80TileConfig<128, 128, 64, 2, 2, 3, 2>>},
      {"  fused", time_config<gemm::Sm80TileConfig<128, 128, 64, 2, 2, 3, 2>, Fused>},
      {"128x256x64 s3 cp.async", time_config<CpAsync<128, 256, 64, 2, 4, 3>>},
  };
  constexpr int kCount = sizeof(candidates) / sizeof(candidates[0]);
  // 4096x4096x64: one k-tile per output tile, so its time is the fixed cost per tile (prologue + epilogue).
  for (auto [m, n, k] : {std::tuple<index_t, index_t, index_t>{8192, 8192, 8192}, {4096, 4096, 4096}, {8192, 8192, 1024},
                         {4096, 4096, 64}, {4096, 4096, 1024}}) {
    double first[kCount];
    for (int i = 0; i < kCount; ++i) first[i] = candidates[i].time(m, n, k);
    for (int i = kCount - 1; i >= 0; --i) {
      double const second = candidates[i].time(m, n, k);
      double const mean = (first[i] + second) / 2;
      std::printf("| %-32s | %5lldx%5lldx%5lld | %8.4f ms (%8.4f, %8.4f) | %6.1f TFLOP/s | %s\n", candidates[i].name,
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), mean, first[i],
                  second, 2.0 * m * n * k / mean * 1e-9, cudaGetErrorString(cudaGetLastError()));
      std::fflush(stdout);
    }
  }
  return 0;
}
