// The FP8 scaled GEMM of torch._scaled_mm, described as torch sees its tensors (dtype, sizes, strides),
// and check_scaled_gemm(): the host-side validation every scaled-GEMM operation runs first. Host-only.
//
//   D = convert<out>(scale_result * (dequant(A) * dequant(B) + bias))     (scale_result: fp8 out only)
//   dequant(A)(m, k) = A(m, k) * scale_a(the scale covering (m, k)), the same for B.
//
// A (M x K) and B (K x N) are float8_e4m3 or float8_e5m2, both K-major: A row-major, B column-major
// (B is the transpose of a contiguous N x K weight). The scale tensors are fp32, one of three modes:
//
//   mode        scale_a                        scale_b                                one scale covers
//   per-tensor  1 value                        1 value                                the whole operand
//   row-wise    M x 1, unit stride along M     1 x N, unit stride along N             a row of A / a column of B
//   block-wise  M x ceil(K/128),               ceil(K/128) x ceil(N/128),             A: 1 x 128 (along K)
//               strides (1, M): M-major        strides (1, ceil(K/128)): K-block-major B: 128 x 128
//
// Block-wise is DeepSeek-V3's recipe (torch's BlockWise1x128 for A, BlockWise128x128 for B). When K or N
// is not a multiple of 128 the last block is partial: it covers the remaining K % 128 (or N % 128)
// elements and still has its own scale. The strides are torch's, as checked by is_blockwise_1x128_scaling
// and is_blockwise_128x128_scaling (aten/src/ATen/native/cuda/ScaledBlas.cpp); a stride is not checked
// along an extent of 1.
//
// The rules of torch._scaled_mm on CUDA (_scaled_mm_out_cuda in the same file) that are checked here:
//   - mat1 and mat2 are float8; not both float8_e5m2 (cuBLASLt has no e5m2 x e5m2 kernel);
//   - K (mat1.size(1)) is a multiple of 16, and so is N (mat2.size(1)); M is free;
//   - on sm_90, mat1 row-major and mat2 column-major ("Only multiplication of row-major and column-major
//     matrices is supported by cuBLASLt");
//   - scales are fp32 with the shapes above; scale_result is one fp32 value;
//   - bias has N elements and is bfloat16 or float16; no bias for a float32 output; a bfloat16 output
//     needs a bfloat16 bias and a float16 output a float16 one (a float8 output takes either);
//   - the output is bfloat16, float16, float32, float8_e4m3 or float8_e5m2.
// Where this is stricter than torch, the message says so:
//   - M, N, K must be at least 1 (torch returns an empty or zero output without a kernel);
//   - scale_result is refused for a non-fp8 output (torch ignores it silently);
//   - fp8 outputs need per-tensor scaling: torch's CUTLASS row-wise kernel (its path before cuBLAS 12.9)
//     writes bfloat16, float16 or float32 only, and block-wise fp8 outputs go to cuBLASLt in torch; whether
//     the kernel adds them is an open question (docs/notes/gemm_fp8.md);
//   - block-wise means A 1x128 with B 128x128 only (torch also takes 128x128 x 1x128 and 1x128 x 1x128);
//   - the leading dimensions of A and B are multiples of 16 elements (16 bytes, what TMA needs), and bias
//     is contiguous (torch passes its data pointer as if it were).
// Pointers, their alignment and device residency are the device operation's to check.
#pragma once

#include <optional>
#include <string>

#include <tilefuse/core/coord.h>
#include <tilefuse/core/data_type.h>
#include <tilefuse/core/status.hpp>

namespace tilefuse::gemm {

enum class ScalingMode { kPerTensor, kRowWise, kBlockWise };

inline char const* name_of(ScalingMode mode) {
  switch (mode) {
    case ScalingMode::kPerTensor: return "per-tensor";
    case ScalingMode::kRowWise: return "row-wise";
    case ScalingMode::kBlockWise: return "block-wise";
  }
  return "unknown";
}

// Block-wise scaling: one scale per 128 elements of K (A and B) and per 128 columns of B.
inline constexpr index_t kScaleBlock = 128;

namespace detail {

inline constexpr index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }

}  // namespace detail

// A 2-D tensor as torch describes it: element type, sizes and strides in elements. A 1-D tensor of n
// elements (bias) is 1 x n with col_stride its stride; a 0-d scalar is 1 x 1.
struct TensorDesc {
  DataType dtype = DataType::kUnknown;
  index_t rows = 1;
  index_t cols = 1;
  index_t row_stride = 0;  // torch's stride(0)
  index_t col_stride = 0;  // torch's stride(1)

  index_t numel() const { return rows * cols; }
};

// The shape a scale tensor must have, and the operand block each of its values covers
// (block_rows x block_cols operand elements; blocks at the high edges may be partial).
struct ScaleShape {
  index_t rows = 1;
  index_t cols = 1;
  index_t block_rows = 1;
  index_t block_cols = 1;
};

// scale_a's shape for an M x K operand A.
inline ScaleShape scale_a_shape(ScalingMode mode, index_t m, index_t k) {
  switch (mode) {
    case ScalingMode::kPerTensor: return {1, 1, m, k};
    case ScalingMode::kRowWise: return {m, 1, 1, k};
    case ScalingMode::kBlockWise: return {m, detail::ceil_div(k, kScaleBlock), 1, kScaleBlock};
  }
  return {};
}

// scale_b's shape for a K x N operand B.
inline ScaleShape scale_b_shape(ScalingMode mode, index_t k, index_t n) {
  switch (mode) {
    case ScalingMode::kPerTensor: return {1, 1, k, n};
    case ScalingMode::kRowWise: return {1, n, k, 1};
    case ScalingMode::kBlockWise:
      return {detail::ceil_div(k, kScaleBlock), detail::ceil_div(n, kScaleBlock), kScaleBlock, kScaleBlock};
  }
  return {};
}

// The strides a scale tensor must have (torch's layouts; see the table above); 0 means unchecked. A
// stride is also unchecked along an extent of 1, and per-tensor scales have none.
struct ScaleStrides {
  index_t row_stride = 0;
  index_t col_stride = 0;
};

inline ScaleStrides scale_a_strides(ScalingMode mode, index_t m) {
  switch (mode) {
    case ScalingMode::kPerTensor: return {};
    case ScalingMode::kRowWise: return {1, 0};  // M x 1, unit stride along M (the column stride is unchecked)
    case ScalingMode::kBlockWise: return {1, m};  // M-major
  }
  return {};
}

inline ScaleStrides scale_b_strides(ScalingMode mode, index_t k) {
  switch (mode) {
    case ScalingMode::kPerTensor: return {};
    case ScalingMode::kRowWise: return {0, 1};  // 1 x N, unit stride along N (the row stride is unchecked)
    case ScalingMode::kBlockWise: return {1, detail::ceil_div(k, kScaleBlock)};  // K-block-major
  }
  return {};
}

// Everything check_scaled_gemm needs: torch._scaled_mm's arguments without their data.
struct ScaledGemmProblem {
  TensorDesc a;  // mat1: M x K, float8, row-major
  TensorDesc b;  // mat2: K x N, float8, column-major
  ScalingMode scaling = ScalingMode::kPerTensor;
  TensorDesc scale_a;  // float32, scale_a_shape(scaling, M, K)
  TensorDesc scale_b;  // float32, scale_b_shape(scaling, K, N)
  DataType out_dtype = DataType::kBF16;
  std::optional<TensorDesc> bias;          // N values, bfloat16 or float16
  std::optional<TensorDesc> scale_result;  // one float32 value; fp8 outputs only
  // Accumulate in the tensor core's FP8 accumulator without promotion (torch's use_fast_accum).
  // Always accepted: a backend may ignore it, and block-wise scaling promotes at every scale block anyway.
  bool use_fast_accum = false;

  index_t m() const { return a.rows; }
  index_t k() const { return a.cols; }
  index_t n() const { return b.cols; }
};

namespace detail {

inline bool is_fp8(DataType t) { return t == DataType::kE4M3 || t == DataType::kE5M2; }

inline Status check_operand_dtype(char const* name, DataType t) {
  if (is_fp8(t)) return Status::success();
  return invalid_argument("scaled_gemm: ", name, " is ", name_of(t), " but a scaled GEMM multiplies float8_e4m3 or ",
                          "float8_e5m2 operands; quantize ", name, " to fp8 (with its scale) first, or use "
                          "gemm::Gemm for 16-bit operands");
}

// One scale tensor: fp32, the mode's shape and strides.
inline Status check_scale(char const* name, char const* operand, ScalingMode mode, TensorDesc const& s,
                          ScaleShape const& shape, ScaleStrides const& strides) {
  if (s.dtype != DataType::kF32) {
    return invalid_argument("scaled_gemm: ", name, " is ", name_of(s.dtype), " but scales are float32; pass ",
                            name, ".float()");
  }
  if (mode == ScalingMode::kPerTensor) {
    if (s.numel() != 1) {
      return invalid_argument("scaled_gemm: per-tensor scaling takes one ", name, " value but ", name, " is ",
                              s.rows, " x ", s.cols, "; pass a single float32 (a 0-d or 1-element tensor), or "
                              "choose the scaling mode that matches this shape");
    }
    return Status::success();
  }
  if (s.rows != shape.rows || s.cols != shape.cols) {
    std::string const covers =
        mode == ScalingMode::kRowWise
            ? status_message("one per ", shape.block_rows == 1 ? "row" : "column", " of ", operand)
            : status_message("one scale per ", shape.block_rows, " x ", shape.block_cols, " block of ", operand,
                             ", partial blocks included");
    return invalid_argument("scaled_gemm: ", name_of(mode), " scaling needs ", name, " of ", shape.rows, " x ",
                            shape.cols, " (", covers, ") but ", name, " is ", s.rows, " x ", s.cols);
  }
  bool const row_ok = s.rows == 1 || strides.row_stride == 0 || s.row_stride == strides.row_stride;
  bool const col_ok = s.cols == 1 || strides.col_stride == 0 || s.col_stride == strides.col_stride;
  if (!row_ok || !col_ok) {
    return invalid_argument("scaled_gemm: ", name, " (", s.rows, " x ", s.cols, ") has strides (", s.row_stride,
                            ", ", s.col_stride, ") but ", name_of(mode), " scaling reads it with strides (",
                            strides.row_stride == 0 ? "any" : status_message(strides.row_stride), ", ",
                            strides.col_stride == 0 ? "any" : status_message(strides.col_stride),
                            "), torch's layout for these scales; in torch, ",
                            s.rows > 1 && s.cols > 1 ? status_message(name, ".t().contiguous().t()")
                                                     : status_message(name, ".contiguous()"),
                            " makes it so");
  }
  return Status::success();
}

}  // namespace detail

// Success, or a Status naming the first argument torch._scaled_mm (or this stricter kernel) would
// refuse, its value, and what to pass instead.
inline Status check_scaled_gemm(ScaledGemmProblem const& p) {
  // ---- operands: dtypes, extents, layouts ----
  TILEFUSE_RETURN_IF_ERROR(detail::check_operand_dtype("A", p.a.dtype));
  TILEFUSE_RETURN_IF_ERROR(detail::check_operand_dtype("B", p.b.dtype));
  if (p.a.dtype == DataType::kE5M2 && p.b.dtype == DataType::kE5M2) {
    return invalid_argument("scaled_gemm: A and B are both float8_e5m2, which torch._scaled_mm refuses on CUDA "
                            "(cuBLASLt has no e5m2 x e5m2 kernel); quantize one of them to float8_e4m3 "
                            "(e4m3 x e5m2 and e5m2 x e4m3 are accepted)");
  }
  index_t const m = p.m(), n = p.n(), k = p.k();
  if (p.b.rows != k) {
    return invalid_argument("scaled_gemm: A is ", m, " x ", k, " and B is ", p.b.rows, " x ", n,
                            ", which cannot be multiplied; B must have K = ", k, " rows (A's columns)");
  }
  if (m < 1 || n < 1 || k < 1) {
    return invalid_argument("scaled_gemm: (M, N, K) = (", m, ", ", n, ", ", k, ") has an extent below 1; "
                            "an empty product needs no kernel (torch returns an empty output, or zeros when K = 0), "
                            "so skip the call");
  }
  if (k % 16 != 0) {
    return invalid_argument("scaled_gemm: K = ", k, " is not a multiple of 16, which torch._scaled_mm requires "
                            "(and the FP8 kernels need); pad K with zeros in both A and B up to ",
                            detail::ceil_div(k, 16) * 16);
  }
  if (n % 16 != 0) {
    return invalid_argument("scaled_gemm: N = ", n, " is not a multiple of 16, which torch._scaled_mm requires; "
                            "pad B with zero columns up to ", detail::ceil_div(n, 16) * 16,
                            " and drop them from the output");
  }
  // A row-major: K contiguous. The row stride of a single row is never used.
  if (p.a.col_stride != 1 || (m > 1 && p.a.row_stride < k)) {
    return invalid_argument("scaled_gemm: A (", m, " x ", k, ") has strides (", p.a.row_stride, ", ",
                            p.a.col_stride, ") but must be row-major (strides (lda, 1) with lda >= K = ", k,
                            "): the Hopper FP8 kernel reads only K-major operands, like cuBLASLt on sm_90; "
                            "pass A.contiguous()");
  }
  // B column-major: K contiguous, i.e. the transpose of a row-major N x K matrix.
  if (p.b.row_stride != 1 || p.b.col_stride < k) {
    return invalid_argument("scaled_gemm: B (", k, " x ", n, ") has strides (", p.b.row_stride, ", ",
                            p.b.col_stride, ") but must be column-major (strides (1, ldb) with ldb >= K = ", k,
                            "): the Hopper FP8 kernel reads only K-major operands, like cuBLASLt on sm_90; pass "
                            "B as w.t() for a contiguous N x K weight w, or B.t().contiguous().t()");
  }
  if (m > 1 && p.a.row_stride % 16 != 0) {
    return invalid_argument("scaled_gemm: A's row stride (lda) = ", p.a.row_stride,
                            " is not a multiple of 16 elements (16 bytes), which TMA needs; pad the rows of A "
                            "to ", detail::ceil_div(p.a.row_stride, 16) * 16, " elements or pass A.contiguous()");
  }
  if (p.b.col_stride % 16 != 0) {
    return invalid_argument("scaled_gemm: B's column stride (ldb) = ", p.b.col_stride,
                            " is not a multiple of 16 elements (16 bytes), which TMA needs; pad the columns of B "
                            "to ", detail::ceil_div(p.b.col_stride, 16) * 16,
                            " elements or pass B.t().contiguous().t()");
  }

  // ---- scales ----
  switch (p.scaling) {
    case ScalingMode::kPerTensor:
    case ScalingMode::kRowWise:
    case ScalingMode::kBlockWise: break;
    default:
      return invalid_argument("scaled_gemm: scaling = ", static_cast<int>(p.scaling),
                              " is not a ScalingMode; use kPerTensor, kRowWise or kBlockWise");
  }
  TILEFUSE_RETURN_IF_ERROR(detail::check_scale("scale_a", "A", p.scaling, p.scale_a, scale_a_shape(p.scaling, m, k),
                                               scale_a_strides(p.scaling, m)));
  TILEFUSE_RETURN_IF_ERROR(detail::check_scale("scale_b", "B", p.scaling, p.scale_b, scale_b_shape(p.scaling, k, n),
                                               scale_b_strides(p.scaling, k)));

  // ---- output ----
  DataType const out = p.out_dtype;
  bool const out_fp8 = detail::is_fp8(out);
  if (!(out_fp8 || out == DataType::kBF16 || out == DataType::kF16 || out == DataType::kF32)) {
    return invalid_argument("scaled_gemm: out_dtype = ", name_of(out), " is not an output type of a scaled GEMM; "
                            "use bfloat16, float16, float32, float8_e4m3 or float8_e5m2");
  }
  if (out_fp8 && p.scaling != ScalingMode::kPerTensor) {
    return not_supported("scaled_gemm: out_dtype = ", name_of(out), " with ", name_of(p.scaling),
                         " scaling: the scaled GEMM writes fp8 outputs with per-tensor scaling only (torch's CUTLASS "
                         "row-wise kernel refuses them too); use a bfloat16, float16 or float32 output and "
                         "quantize it afterwards, or per-tensor scales");
  }
  if (p.scale_result) {
    TensorDesc const& s = *p.scale_result;
    if (!out_fp8) {
      return invalid_argument("scaled_gemm: scale_result is given but out_dtype = ", name_of(out),
                              "; scale_result scales fp8 outputs only (torch would silently ignore it), so drop "
                              "it or choose a float8 out_dtype");
    }
    if (s.dtype != DataType::kF32 || s.numel() != 1) {
      return invalid_argument("scaled_gemm: scale_result must be one float32 value but is ", s.rows, " x ", s.cols,
                              " ", name_of(s.dtype), "; pass a single float32 (a 0-d or 1-element tensor)");
    }
  }

  // ---- bias (torch's rules) ----
  if (p.bias) {
    TensorDesc const& bias = *p.bias;
    if (out == DataType::kF32) {
      return invalid_argument("scaled_gemm: a bias is given but out_dtype = float32, which torch._scaled_mm refuses "
                              "(\"Bias is not supported when out_dtype is set to Float32\"); add the bias to the "
                              "float32 result afterwards, or use a bfloat16 output with a bfloat16 bias");
    }
    if (bias.dtype != DataType::kBF16 && bias.dtype != DataType::kF16) {
      return invalid_argument("scaled_gemm: bias is ", name_of(bias.dtype), " but must be bfloat16 or float16 (",
                              out == DataType::kF16 ? "float16" : out == DataType::kBF16 ? "bfloat16" : "either",
                              " for a ", name_of(out), " output); convert it with bias.to(...)");
    }
    if (out == DataType::kBF16 && bias.dtype != DataType::kBF16) {
      return invalid_argument("scaled_gemm: bias is ", name_of(bias.dtype),
                              " but a bfloat16 output needs a bfloat16 bias; pass bias.to(torch.bfloat16)");
    }
    if (out == DataType::kF16 && bias.dtype != DataType::kF16) {
      return invalid_argument("scaled_gemm: bias is ", name_of(bias.dtype),
                              " but a float16 output needs a float16 bias; pass bias.to(torch.float16)");
    }
    if (bias.numel() != n) {
      return invalid_argument("scaled_gemm: bias has ", bias.numel(), " elements but must have N = ", n,
                              " (one per output column)");
    }
    bool const contiguous = bias.rows == 1 ? (bias.cols == 1 || bias.col_stride == 1)
                                           : (bias.cols == 1 && bias.row_stride == 1);
    if (!contiguous) {
      return invalid_argument("scaled_gemm: bias (", bias.rows, " x ", bias.cols, ") has strides (", bias.row_stride,
                              ", ", bias.col_stride, ") but is read as N contiguous values; pass bias.contiguous()");
    }
  }
  return Status::success();
}

}  // namespace tilefuse::gemm
