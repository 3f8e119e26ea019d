// The skinny GEMM kernel's shape (skinny_gemm.h), apart from the kernel so that the planner (host code,
// gemm_plan.hpp) reads the same numbers.
#pragma once

namespace tilefuse::gemm::skinny {

inline constexpr int kSkinnyMaxRows = 16;      // the most rows of A (m): one m16n8k16 mma's rows
inline constexpr int kSkinnyColumns = 8;       // output columns per block: the mma's n, one epilogue fragment per row
inline constexpr int kSkinnyWarps = 8;         // per block, each an eighth of K's 32-element chunks
inline constexpr int kSkinnyThreads = 32 * kSkinnyWarps;
inline constexpr int kSkinnyMaxBatch = 65535;  // the grid's z
// A K a block streams in a couple of memory round trips (8 columns x 2048 x 2 bytes = 32 KB, about 16 KB in
// flight per block): at or below it the kernel runs even with fewer blocks than SMs, where a 128-row Hopper
// tile would take as long just to fill its ring (the planner: gemm_plan.hpp, why_not_skinny).
inline constexpr long long kSkinnyShortK = 2048;

}  // namespace tilefuse::gemm::skinny
