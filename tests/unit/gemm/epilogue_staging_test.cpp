// The sm90 epilogue's staging layout (gemm/kernel/sm90_epilogue_staging.h): a permutation of the
// slice, and free of bank conflicts for the kernel's write and read patterns (stage_chunk and
// visit_chunk in sm90_gemm.h), counted phase by phase as the shared-memory unit serves them.
#include <tilefuse/gemm/kernel/sm90_epilogue_staging.h>

#include <gtest/gtest.h>

#include "bank_conflicts.hpp"

#include <array>
#include <set>
#include <vector>

namespace tilefuse::gemm::sm90 {
namespace {

constexpr int kRows = 16;
constexpr int kLanes = test::kWarpLanes;
using test::Access;
using test::wavefronts;

TEST(EpilogueStaging, IsAPermutationKeepingVectorsContiguous) {
  std::set<int> seen;
  for (int row = 0; row < kRows; ++row) {
    for (int col = 0; col < kStagingColumns; ++col) {
      int const at = staging_offset(row, col);
      ASSERT_GE(at, 0);
      ASSERT_LT(at, kRows * kStagingColumns);
      ASSERT_TRUE(seen.insert(at).second) << "row " << row << " col " << col;
      // A 16-byte group (4 columns) stays contiguous and aligned: float2 and float4 accesses work.
      EXPECT_EQ(at % 4, col % 4);
      if (col % 4 != 0) EXPECT_EQ(at, staging_offset(row, col - 1) + 1);
    }
  }
}

// stage_chunk: lane holds rows lane / 4 and lane / 4 + 8, columns 8j + 2 * (lane % 4) + {0, 1}.
TEST(EpilogueStaging, AccumulatorWritesAreConflictFree) {
  for (int j = 0; j < kStagingColumns / 8; ++j) {
    for (int half : {0, 8}) {
      Access a;
      a.width = 2;
      for (int lane = 0; lane < kLanes; ++lane) a.first[lane] = staging_offset(lane / 4 + half, 8 * j + 2 * (lane % 4));
      EXPECT_EQ(wavefronts(a), 2) << "j " << j << " rows +" << half;
    }
  }
}

// visit_chunk: lane's i-th visit is vector v = lane + 32i of kVisitWidth columns, row v / (32 / width);
// it reads the vector as float4s q = 0, 1, ...
TEST(EpilogueStaging, VisitReadsAreConflictFree) {
  for (int visit_width : {8, 16}) {
    int const per_row = kStagingColumns / visit_width;
    int const visits_per_lane = kRows * per_row / kLanes;
    for (int i = 0; i < visits_per_lane; ++i) {
      for (int q = 0; q < visit_width / 4; ++q) {
        Access a;
        a.width = 4;
        for (int lane = 0; lane < kLanes; ++lane) {
          int const v = lane + kLanes * i;
          a.first[lane] = staging_offset(v / per_row, (v % per_row) * visit_width + 4 * q);
        }
        EXPECT_EQ(wavefronts(a), 4) << "width " << visit_width << " visit " << i << " float4 " << q;
      }
    }
  }
}

// The packed epilogue's stmatrix.x4 (epilogue_tile_packed): lane gives row (lane / 8 % 2) * 8 + lane % 8
// of 16-bit group jj + lane / 16; each tile (8 lanes, 16 bytes each) is one phase.
TEST(EpilogueStaging, PackedStmatrixWritesAreConflictFree) {
  for (int jj = 0; jj < kPackedStagingColumns / 8; jj += 2) {
    Access a;
    a.width = 4;
    for (int lane = 0; lane < kLanes; ++lane) a.first[lane] = packed_group_offset((lane / 8 % 2) * 8 + lane % 8, jj + lane / 16);
    EXPECT_EQ(wavefronts(a), 4) << "groups " << jj << ", " << jj + 1;
  }
}

// Its copy-out: lane's i-th read is group v % 8 of row v / 8, v = lane + 32i.
TEST(EpilogueStaging, PackedReadsAreConflictFree) {
  for (int i = 0; i < kRows * 8 / kLanes; ++i) {
    Access a;
    a.width = 4;
    for (int lane = 0; lane < kLanes; ++lane) a.first[lane] = packed_group_offset((lane + kLanes * i) / 8, lane % 8);
    EXPECT_EQ(wavefronts(a), 4) << "read " << i;
  }
}

// The counting above finds the conflicts of the padded layout the swizzle replaced (row stride 40
// floats: 8 wavefronts per float4 read), so the tests can fail.
TEST(EpilogueStaging, CountingSeesThePaddedLayoutsConflicts) {
  Access a;
  a.width = 4;
  for (int lane = 0; lane < kLanes; ++lane) a.first[lane] = (lane / 4) * 40 + (lane % 4) * 8;
  EXPECT_EQ(wavefronts(a), 8);
}


// The TMA residual's sub-tile (tma_swizzled_group_offset: TMA's 128-byte swizzle, the 16-byte group
// XOR row % 8): a permutation of each row's groups, and the packed epilogue's pair reads (lane reads the
// 4 bytes of columns 8j + 2 * (lane % 4) + {0, 1} of rows lane / 4 and lane / 4 + 8, as floats: one
// float per pair of 16-bit values) and 16-byte group reads (8 lanes, the 8 groups of a row) are free of
// bank conflicts.
TEST(EpilogueStaging, TmaSwizzledSubTileReadsAreConflictFree) {
  for (int row = 0; row < kRows; ++row) {
    std::set<int> groups;
    for (int g = 0; g < 8; ++g) {
      int const at = tma_swizzled_group_offset(row, g);
      EXPECT_EQ(at / kStagingColumns, row);
      EXPECT_EQ(at % 4, 0);
      groups.insert(at);
    }
    EXPECT_EQ(groups.size(), 8u);
  }
  for (int j = 0; j < 8; ++j) {
    for (int half : {0, 8}) {
      Access pairs;
      for (int lane = 0; lane < kLanes; ++lane) {
        pairs.first[lane] = tma_swizzled_group_offset(lane / 4 + half, j) + lane % 4;
      }
      EXPECT_EQ(wavefronts(pairs), 1) << "group " << j << " rows +" << half;
    }
  }
  for (int base = 0; base < kRows; base += 4) {
    Access groups;
    groups.width = 4;
    for (int lane = 0; lane < kLanes; ++lane) groups.first[lane] = tma_swizzled_group_offset(base + lane / 8, lane % 8);
    EXPECT_EQ(wavefronts(groups), 4) << "rows " << base << "..";  // 4 phases of 8 lanes, one wavefront each
  }
}

}  // namespace
}  // namespace tilefuse::gemm::sm90
