// The sm80 epilogue's staging (gemm/kernel/sm80_epilogue_staging.h): the accumulator writes of
// stage_accumulators and the vector reads of visit_epilogue (sm80_gemm.h) are free of bank conflicts
// for every tile width the configurations use, counted phase by phase.
#include <tilefuse/gemm/kernel/sm80_epilogue_staging.h>

#include <gtest/gtest.h>

#include "bank_conflicts.hpp"

namespace tilefuse::gemm::sm80 {
namespace {

using test::Access;
using test::kWarpLanes;
using test::wavefronts;

constexpr int kTileWidths[] = {64, 128, 256};

// Rows are 16-byte aligned (float4 reads) and hold the whole tile row.
TEST(Sm80EpilogueStaging, RowsHoldTheTileAndStayAligned) {
  for (int n : kTileWidths) {
    EXPECT_GE(staging_ld(n), n);
    EXPECT_EQ(staging_ld(n) % 4, 0) << "tile width " << n;
  }
}

// stage_accumulators: for an m16n8 block at (r0, c0), lane writes float2 at row r0 + lane / 4 (and +8),
// columns c0 + 2 * (lane % 4). One wavefront per phase: 2 per instruction.
TEST(Sm80EpilogueStaging, AccumulatorWritesAreConflictFree) {
  for (int n : kTileWidths) {
    int const ld = staging_ld(n);
    for (int r0 : {0, 16, 40}) {
      for (int c0 = 0; c0 < n; c0 += 8) {
        Access a;
        a.width = 2;
        for (int lane = 0; lane < kWarpLanes; ++lane) a.first[lane] = (r0 + lane / 4) * ld + c0 + 2 * (lane % 4);
        EXPECT_EQ(wavefronts(a), 2) << "width " << n << " block (" << r0 << ", " << c0 << ")";
      }
    }
  }
}

// visit_epilogue: vector v = threadIdx.x + i * threads covers row v / (n / 8), columns 8 * (v % (n / 8))
// on; the lane reads the half first_half_read(lane) first, then the other. 4 wavefronts per float4 read.
TEST(Sm80EpilogueStaging, VectorReadsAreConflictFree) {
  for (int n : kTileWidths) {
    int const ld = staging_ld(n);
    int const vectors_per_row = n / 8;
    for (int v0 = 0; v0 < 4 * vectors_per_row; v0 += kWarpLanes) {
      for (int read = 0; read < 2; ++read) {
        Access a;
        a.width = 4;
        for (int lane = 0; lane < kWarpLanes; ++lane) {
          int const v = v0 + lane;
          int const first = first_half_read(lane);
          a.first[lane] = v / vectors_per_row * ld + 8 * (v % vectors_per_row) + (read == 0 ? first : 4 - first);
        }
        EXPECT_EQ(wavefronts(a), 4) << "width " << n << " vectors " << v0 << " read " << read;
      }
    }
  }
}

}  // namespace
}  // namespace tilefuse::gemm::sm80
