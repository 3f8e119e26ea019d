// The skinny GEMM kernel's shape (skinny_gemm.h), apart from the kernel so that the planner (host code,
// gemm_plan.hpp) reads the same numbers.
#pragma once

namespace tilefuse::gemm::skinny {

inline constexpr int kSkinnyMaxRows = 8;       // the most rows of A (m) the kernel takes
inline constexpr int kSkinnyColumns = 8;       // output columns per block: one 8-wide epilogue fragment per row
inline constexpr int kSkinnyWarps = 4;         // per block, each a quarter of K
inline constexpr int kSkinnyThreads = 32 * kSkinnyWarps;
inline constexpr int kSkinnyMaxBatch = 65535;  // the grid's z

}  // namespace tilefuse::gemm::skinny
