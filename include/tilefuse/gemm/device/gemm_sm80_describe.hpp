// What gemm::Gemm::describe() says of a plan on the sm_80 kernel, as functions of values: the tile config's
// constants, the path (operands by TMA, the 16-byte cp.async path, or the element-wise one and why) and the
// split, so that tilefuse._C gives Python's sm80 plans the same text. Host code.
#pragma once

#include <string>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/tile_models.hpp>
#include <tilefuse/gemm/gemm_config.h>

namespace tilefuse::gemm {

struct Sm80GemmKernelFacts {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int warps = 0;
  int stages = 0;
};

template <class Cfg>
Sm80GemmKernelFacts sm80_gemm_kernel_facts() {
  return {Cfg::kTileM, Cfg::kTileN, Cfg::kTileK, Cfg::kWarpsM * Cfg::kWarpsN, Cfg::kStages};
}

// The facts of the named config the planner picks (Sm80Tile).
inline Sm80GemmKernelFacts sm80_gemm_kernel_facts(Sm80Tile tile) {
  switch (tile) {
    case Sm80Tile::kSmall: return sm80_gemm_kernel_facts<Sm80SmallConfig>();
    case Sm80Tile::kNarrow: return sm80_gemm_kernel_facts<Sm80NarrowConfig>();
    default: return sm80_gemm_kernel_facts<Sm80LargeConfig>();
  }
}

// The planner's "sm80 kernel: <why the Hopper kernel is not used>" without its lead-in, and describe()'s note
// of it.
inline std::string why_hopper_not_used(std::string const& plan_why) {
  std::size_t const colon = plan_why.find(": ");
  return colon == std::string::npos ? plan_why : plan_why.substr(colon + 2);
}
inline std::string hopper_refused_note(std::string const& why_not) { return " (Hopper kernel refused: " + why_not + ")"; }

// Why the 16-byte path cannot read the operands (empty: it can): it reads whole aligned 16-byte chunks
// (`chunk` elements) along each operand's contiguous dimension.
inline std::string sm80_why_narrow(bool bases_aligned, index_t lda, index_t ldb, index_t batch, index_t batch_stride_a,
                                   index_t batch_stride_b, index_t chunk) {
  if (!bases_aligned) return "a or b is not 16-byte aligned";
  if (lda % chunk != 0 || ldb % chunk != 0) {
    return status_message("lda = ", lda, " or ldb = ", ldb, " is not a multiple of ", chunk, " elements");
  }
  if (batch > 1 && (batch_stride_a % chunk != 0 || batch_stride_b % chunk != 0)) {
    return status_message("a batch stride is not a multiple of ", chunk, " elements");
  }
  return {};
}

// inputs: "bf16", "fp16", "tf32" or "fp32 rounded to tf32"; hopper_note: " (Hopper kernel ...: why)" or empty.
inline std::string describe_sm80_gemm(Sm80GemmKernelFacts const& k, char const* inputs, bool tma, bool aligned,
                                      std::string const& why_narrow, int split_k, std::string const& hopper_note) {
  return status_message("sm80 mma.sync GEMM (", inputs, " inputs), tile ", k.tile_m, "x", k.tile_n, "x", k.tile_k, ", ",
                        k.warps, " warps, ", k.stages, " stages, ",
                        tma       ? "operands by TMA (sm_90)"
                        : aligned ? "16-byte cp.async path"
                                  : "element-wise path (",
                        aligned ? "" : why_narrow, aligned ? "" : ")",
                        split_k > 1 ? status_message(", split-K ", split_k) : "", hopper_note);
}

}  // namespace tilefuse::gemm
