// What conv::Conv2d::describe() says of a plan: the kernel that runs it and why (the sm80 path with its
// gathers and split-K, or the Hopper kernel with its sources, split reduction, tile and grid). Functions of
// values, so that tilefuse._C says the same of the plan it hands Python (the kernel's own constants come
// from the compiled kernel's layout there). Host code.
#pragma once

#include <algorithm>
#include <string>

#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/gemm_sm80_describe.hpp>
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

// The constants of the Hopper kernel that runs the plan (the sm80 kernel's: gemm::Sm80GemmKernelFacts).
struct ConvKernelFacts {
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int stages = 0;          // the ring's depth
  bool ping_pong = false;  // the ping-pong schedule
  bool tma_aux = false;    // the residual loaded by TMA beside the operands
};

template <class Cfg, class Kernel>
ConvKernelFacts sm90_kernel_facts() {
  return {Cfg::kTileM, Cfg::kTileN, Cfg::kTileK, Kernel::kStages, Cfg::kSchedule == gemm::Sm90Schedule::kPingPong,
          Kernel::kTmaAux};
}

// The sm80 path, and why the Hopper kernel was not used where the plan says.
inline std::string describe_sm80_plan(ConvDescribeFacts const& f, ConvPlan const& plan, GemmCoord const& g,
                                      gemm::Sm80GemmKernelFacts const& k) {
  std::string text = status_message(
      "sm80 mma.sync implicit-GEMM ", f.op, " (GEMM ", g.m, " x ", g.n, " x ", g.k, "), tile ", k.tile_m, "x",
      k.tile_n, "x", k.tile_k, f.auto_config ? " (chosen by the wave model)" : "", ", ", k.warps,
      " warps, ", k.stages, " stages, ", plan.aligned ? "16-byte cp.async gathers" : "element-wise gathers (",
      plan.why_narrow, plan.aligned ? "" : ")", plan.split_k > 1 ? status_message(", split-K ", plan.split_k) : "");
  if (!plan.why_not_hopper.empty()) text += " [Hopper kernel not used: " + plan.why_not_hopper + "]";
  return text;
}

// The Hopper kernel (x or dy by TMA im2col or tiled where plan.im2col, else gathered).
inline std::string describe_sm90_plan(ConvDescribeFacts const& f, ConvPlan const& plan, GemmCoord const& g,
                                      ConvKernelFacts const& k) {
  // The wgrad's splits as they run (conv_sm90_splits: no split past the last pixel, so at most plan.split_k).
  ConvSm90Splits const splits = f.wgrad_sm90 ? conv_sm90_splits(g, plan) : ConvSm90Splits{};
  index_t const tiles = ((g.m + k.tile_m - 1) / k.tile_m) * ((g.n + k.tile_n - 1) / k.tile_n) * splits.splits;
  std::string loads;
  if (f.wgrad_sm90) {
    loads = status_message("dy by TMA in boxes of 64 channels x 64 pixels (A MN-major), x by ",
                           plan.pointwise ? "TMA in boxes of 64 channels x 64 pixels"
                                          : "TMA im2col in copies of 64 pixels x 64 channels of one tap",
                           " (B MN-major) (", plan.why_source, "), ",
                           splits.splits <= 1 ? std::string("no split-K, ")
                           : splits.reduction == ConvSm90Split::kInKernel
                               ? status_message("split-K ", splits.splits,
                                                " (summed in the kernel: each split adds its fp32 tile into the workspace "
                                                "at L2 and the last one applies the epilogue; not bitwise reproducible, "
                                                "deterministic = true sums in a second pass), ")
                               : status_message("split-K ", splits.splits,
                                                " (fp32 partials in the workspace, then a reduction pass that applies the "
                                                "epilogue), "));
  } else {
    loads = status_message(
        plan.im2col ? status_message(f.dgrad_sm90 ? "dy" : "x",
                                     plan.pointwise ? " by tiled TMA (one box of " : " by TMA im2col (one copy of ",
                                     k.tile_m, " pixels x ", k.tile_k, " channels per filter tap and k-tile)")
                : std::string("x by 16-byte cp.async gathers of the producer warpgroup"),
        " (", plan.why_source, "), ",
        f.dgrad_sm90 ? "w by TMA in boxes of 64 channels x 64 filters of the flipped tap (B MN-major), " : "w by TMA, ");
  }
  return status_message("sm90 TMA + WGMMA implicit-GEMM ", f.op, " (GEMM ", g.m, " x ", g.n, " x ", g.k,
                        "; warp-specialized, persistent", k.ping_pong ? ", ping-pong" : "",
                        "), tile ", k.tile_m, "x", k.tile_n, "x", k.tile_k, " (wave model: ", plan.why_tile,
                        "), ", k.stages, " stages, ", k.tma_aux ? "residual by TMA beside the operands, " : "",
                        loads, tiles, " tiles on ", std::min<index_t>(tiles, plan.sm_count), " blocks; ",
                        f.fp8_element ? status_message(f.fp8_element, " operands, fp32 accumulation in the tensor cores; ")
                                      : std::string(),
                        "chosen: sm_90 device with sm_90a code, C and K multiples of ", f.chunk_elements,
                        f.dgrad_sm90   ? ", 16-byte-aligned dy and w, no split-K"
                        : f.wgrad_sm90 ? ", 16-byte-aligned dy and x"
                                       : ", 16-byte-aligned x and w, no split-K");
}

}  // namespace tilefuse::conv
