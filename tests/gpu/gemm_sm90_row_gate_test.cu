// gemm::Sm90RowGate: A's rows arrive while the kernel runs, as an all-gather's copies deliver them. The rows
// in place at launch are copied first; the others start NaN-poisoned and are copied on a second stream only
// after a host function has held that stream for a while (so the kernel is running and its producer spinning
// when they land), each piece followed by a stream write of its flag (HostAdapter::write_value32). The late
// pieces come from pinned host memory: a copy within one device may run as a kernel, which would need an SM
// that the waiting GEMM holds (the all-gather's pulls are peer copies, on the copy engines). Small
// integers (|D| <= k), exact comparison: a tile that loaded its rows before their flag turned shows NaN.
// With own rows (set_own_rows) the rows in place are never copied into A (they stay NaN there) nor flagged: the
// kernel must read them from their own buffer without waiting.
#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/evt.h>
#include <tilefuse/gemm/device/gemm_sm90.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

#include "gemm_sm90_test_cases.hpp"
#include "gpu_test_support.hpp"

namespace tilefuse::gpu_test {
namespace {

using T = bfloat16_t;
using Store = epilogue::Store<"D", T, epilogue::Acc>;

void CUDART_CB hold_host(void* milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(milliseconds)));
}

// m x n x k with A's rows in pieces of rows_per_flag; rows [first_row, first_row + in_place) are in place at
// launch (pieces wholly inside them flagged, or with `own`, read from the source through set_own_rows), the rest
// arrive later.
template <class Config>
void run_gated(int m, int n, int k, int rows_per_flag, int first_row, int in_place, std::uint64_t seed,
               bool own = false) {
  using Op = gemm::GemmSm90<T, RowMajor, ColumnMajor, Store, gemm::Sm90RowGate<Config>>;
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::uniform_int_distribution<int> small(-1, 1);  // |D| <= k <= 256: exact in bf16
  std::vector<T> a(static_cast<std::size_t>(m) * k), b(static_cast<std::size_t>(n) * k);
  for (auto& x : a) x = T(static_cast<float>(small(rng)));
  for (auto& x : b) x = T(static_cast<float>(small(rng)));
  int const pieces = (m + rows_per_flag - 1) / rows_per_flag;
  // Pieces wholly inside the rows in place are there at launch; the others (a piece that straddles the
  // boundary too) arrive on the second stream. Own rows are neither copied nor flagged.
  std::vector<bool> in_place_piece(pieces, false);
  std::vector<unsigned> flags(pieces, 0u);
  for (int f = 0; f < pieces; ++f) {
    int const lo = f * rows_per_flag, hi = std::min(m, lo + rows_per_flag);
    in_place_piece[f] = lo >= first_row && hi <= first_row + in_place;
    if (in_place_piece[f] && !own) flags[f] = 1u;
  }

  Stream gemm_stream, copy_stream;
  DeviceBuffer source(a.size() * sizeof(T)), da(a.size() * sizeof(T)), db(b.size() * sizeof(T));
  DeviceBuffer dd(static_cast<std::size_t>(m) * n * sizeof(T)), dflags(flags.size() * sizeof(unsigned));
  source.upload(a.data(), gemm_stream.get());
  db.upload(b.data(), gemm_stream.get());
  da.fill_bytes(0xff, gemm_stream.get());  // NaN until its piece lands
  dd.fill_bytes(0xff, gemm_stream.get());
  dflags.upload(flags.data(), gemm_stream.get());
  std::size_t const row_bytes = static_cast<std::size_t>(k) * sizeof(T);
  for (int f = 0; f < pieces; ++f) {
    if (flags[f] == 0u) continue;
    std::size_t const lo = static_cast<std::size_t>(f) * rows_per_flag;
    std::size_t const rows = std::min<std::size_t>(rows_per_flag, m - lo);
    ASSERT_EQ(cudaMemcpyAsync(da.as<char>() + lo * row_bytes, source.as<char>() + lo * row_bytes, rows * row_bytes,
                              cudaMemcpyDeviceToDevice, gemm_stream.get()),
              cudaSuccess);
  }
  T* pinned = nullptr;  // A again, in pinned host memory: the late pieces' source
  ASSERT_EQ(cudaMallocHost(&pinned, a.size() * sizeof(T)), cudaSuccess);
  std::unique_ptr<T, decltype(&cudaFreeHost)> pinned_owner(pinned, &cudaFreeHost);
  std::copy(a.begin(), a.end(), pinned);
  gemm_stream.synchronize();

  typename Op::Arguments args;
  args.problem = {m, n, k, 1};
  args.a = da.as<T>();
  args.b = db.as<T>();
  args.epilogue.set("D", dd.as<T>());
  typename Op::Plan plan;
  Status s = Op::initialize(args, &plan);
  ASSERT_TRUE(s.ok()) << s.to_string();
  s = Op::set_row_gate(&plan, dflags.as<unsigned>(), rows_per_flag, first_row);
  ASSERT_TRUE(s.ok()) << s.to_string();
  if (own) {
    s = Op::set_own_rows(&plan, source.as<T>() + static_cast<std::size_t>(first_row) * k, first_row, in_place, k);
    ASSERT_TRUE(s.ok()) << s.to_string();
  }

  static int hold_ms = 30;
  ASSERT_EQ(cudaLaunchHostFunc(copy_stream.get(), hold_host, &hold_ms), cudaSuccess);
  s = Op::run(plan, gemm_stream.get());
  ASSERT_TRUE(s.ok()) << s.to_string();
  // No ASSERT from here until the flags are written: a return would leave the kernel waiting (it traps after
  // 10 s and takes the process's context with it). A failed write falls back to a copy of the flag's value.
  unsigned const one = 1u;
  for (int f = 0; f < pieces; ++f) {  // the pieces in the order an all-gather's pulls would bring them
    int const piece = (f + (first_row + in_place) / rows_per_flag) % pieces;
    if (in_place_piece[piece]) continue;
    std::size_t const lo = static_cast<std::size_t>(piece) * rows_per_flag;
    std::size_t const rows = std::min<std::size_t>(rows_per_flag, m - lo);
    EXPECT_EQ(cudaMemcpyAsync(da.as<char>() + lo * row_bytes, reinterpret_cast<char const*>(pinned) + lo * row_bytes,
                              rows * row_bytes, cudaMemcpyHostToDevice, copy_stream.get()),
              cudaSuccess);
    s = host_adapter().write_value32(copy_stream.get(), dflags.as<unsigned>() + piece, 1u);
    if (!s.ok()) {
      ADD_FAILURE() << s.to_string();
      (void)cudaMemcpyAsync(dflags.as<unsigned>() + piece, &one, sizeof(one), cudaMemcpyHostToDevice,
                            copy_stream.get());
    }
  }
  copy_stream.synchronize();
  gemm_stream.synchronize();

  std::vector<T> got(static_cast<std::size_t>(m) * n);
  dd.download(got.data(), gemm_stream.get());
  int wrong = 0;
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < n; ++c) {
      float want = 0;
      for (int q = 0; q < k; ++q) {
        want += static_cast<float>(a[static_cast<std::size_t>(r) * k + q]) * static_cast<float>(b[static_cast<std::size_t>(c) * k + q]);
      }
      float const have = static_cast<float>(got[static_cast<std::size_t>(r) * n + c]);
      if (have != want && ++wrong <= 5) {
        ADD_FAILURE() << "D[" << r << ", " << c << "] = " << have << ", expected " << want;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << m << " x " << n << " x " << k << ", pieces of " << rows_per_flag << " rows, rows from "
                      << first_row << " (" << in_place << ") in place at launch" << (own ? ", read as own rows" : "");
}

// Two ranks' blocks (the second rank's view: its own rows second), cooperative and ping-pong tiles; pieces
// that straddle tiles; an m that ends inside a tile and a piece.
TEST(GemmSm90RowGate, CooperativeLargeTwoBlocks) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90LargeConfig>(1024, 512, 64, 512, 512, 512, 1);
}
TEST(GemmSm90RowGate, CooperativeMediumPiecesAcrossTiles) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90MediumConfig>(1000, 384, 72, 96, 256, 384, 2);
}
TEST(GemmSm90RowGate, PingPongFourBlocks) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90PingPongConfig>(2048, 256, 64, 256, 0, 512, 3);
}
// More tiles than SMs: every SM holds a block that waits, and nothing on the flags' path needs one (the copies
// run on the copy engine, the flags are stream writes).
TEST(GemmSm90RowGate, EverySmHeldWhileWaiting) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90LargeConfig>(8192, 1024, 64, 2048, 6144, 2048, 5);  // 256 tiles; the last block in place
}
TEST(GemmSm90RowGate, ShortTileOddRows) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90ShortConfig>(333, 128, 40, 64, 128, 128, 4);
}

// The own rows read where they lie (set_own_rows): first, in the middle, last and ending inside a tile (m),
// every SM holding a waiting block; the rows in A stay NaN and unflagged.
TEST(GemmSm90RowGate, OwnRowsCooperativeLarge) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90LargeConfig>(1024, 512, 64, 512, 512, 512, 11, true);
}
TEST(GemmSm90RowGate, OwnRowsMediumPiecesAcrossTiles) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90MediumConfig>(1000, 384, 72, 96, 256, 384, 12, true);
}
TEST(GemmSm90RowGate, OwnRowsPingPongFirstBlock) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90PingPongConfig>(2048, 256, 64, 256, 0, 512, 13, true);
}
TEST(GemmSm90RowGate, OwnRowsLastEndingInsideATile) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90LargeConfig>(1000, 256, 64, 128, 896, 104, 14, true);
}
TEST(GemmSm90RowGate, OwnRowsShortTile) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90ShortConfig>(333, 128, 40, 64, 128, 128, 15, true);
}
TEST(GemmSm90RowGate, OwnRowsEverySmHeldWhileWaiting) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  run_gated<gemm::Sm90LargeConfig>(8192, 1024, 64, 2048, 2048, 2048, 16, true);
}

// Own rows that do not cover whole tiles, or lie outside m, are refused before any launch.
TEST(GemmSm90RowGate, OwnRowsOutsideWholeTilesAreRefused) {
  std::string const skip = sm90_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  using Op = gemm::GemmSm90<T, RowMajor, ColumnMajor, Store, gemm::Sm90RowGate<gemm::Sm90LargeConfig>>;
  int const m = 1000, n = 256, k = 64;
  DeviceBuffer da(static_cast<std::size_t>(m) * k * sizeof(T)), db(static_cast<std::size_t>(n) * k * sizeof(T));
  DeviceBuffer dd(static_cast<std::size_t>(m) * n * sizeof(T)), dflags(64);
  typename Op::Arguments args;
  args.problem = {m, n, k, 1};
  args.a = da.as<T>();
  args.b = db.as<T>();
  args.epilogue.set("D", dd.as<T>());
  typename Op::Plan plan;
  ASSERT_TRUE(Op::initialize(args, &plan).ok());
  ASSERT_TRUE(Op::set_row_gate(&plan, dflags.as<unsigned>(), 128, 0).ok());
  T const* own = da.as<T>();
  EXPECT_FALSE(Op::set_own_rows(&plan, own, 64, 128, k).ok());    // starts inside a tile
  EXPECT_FALSE(Op::set_own_rows(&plan, own, 128, 100, k).ok());   // ends inside a tile, not at m
  EXPECT_FALSE(Op::set_own_rows(&plan, own, 896, 128, k).ok());   // past m
  EXPECT_FALSE(Op::set_own_rows(&plan, own, 128, 128, 60).ok());  // ld below k
  EXPECT_FALSE(Op::set_own_rows(&plan, own + 1, 128, 128, k).ok());  // not 16-byte aligned
  EXPECT_TRUE(Op::set_own_rows(&plan, own, 896, 104, k).ok());    // ends at m
}

}  // namespace
}  // namespace tilefuse::gpu_test
