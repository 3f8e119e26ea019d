// gemm::GemmSm90 launched early beside the previous kernel (Plan::after_previous_early, programmatic
// dependent launch): chains of calls with no synchronization between them, each reading what the one before
// wrote (read after write) and writing what the one before read (write after read), checked exactly. The
// inputs are small integers and every later step multiplies by a signed column selection (one +-1 per column),
// so every value is an integer that bf16 holds exactly. A kernel that touched global memory before waiting for
// its predecessor would read a poisoned or stale operand here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/gemm_sm90.hpp>

#include "gemm_sm90_test_cases.hpp"
#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {
namespace {

using T = bfloat16_t;
using Store = epilogue::Store<"D", T, epilogue::Acc>;

// m x n row-major X times a signed column selection S (n x n, column j takes sign[j] * X[:, pick[j]]).
struct Selection {
  std::vector<int> pick, sign;
};
Selection random_selection(int n, std::mt19937& rng) {
  Selection s{std::vector<int>(n), std::vector<int>(n)};
  for (int j = 0; j < n; ++j) s.pick[j] = j;
  std::shuffle(s.pick.begin(), s.pick.end(), rng);
  for (int j = 0; j < n; ++j) s.sign[j] = rng() % 2 == 0 ? 1 : -1;
  return s;
}
// The selection as the kernel's B operand: column-major n x n, i.e. row j of the storage is column j.
std::vector<T> selection_operand(Selection const& s) {
  int const n = static_cast<int>(s.pick.size());
  std::vector<T> b(static_cast<std::size_t>(n) * n, T(0.0f));
  for (int j = 0; j < n; ++j) b[static_cast<std::size_t>(j) * n + s.pick[j]] = T(static_cast<float>(s.sign[j]));
  return b;
}

// Spins one thread for `nanoseconds` of the GPU's global timer.
__global__ void hold_stream(std::uint64_t nanoseconds) {
  std::uint64_t start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < nanoseconds);
}

template <class Config>
void run_chain(int m, int n, int k, int steps, bool early, std::uint64_t seed) {
  using Op = gemm::GemmSm90<T, RowMajor, ColumnMajor, Store, Config>;
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::uniform_int_distribution<int> small(-2, 2);
  std::vector<T> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(n) * k);
  for (auto& x : a) x = T(static_cast<float>(small(rng)));
  for (auto& x : b) x = T(static_cast<float>(small(rng)));
  // Host: X0 = A * B (|X0| <= 4k, exact in bf16 for k <= 64), then X_{i+1} = X_i * S_i.
  std::vector<float> x(static_cast<std::size_t>(m) * n);
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < n; ++c) {
      float sum = 0;
      for (int q = 0; q < k; ++q) sum += static_cast<float>(a[r * k + q]) * static_cast<float>(b[c * k + q]);
      x[static_cast<std::size_t>(r) * n + c] = sum;
    }
  }
  std::vector<Selection> selections;
  for (int i = 0; i < steps; ++i) selections.push_back(random_selection(n, rng));

  Stream stream;
  DeviceBuffer da(a.size() * sizeof(T)), db(b.size() * sizeof(T));
  DeviceBuffer ping(x.size() * sizeof(T)), pong(x.size() * sizeof(T));
  da.upload(a.data(), stream.get());
  db.upload(b.data(), stream.get());
  std::vector<DeviceBuffer> ds;
  for (auto const& s : selections) {
    std::vector<T> const op = selection_operand(s);
    ds.emplace_back(op.size() * sizeof(T));
    ds.back().upload(op.data(), stream.get());
  }
  ping.fill_bytes(0xff, stream.get());  // poisoned: a read before the writer finished shows as NaN
  pong.fill_bytes(0xff, stream.get());
  stream.synchronize();

  // Every call planned first, then queued behind a kernel that holds the stream, so that the GPU finds them
  // back to back (the host's planning would otherwise space them out).
  std::vector<typename Op::Plan> plans;
  auto plan_call = [&](T const* lhs, int lhs_k, T const* rhs, T* out) {
    typename Op::Arguments args;
    args.problem = {m, n, lhs_k, 1};
    args.a = lhs;
    args.b = rhs;
    args.epilogue.set("D", out);
    plans.emplace_back();
    Status const s = Op::initialize(args, &plans.back());
    ASSERT_TRUE(s.ok()) << s.to_string();
    plans.back().after_previous_early = early;
  };
  // ping = A * B, then pong = ping * S0, ping = pong * S1, ...: each call reads the last one's output and
  // overwrites the operand the one before it read.
  plan_call(da.as<T>(), k, db.as<T>(), ping.as<T>());
  for (int i = 0; i < steps; ++i) {
    bool const from_ping = i % 2 == 0;
    plan_call((from_ping ? ping : pong).as<T>(), n, ds[i].as<T>(), (from_ping ? pong : ping).as<T>());
  }
  if (::testing::Test::HasFatalFailure()) return;  // a refused plan is never launched
  hold_stream<<<1, 1, 0, stream.get()>>>(2'000'000);
  for (auto const& plan : plans) {
    Status const r = Op::run(plan, stream.get());
    ASSERT_TRUE(r.ok()) << r.to_string();
  }
  stream.synchronize();

  for (auto const& s : selections) {
    std::vector<float> next(x.size());
    for (int r = 0; r < m; ++r) {
      for (int j = 0; j < n; ++j) {
        next[static_cast<std::size_t>(r) * n + j] = s.sign[j] * x[static_cast<std::size_t>(r) * n + s.pick[j]];
      }
    }
    x.swap(next);
  }
  std::vector<T> got(x.size());
  (steps % 2 == 0 ? ping : pong).download(got.data(), stream.get());
  int wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (static_cast<float>(got[i]) != x[i] && ++wrong <= 5) {
      ADD_FAILURE() << "element " << i << " (row " << i / n << ", column " << i % n << "): " << static_cast<float>(got[i])
                    << ", expected " << x[i] << " (early " << early << ")";
    }
  }
  EXPECT_EQ(wrong, 0) << m << " x " << n << " x " << k << ", " << steps << " chained calls";
}

// Few tiles (most SMs idle: the next call's blocks start beside this one's), then more tiles than SMs.
TEST(GemmSm90LaunchChain, ShortTileFewBlocks) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_chain<gemm::Sm90ShortConfig>(197, 64, 40, 24, true, 1);
  run_chain<gemm::Sm90ShortConfig>(197, 64, 40, 24, false, 2);
}
TEST(GemmSm90LaunchChain, MediumTileManyBlocks) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_chain<gemm::Sm90MediumConfig>(16400, 256, 64, 16, true, 3);  // 258 tiles
}
TEST(GemmSm90LaunchChain, LargeTileManyBlocks) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_chain<gemm::Sm90LargeConfig>(16400, 512, 48, 12, true, 4);  // 258 tiles
}

}  // namespace
}  // namespace tilefuse::gpu_test
