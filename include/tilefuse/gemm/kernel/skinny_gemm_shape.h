// The skinny GEMM kernel's shape (skinny_gemm.h), apart from the kernel so that the planner (host code,
// gemm_plan.hpp) reads the same numbers.
#pragma once

namespace tilefuse::gemm::skinny {

inline constexpr int kSkinnyMaxRows = 16;      // the most rows of A (m): one m16n8k16 mma's rows
inline constexpr int kSkinnyColumns = 8;       // output columns per block: the mma's n, one epilogue fragment per row
inline constexpr int kSkinnyWarps = 8;         // per block, each an eighth of K's 32-element chunks
inline constexpr int kSkinnyThreads = 32 * kSkinnyWarps;
inline constexpr int kSkinnyMaxBatch = 65535;  // the grid's z

}  // namespace tilefuse::gemm::skinny
