// A wgrad of few channels (C below one 16-byte chunk: ResNet's stem, C = 3) as an im2col and a Hopper GEMM:
// dw[K, R*S*C] = dy^T [K x NPQ] x im2col(x) [NPQ x R*S*C]. The Hopper wgrad needs C in multiples of 64 and
// the sm80 kernel pads C to 8 and stages x element by element (0.90 ms against cuDNN's 0.30 on the stem at
// N = 64, docs/notes/conv_sm90.md, "the stem's wgrad"); here x is gathered once into columns and the GEMM
// splits the long K (the pixels) in the kernel. Both operands are written K-major (the GEMM's layouts):
// dy transposed into dyT [K, Kp] and the columns into colsT [Np, Kp], K zero-padded to Kp (a multiple of 8)
// and the columns to Np (a multiple of 8; a column index is (r * S + s) * C + c, the filter's KRSC order).
// The caller gathers (the Python package; conv::Conv2d has no gather and keeps the sm80 kernel):
// plan_wgrad_im2col says whether to, with the reason and the GEMM's plan. Host code.
#pragma once

#include <cstdint>
#include <string>

#include <tilefuse/conv/conv2d_problem.h>
#include <tilefuse/conv/device/conv2d_plan.hpp>
#include <tilefuse/core/status.hpp>
#include <tilefuse/gemm/device/gemm_plan.hpp>

namespace tilefuse::conv {

struct WgradIm2col {
  bool use = false;
  std::string why;
  index_t columns = 0;         // R * S * C
  index_t padded_columns = 0;  // the GEMM's n: columns rounded up to 8
  index_t padded_k = 0;        // the GEMM's k: N * P * Q rounded up to 8
  std::int64_t workspace_bytes = 0;  // dyT and colsT
  gemm::GemmPlan gemm;  // m = K, n = padded_columns, k = padded_k; A row-major, B K-major, aligned
};

inline index_t round_up_8(index_t v) { return (v + 7) / 8 * 8; }

// The columns and dy's copy are scratch the direct kernel does not need: past this, the sm80 kernel runs.
inline constexpr std::int64_t kWgradIm2colMaxWorkspace = std::int64_t{2} << 30;

// Whether a wgrad runs as im2col + Hopper GEMM: the identity epilogue (`bare_tree`), a caller that gathers
// (`caller_gathers`, and runs the skinny GEMM too), 16-bit elements, a problem the Hopper wgrad does not take
// with fewer channels than a 16-byte chunk (which the sm80 kernel pads or reads element by element), scratch
// within kWgradIm2colMaxWorkspace, and a GEMM that plans on the Hopper (or skinny) kernel.
inline WgradIm2col plan_wgrad_im2col(ConvPlanInput const& in, bool bare_tree, bool caller_gathers) {
  Conv2dProblem const& p = in.problem;
  WgradIm2col out;
  if (p.mode != ConvMode::kWgrad) {
    out.why = "not a wgrad";
    return out;
  }
  if (!is_16bit(in.element)) {
    out.why = "the Hopper GEMM takes bf16 or fp16";
    return out;
  }
  if (!bare_tree) {
    out.why = "an epilogue other than the identity would see the padded GEMM's columns";
    return out;
  }
  if (!caller_gathers) {
    out.why = "the caller has no im2col gather (conv::Conv2d)";
    return out;
  }
  ConvPlanInput direct = in;
  direct.split_k = 0;
  if (plan_conv2d(direct).family == ConvFamily::kSm90) {
    out.why = "the Hopper wgrad takes it";
    return out;
  }
  if (index_t const chunk = 16 / element_bytes(in.element); p.C >= chunk) {
    out.why = status_message("C = ", p.C, " is not below a 16-byte chunk (", chunk, " channels): the gathered columns "
                             "would be R * S times x");
    return out;
  }
  out.columns = p.R * p.S * p.C;
  out.padded_columns = round_up_8(out.columns);
  index_t const pixels = p.N * p.P() * p.Q();
  out.padded_k = round_up_8(pixels);
  out.workspace_bytes = static_cast<std::int64_t>(p.K + out.padded_columns) * out.padded_k * element_bytes(in.element);
  if (out.workspace_bytes > kWgradIm2colMaxWorkspace) {
    out.why = status_message("its columns and dy's copy would take ", out.workspace_bytes >> 20, " MiB (past ",
                             kWgradIm2colMaxWorkspace >> 20, "): split the batch");
    return out;
  }
  gemm::GemmRequest request;
  request.problem = GemmCoord{p.K, out.padded_columns, out.padded_k, 1};
  request.skinny_code = true;  // the caller's tilefuse.Gemm runs the skinny kernel where the planner picks it
  Status const s = gemm::plan_gemm(request, in.device, &out.gemm);
  if (!s.ok() || out.gemm.family == gemm::GemmFamily::kSm80) {
    out.why = "the GEMM would run on the sm80 kernel: " + (s.ok() ? out.gemm.why : s.message());
    return out;
  }
  out.use = true;
  out.why = status_message("C = ", p.C, " (below a 16-byte chunk): x gathered into ", out.columns, " columns (",
                           out.padded_columns, " with padding) of ", pixels, " pixels and dy transposed (",
                           out.workspace_bytes >> 20, " MiB), then the GEMM ", p.K, " x ", out.padded_columns, " x ",
                           out.padded_k, " (", out.gemm.why, ")");
  return out;
}

}  // namespace tilefuse::conv
