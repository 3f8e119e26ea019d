// The timing harness (see timing.hpp) and the delay kernel it uses to get ahead of the GPU.
#include "timing.hpp"

#include "round_schedule.hpp"

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

namespace {

// The times of `rounds` rounds, each calling every op once in order (ops[j] on operand sets 0, 1, ...
// of its own rotation), after a warm-up of whole rounds: ms[j][round] for op j.
struct Rounds {
  std::vector<std::vector<double>> ms;
  int warmup_rounds = 0;
  double host_us_per_call = 0;
};

// spread: each op of a round on its own operand set, the order alternating (round_schedule.hpp).
Rounds time_rounds(std::vector<std::function<void(int)> const*> const& ops, int num_sets, int rounds,
                   TimingOptions const& options, cudaStream_t stream, bool spread = false) {
  int next_round = 0;
  auto round = [&](auto&& around_call) {
    for (RoundCall const& c : round_calls(next_round, ops.size(), num_sets, spread)) {
      around_call(c.op, [&] { (*ops[c.op])(c.set); });
    }
    ++next_round;
  };
  auto const plain_call = [](std::size_t, auto&& call) { call(); };

  Rounds r;
  int const calls_per_round = static_cast<int>(ops.size());
  // ---- warm-up: groups of rounds until both the call count and the GPU time are reached ----
  EventPool warm(2);
  double warm_gpu_ms = 0;
  double host_seconds = 0;
  int constexpr kWarmupGroup = 5;
  int constexpr kMaxWarmupRounds = 100000;
  while ((r.warmup_rounds * calls_per_round < options.min_warmup_calls || warm_gpu_ms < options.min_warmup_ms) &&
         r.warmup_rounds < kMaxWarmupRounds) {
    BENCH_CUDA_CHECK(cudaEventRecord(warm[0], stream));
    auto const host_start = Clock::now();
    for (int i = 0; i < kWarmupGroup; ++i) round(plain_call);
    host_seconds += std::chrono::duration<double>(Clock::now() - host_start).count();
    BENCH_CUDA_CHECK(cudaEventRecord(warm[1], stream));
    BENCH_CUDA_CHECK(cudaEventSynchronize(warm[1]));
    float ms = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&ms, warm[0], warm[1]));
    warm_gpu_ms += ms;
    r.warmup_rounds += kWarmupGroup;
  }
  r.host_us_per_call = host_seconds * 1e6 / (r.warmup_rounds * calls_per_round);

  // ---- measurement: per-call events, the stream held by a delay kernel while a group is queued ----
  int const group = std::max(1, 32 / calls_per_round);  // rounds per group: about 32 calls
  // NOTES: twice the measured enqueue time (plus two event records per call, a few microseconds) and a
  // margin; too short and the first calls of a group would include host time, too long only costs wall time.
  double constexpr kEventRecordUs = 4.0;
  auto const delay_ns =
      static_cast<std::uint64_t>(2.0 * group * calls_per_round * (r.host_us_per_call + kEventRecordUs) * 1e3) + 50'000;
  EventPool events(2 * static_cast<std::size_t>(rounds) * ops.size());
  std::size_t next_event = 0;
  std::vector<std::size_t> op_of_call;  // the op of each timed call, in call order
  op_of_call.reserve(static_cast<std::size_t>(rounds) * ops.size());
  for (int first = 0; first < rounds; first += group) {
    int const last = std::min(first + group, rounds);
    delay_kernel<<<1, 1, 0, stream>>>(delay_ns);
    BENCH_CUDA_CHECK(cudaGetLastError());
    for (int i = first; i < last; ++i) {
      round([&](std::size_t op, auto&& call) {
        op_of_call.push_back(op);
        BENCH_CUDA_CHECK(cudaEventRecord(events[next_event++], stream));
        call();
        BENCH_CUDA_CHECK(cudaEventRecord(events[next_event++], stream));
      });
    }
  }
  BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));

  r.ms.assign(ops.size(), std::vector<double>(static_cast<std::size_t>(rounds)));
  for (std::size_t call = 0; call < op_of_call.size(); ++call) {
    float elapsed = 0;
    BENCH_CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[2 * call], events[2 * call + 1]));
    r.ms[op_of_call[call]][call / ops.size()] = elapsed;  // round call / ops.size()
  }
  return r;
}

Timing summarize(std::vector<double> ms, int warmup_calls, double host_us_per_call) {
  Timing t;
  t.reps = static_cast<int>(ms.size());
  t.warmup_calls = warmup_calls;
  t.host_us_per_call = host_us_per_call;
  std::sort(ms.begin(), ms.end());
  t.median_ms = percentile(ms, 0.5);
  t.p10_ms = percentile(ms, 0.1);
  t.p90_ms = percentile(ms, 0.9);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return t;
}

}  // namespace

Timing time_rotating(std::function<void(int)> const& op, int num_sets, TimingOptions const& options,
                     cudaStream_t stream) {
  Rounds const r = time_rounds({&op}, num_sets, std::max(options.reps, 1), options, stream);
  return summarize(r.ms[0], r.warmup_rounds, r.host_us_per_call);
}

std::vector<Timing> time_interleaved(std::vector<std::function<void(int)> const*> const& ops, int num_sets,
                                     TimingOptions const& options, cudaStream_t stream) {
  Rounds const r = time_rounds(ops, num_sets, std::max(options.reps, 1), options, stream, /*spread=*/true);
  std::vector<Timing> out;
  for (std::size_t j = 0; j < ops.size(); ++j) out.push_back(summarize(r.ms[j], r.warmup_rounds, r.host_us_per_call));
  return out;
}

PairedTiming time_paired(std::function<void(int)> const& op_a, std::function<void(int)> const& op_b, int num_sets,
                         TimingOptions const& options, cudaStream_t stream) {
  Rounds const r = time_rounds({&op_a, &op_b}, num_sets, std::max(options.reps, 1), options, stream);
  PairedTiming t;
  t.a = summarize(r.ms[0], r.warmup_rounds, r.host_us_per_call);
  t.b = summarize(r.ms[1], r.warmup_rounds, r.host_us_per_call);
  t.pairs = static_cast<int>(r.ms[0].size());
  std::vector<double> ratios(r.ms[0].size());
  for (std::size_t i = 0; i < ratios.size(); ++i) ratios[i] = r.ms[0][i] / r.ms[1][i];
  std::sort(ratios.begin(), ratios.end());
  t.ratio_median = percentile(ratios, 0.5);
  t.ratio_p10 = percentile(ratios, 0.1);
  t.ratio_p90 = percentile(ratios, 0.9);
  return t;
}

}  // namespace tilefuse::bench
