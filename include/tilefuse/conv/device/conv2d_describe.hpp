// What conv::Conv2d::describe() says of a plan: the kernel that runs it and why (the sm80 path with its
// gathers and split-K, or the Hopper kernel with its sources, split reduction, tile and grid). Host code.
#pragma once

#include <algorithm>
#include <string>

#include <tilefuse/conv/device/conv2d_plan_types.hpp>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/gemm_config.h>

namespace tilefuse::conv {

// What the text says beside the plan, from the Conv2d instantiation.
struct ConvDescribeFacts {
  char const* op;                     // "conv2d fprop", "conv2d dgrad" or "conv2d wgrad"
  bool auto_config = false;           // the sm80 tile chosen by the wave model
  bool dgrad_sm90 = false;            // the Hopper dgrad: an fprop of dy over the flipped filter
  bool wgrad_sm90 = false;            // the Hopper wgrad
  char const* fp8_element = nullptr;  // FP8 operands' type name, or null
  index_t chunk_elements = 8;         // a 16-byte chunk, in elements
};

// The sm80 path with tile Cfg, and why the Hopper kernel was not used where the plan says.
template <class Cfg>
std::string describe_sm80_plan(ConvDescribeFacts const& f, ConvPlan const& plan, GemmCoord const& g) {
  std::string text = status_message(
      "sm80 mma.sync implicit-GEMM ", f.op, " (GEMM ", g.m, " x ", g.n, " x ", g.k, "), tile ", Cfg::kTileM, "x",
      Cfg::kTileN, "x", Cfg::kTileK, f.auto_config ? " (chosen by the wave model)" : "", ", ", Cfg::kWarpsM * Cfg::kWarpsN,
      " warps, ", Cfg::kStages, " stages, ", plan.aligned ? "16-byte cp.async gathers" : "element-wise gathers (",
      plan.why_narrow, plan.aligned ? "" : ")", plan.split_k > 1 ? status_message(", split-K ", plan.split_k) : "");
  if (!plan.why_not_hopper.empty()) text += " [Hopper kernel not used: " + plan.why_not_hopper + "]";
  return text;
}

// The Hopper kernel Kernel (tile Cfg; x or dy by TMA im2col or tiled when kIm2col, else gathered).
template <class Cfg, bool kIm2col, class Kernel>
std::string describe_sm90_plan(ConvDescribeFacts const& f, ConvPlan const& plan, GemmCoord const& g) {
  index_t const tiles = ((g.m + Cfg::kTileM - 1) / Cfg::kTileM) * ((g.n + Cfg::kTileN - 1) / Cfg::kTileN) *
                        (f.wgrad_sm90 ? plan.split_k : 1);
  std::string loads;
  if (f.wgrad_sm90) {
    loads = status_message("dy by TMA in boxes of 64 channels x 64 pixels (A MN-major), x by ",
                           plan.pointwise ? "TMA in boxes of 64 channels x 64 pixels"
                                          : "TMA im2col in copies of 64 pixels x 64 channels of one tap",
                           " (B MN-major) (", plan.why_source, "), ",
                           plan.split_k <= 1 ? std::string("no split-K, ")
                           : plan.split_in_kernel
                               ? status_message("split-K ", plan.split_k,
                                                " (summed in the kernel: each split adds its fp32 tile into the workspace "
                                                "at L2 and the last one applies the epilogue; not bitwise reproducible, "
                                                "deterministic = true sums in a second pass), ")
                               : status_message("split-K ", plan.split_k,
                                                " (fp32 partials in the workspace, then a reduction pass that applies the "
                                                "epilogue), "));
  } else {
    loads = status_message(
        kIm2col ? status_message(f.dgrad_sm90 ? "dy" : "x",
                                 plan.pointwise ? " by tiled TMA (one box of " : " by TMA im2col (one copy of ",
                                 Cfg::kTileM, " pixels x ", Cfg::kTileK, " channels per filter tap and k-tile)")
                : std::string("x by 16-byte cp.async gathers of the producer warpgroup"),
        " (", plan.why_source, "), ",
        f.dgrad_sm90 ? "w by TMA in boxes of 64 channels x 64 filters of the flipped tap (B MN-major), " : "w by TMA, ");
  }
  return status_message("sm90 TMA + WGMMA implicit-GEMM ", f.op, " (GEMM ", g.m, " x ", g.n, " x ", g.k,
                        "; warp-specialized, persistent", Cfg::kSchedule == gemm::Sm90Schedule::kPingPong ? ", ping-pong" : "",
                        "), tile ", Cfg::kTileM, "x", Cfg::kTileN, "x", Cfg::kTileK, " (wave model: ", plan.why_tile,
                        "), ", Kernel::kStages, " stages, ", Kernel::kTmaAux ? "residual by TMA beside the operands, " : "",
                        loads, tiles, " tiles on ", std::min<index_t>(tiles, plan.sm_count), " blocks; ",
                        f.fp8_element ? status_message(f.fp8_element, " operands, fp32 accumulation in the tensor cores; ")
                                      : std::string(),
                        "chosen: sm_90 device with sm_90a code, C and K multiples of ", f.chunk_elements,
                        f.dgrad_sm90   ? ", 16-byte-aligned dy and w, no split-K"
                        : f.wgrad_sm90 ? ", 16-byte-aligned dy and x"
                                       : ", 16-byte-aligned x and w, no split-K");
}

}  // namespace tilefuse::conv
