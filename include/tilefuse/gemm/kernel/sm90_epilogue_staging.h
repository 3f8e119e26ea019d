// The layout of the sm90 kernel's epilogue staging slice: 16 rows x 32 columns of fp32 accumulators
// per consumer warp, written in the wgmma accumulator layout (float2 per lane) and read back as
// float4 vectors of 8 or 16 consecutive columns per lane (sm90_gemm.h, stage_chunk / visit_chunk).
//
// Rows are unpadded (128 bytes: all 32 banks) and the row's eight 16-byte groups are permuted by an
// XOR with (5 * row) & 7. A shared-memory access is served in phases (16 lanes for 8-byte accesses,
// 8 lanes for 16-byte ones); each phase of both patterns then touches every bank exactly once:
//   writes: lanes 4r..4r+3 write columns 8j + 2 * (lane % 4) + {0, 1} of row r (r = 0..3 per phase):
//           the four rows' XOR masks (0, 5, 2, 7) >> 1 differ, so their group pairs {2j, 2j + 1} do;
//   reads:  8 columns per lane: rows r, r + 1 (even r) of one phase read groups {0, 2, 4, 6} + q, and
//           their masks have different parities; 16 columns per lane: rows r..r+3 read groups
//           {0, 4} + q, and their masks differ in the low two bits.
// The packed epilogue (16-bit D from the accumulator alone) stages 16-bit results in the same slice:
// 64 columns per 128-byte row, 8 per 16-byte group, written by stmatrix (one 8x8 tile of one group
// on 8 consecutive rows per phase: distinct masks) and read back a 16-byte group per lane (8 lanes
// of a phase read the 8 groups of one row).
// tests/unit/gemm/epilogue_staging_test.cpp counts the phases' bank conflicts for every access.
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse::gemm::sm90 {

inline constexpr int kStagingColumns = 32;  // one 128-byte row of floats
inline constexpr int kStagingSliceFloats = 16 * kStagingColumns;  // a consumer warp's 16 accumulator rows

// The float index of element (row, col) in a staging slice.
TILEFUSE_HOST_DEVICE constexpr int staging_offset(int row, int col) {
  return row * kStagingColumns + 4 * ((col / 4) ^ ((5 * row) & 7)) + col % 4;
}

inline constexpr int kPackedStagingColumns = 64;  // 16-bit values: one 128-byte row

// The float index of the 16-byte group that holds 16-bit columns 8 * group .. 8 * group + 7 of `row`.
TILEFUSE_HOST_DEVICE constexpr int packed_group_offset(int row, int group) { return staging_offset(row, 4 * group); }

// The same 16-byte group in a sub-tile written by TMA with the 128-byte swizzle (rows of 128 bytes, the
// group XOR row % 8): the residual's sub-tiles under Config::kTmaAux. Also free of bank
// conflicts for 8 lanes reading the 8 groups of one row, or one group of 8 consecutive rows.
TILEFUSE_HOST_DEVICE constexpr int tma_swizzled_group_offset(int row, int group) {
  return row * kStagingColumns + 4 * (group ^ (row & 7));
}

// The epilogue's shared storage, two regions the kernel's plan places (sm90_shared_memory.h): per consumer warp
// kSlices staging slices of 16 rows x kStagingColumns floats (the packed epilogue's staged loads take up to
// four), then per warp kLoadBytesPerWarp of staged loads' slots or the staged column vector.
template <int kWarps, int kSlices, int kLoadBytesPerWarp>
struct EpilogueStagingStorage {
  static constexpr int kBytesPerWarp = kSlices * kStagingSliceFloats * static_cast<int>(sizeof(float));
  static constexpr int kStagingBytes = kWarps * kBytesPerWarp;
  static constexpr int kLoadBytes = kWarps * kLoadBytesPerWarp;
  struct Pointers {
    float* staging;  // per consumer warp kSlices slices
    char* loads;     // per consumer warp kLoadBytesPerWarp
  };
  TILEFUSE_DEVICE static Pointers carve(char* staging, char* loads) {
    return Pointers{reinterpret_cast<float*>(staging), loads};
  }
};

}  // namespace tilefuse::gemm::sm90
