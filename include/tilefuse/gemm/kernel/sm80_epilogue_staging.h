// The layout of the sm80 kernel's epilogue staging: the block's TileM x TileN fp32 accumulators in
// shared memory, rows kStagingLd floats apart, written in the mma.sync accumulator layout (float2 per
// lane) and read back as two float4 per lane (8 consecutive columns of one row; sm80_gemm.h,
// stage_accumulators / visit_epilogue).
//
// A shared-memory access is served in phases (16 lanes for 8-byte accesses, 8 for 16-byte ones):
//   writes: lanes 4r..4r+3 write 8 consecutive floats of row r (r = 0..3 per phase): rows 8 floats
//           apart modulo 32 banks put the four rows on disjoint banks (4 apart, the old padding,
//           overlapped two rows per bank: 2 wavefronts per phase instead of 1);
//   reads:  8 lanes read 8-column vectors 8 floats apart in one row: as two float4 each, lanes 0-3 of
//           the phase read their lower half first and lanes 4-7 their upper half, so each phase's
//           eight float4 cover all 32 banks once (in the same order they take two wavefronts).
// tests/unit/gemm/sm80_epilogue_staging_test.cpp counts the phases' bank conflicts (gemm_sm80.md: the old
// layout, padding 4 and both halves in order, against this one).
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm80 {

// Floats between staged rows: the tile's columns and a padding that keeps rows 16-byte aligned.
TILEFUSE_HOST_DEVICE constexpr int staging_ld(int tile_n) { return tile_n + 8; }

// Which half (0: columns 0-3, 4: columns 4-7) of its 8-column vector lane `lane` reads first.
TILEFUSE_HOST_DEVICE constexpr int first_half_read(int lane) { return lane / 4 % 2 * 4; }

}  // namespace tilefuse::gemm::sm80
