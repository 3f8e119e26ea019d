// The timing harness (see timing.hpp) and the delay kernel it uses to get ahead of the GPU.
#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "cuda_check.hpp"

namespace tilefuse::bench {
namespace {

// Spins one thread until `nanoseconds` have passed on the GPU's global timer.
__global__ void delay_kernel(std::uint64_t nanoseconds) {
  std::uint64_t start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  std::uint64_t now = start;
  while (now - start < nanoseconds) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

class EventPool {
 public:
  explicit EventPool(std::size_t count) : events_(count, nullptr) {
    for (auto& e : events_) BENCH_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventPool() {
    for (auto e : events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
  }
  EventPool(EventPool const&) = delete;
  EventPool& operator=(EventPool const&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

double percentile(std::vector<double> const& sorted, double q) {
  double const pos = q * static_cast<double>(sorted.size() - 1);
  auto const lo = static_cast<std::size_t>(std::floor(pos));
  auto const hi = std::min(lo + 1, sorted.size() - 1);
  double const frac = pos - static_cast<double>(lo);
  return sorted[lo] * (1.0 - frac) + sorted[hi] * frac;
}

using Clock = std::chrono::steady_clock;

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return percentile(values, 0.5);
}

Timing time_rotating(std::function<void(int)> const& op, int num_sets, TimingOptions const& options,
                     cudaStream_t stream) {
  int next_set = 0;
  auto call = [&] {
    op(next_set);
    next_set = (next_set + 1) % num_sets;
  };

  Timing t;
  t.reps = std::max(options.reps, 1);

  // ---- warm-up: groups of calls until both the call count and the GPU time are reached ----
  EventPool warm(2);
  double warm_gpu_ms = 0;
  double host_seconds = 0;
  int constexpr kWarmupGroup = 5;
  int constexpr kMaxWarmupCalls = 100000;
  while ((t.warmup_calls < options.min_warmup_calls || warm_gpu_ms < options.min_warmup_ms) &&
         t.warmup_calls < kMaxWarmupCalls) {
    BENCH_CUDA_CHECK(cudaEventRecord(warm[0], stream));
    auto const host_start = Clock::now();
    for (int i = 0; i < kWarmupGroup; ++i) call();
    host_seconds += std::chrono::duration<double>(Clock::now() - host_start).count();
    BENCH_CUDA_CHECK(cudaEventRecord(warm[1], stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(warm[1]));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, warm[0], warm[1]));
    warm_gpu_ms += ms;
    t.warmup_calls += kWarmupGroup;
  }
  t.host_us_per_call = host_seconds * 1e6 / t.warmup_calls;

  // ---- measurement: per-call events, the stream held by a delay kernel while a group is queued ----
  int constexpr kGroup = 32;
  // NOTES: twice the measured enqueue time (plus two event records per call, a few microseconds) and a
  // margin; too short and the first calls of a group would include host time, too long only costs wall time.
  double constexpr kEventRecordUs = 4.0;
  auto const delay_ns = static_cast<std::uint64_t>(2.0 * kGroup * (t.host_us_per_call + kEventRecordUs) * 1e3) + 50'000;
  EventPool events(2 * static_cast<std::size_t>(t.reps));
  for (int first = 0; first < t.reps; first += kGroup) {
    int const last = std::min(first + kGroup, t.reps);
    delay_kernel<<<1, 1, 0, stream>>>(delay_ns);
    BENCH_CUDA_CHECK(cudaGetLastError());
    for (int i = first; i < last; ++i) {
      BENCH_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
      call();
      BENCH_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
  }
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<double> ms(static_cast<std::size_t>(t.reps));
  for (int i = 0; i < t.reps; ++i) {
    float elapsed = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]));
    ms[static_cast<std::size_t>(i)] = elapsed;
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = percentile(ms, 0.5);
  t.p10_ms = percentile(ms, 0.1);
  t.p90_ms = percentile(ms, 0.9);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return t;
}

}  // namespace tilefuse::bench
