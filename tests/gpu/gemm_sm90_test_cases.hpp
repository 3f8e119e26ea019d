// Case lists and test macros for gemm::GemmSm90 (the Hopper TMA + WGMMA kernel), on top of the sm80
// GEMM's harness (gemm_harness.hpp, which takes the operation as a template parameter) and its case
// lists (gemm_test_cases.hpp).
//
// GemmSm90 runs A row-major x B column-major, split_k = 1, with TMA's alignment (16-byte base, leading
// dimensions and batch strides multiples of 8 elements). Every case of a list is run; a case the
// kernel is predicted to refuse (by those rules, from the case's geometry) may be refused, any other
// refusal is a failure. The lists are the sm80 ones, plus each one again with A and B padded to a
// multiple of 8 elements so that every edge shape (m, n, k not multiples of any tile, k < 64, 1x1x1)
// runs through TMA. Tests skip on devices other than sm_90.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include <tilefuse/gemm/device/gemm_sm90.hpp>

#include "gemm_test_cases.hpp"

namespace tilefuse::gpu_test {

using gemm::Sm90LargeConfig;
using gemm::Sm90MediumConfig;
using gemm::Sm90PingPongConfig;
using gemm::Sm90PingPongWideConfig;

// The packed epilogue with its AuxLoad staged in shared memory (opt-in: sm90_gemm.h kPackedLoads).
struct Sm90LargePackedLoadsConfig : Sm90LargeConfig {
  static constexpr bool kPackedLoads = true;
};
struct Sm90MediumPackedLoadsConfig : Sm90MediumConfig {
  static constexpr bool kPackedLoads = true;
};
// ... with the residual loaded by TMA from the producer (the planner's choice for aligned residuals).
using Sm90LargeTmaAuxConfig = gemm::Sm90TmaResidual<Sm90LargeConfig>;
using Sm90MediumTmaAuxConfig = gemm::Sm90TmaResidual<Sm90MediumConfig>;
using Sm90NarrowTmaAuxConfig = gemm::Sm90TmaResidual<gemm::Sm90NarrowConfig>;

// Empty when the current device is an sm_90; otherwise why the Hopper tests skip.
inline std::string sm90_skip_reason() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "no CUDA device";
  }
  if (major == 9 && minor == 0) return {};
  return "the device is sm_" + std::to_string(major) + std::to_string(minor) + ", the Hopper kernel needs sm_90";
}

// Whether GemmSm90 (A row-major, B column-major) should accept the case.
inline bool sm90_accepts(GemmCase const& c) {
  GemmCoord const p = c.problem;
  if (c.split_k != 1) return false;
  Geometry const a = matrix_geometry(p.m, p.k, false, c.ld_a, p.batch, c.batch_gap);
  Geometry const b = matrix_geometry(p.k, p.n, true, c.ld_b, p.batch, c.batch_gap, c.shared_b);
  auto aligned = [&](Geometry const& g) { return g.ld % 8 == 0 && (p.batch == 1 || g.batch_stride % 8 == 0); };
  return aligned(a) && aligned(b);
}

// Marks the cases the kernel may refuse, and adds a copy of each with A and B padded to a multiple
// of 8 elements (and split_k = 1), which it must run.
inline std::vector<GemmCase> sm90_cases(std::vector<GemmCase> const& base) {
  std::vector<GemmCase> cases;
  for (GemmCase c : base) {
    c.refusal_allowed = c.refusal_allowed || !sm90_accepts(c);
    cases.push_back(c);
    GemmCase padded = c;
    padded.ld_a = padded.ld_b = Ld::kAligned;
    padded.split_k = 1;
    // Gaps between batch entries must keep the batch strides multiples of 8.
    if (padded.batch_gap % 8 != 0) padded.batch_gap = (padded.batch_gap / 8 + 1) * 8;
    padded.refusal_allowed = false;
    padded.seed ^= 0x5a5a5a5a;
    if (!sm90_accepts(padded)) continue;  // (cannot happen with the rules above; kept as a guard)
    bool const same = c.ld_a == Ld::kAligned && c.ld_b == Ld::kAligned && c.split_k == 1 && c.batch_gap == padded.batch_gap;
    if (!same) cases.push_back(padded);
  }
  return cases;
}

// More tiles than an H100/H200 has SMs (132), k not a multiple of 64 (or below it), odd edges.
inline std::vector<GemmCase> persistent_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](index_t m, index_t n, index_t k, index_t batch = 1) {
    GemmCase c = make_case(m, n, k, batch);
    c.ld_a = c.ld_b = Ld::kAligned;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(2049, 2049, 200);    // 17 x 9 (128x256) / 17 x 17 (128x128) tiles
  add(3000, 3001, 72);     // 24 x 12 / 24 x 24 tiles, k = 64 + 8
  add(4000, 4000, 8);      // 500 / 1000 tiles of one partial k-tile
  add(1537, 2500, 129, 3); // batches of many tiles; k = 2 * 64 + 1
  add(512, 384, 520, 9);   // 9 batches, k tail 8
  add(130, 4097, 63);      // one tile row, k just below one k-tile
  add(4097, 130, 65);      // one or two tile columns, k just above
  add(8, 8, 4096);         // one tile, a long k loop (the ring wraps many times)
  return cases;
}


// Ping-pong's turns (gemm_sm90_pingpong_test.cu): m x n chosen against 132 SMs (H100 / H200) and the 128x128 tile: 1 tile; 133 tiles (one block
// gets two, the rest one); 3 x 132 + 5 (odd counts per block); each with k-tile counts 1, 5, 6, 7,
// 13 and a k tail.
inline std::vector<GemmCase> pingpong_cases(std::uint64_t seed) {
  std::vector<GemmCase> cases;
  auto add = [&](index_t m, index_t n, index_t k, index_t batch = 1) {
    GemmCase c = make_case(m, n, k, batch);
    c.ld_a = c.ld_b = Ld::kAligned;
    c.seed = seed * 100 + cases.size();
    cases.push_back(c);
  };
  add(100, 120, 64);          // one tile, one k-tile
  add(7 * 128, 19 * 128, 320);  // 133 tiles of 5 k-tiles
  add(7 * 128 - 3, 19 * 128 + 1, 384);  // 7 x 20 tiles, 6 k-tiles (the 128x128 ring's depth)
  add(21 * 128 - 7, 20 * 128, 448);     // 21 x 20 = 420 tiles (3 or 4 per block), 7 k-tiles
  add(1000, 2100, 13 * 64 + 5);         // 8 x 17 tiles, 13 full k-tiles and a tail
  add(640, 640, 64 * 5 + 1, 7);         // batches: 175 tiles, k = 5 k-tiles + 1
  add(64, 8192, 1024);                  // one tile row: 64 / 32 tiles
  return cases;
}

}  // namespace tilefuse::gpu_test

// One test: the case list `cases_expr` (a std::vector<GemmCase>) through GemmSm90 with A row-major and
// B column-major.
#define TILEFUSE_GPU_GEMM_SM90_TEST(Suite, Name, T, Spec, Config, cases_expr)                                   \
  TEST(Suite, Name) {                                                                                             \
    std::string const skip = ::tilefuse::gpu_test::sm90_skip_reason();                                           \
    if (!skip.empty()) GTEST_SKIP() << skip;                                                                      \
    ::tilefuse::gpu_test::run_gemm_cases<T, ::tilefuse::RowMajor, ::tilefuse::ColumnMajor, Spec, Config,          \
                                         ::tilefuse::gemm::GemmSm90>(::tilefuse::gpu_test::sm90_cases(cases_expr)); \
  }
