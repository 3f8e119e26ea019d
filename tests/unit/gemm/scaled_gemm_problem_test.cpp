// Tests of check_scaled_gemm (gemm/scaled_gemm_problem.hpp): the scale shapes of each mode, accepted
// problems of every mode, and every refusal with the words its message must contain.
#include <tilefuse/gemm/scaled_gemm_problem.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace tilefuse::gemm {
namespace {

// A packed row-major M x K A, column-major K x N B (the transpose of a contiguous N x K weight).
TensorDesc row_major(DataType t, index_t rows, index_t cols) { return {t, rows, cols, cols, 1}; }
TensorDesc column_major(DataType t, index_t rows, index_t cols) { return {t, rows, cols, 1, rows}; }

// A valid problem of the given mode, with scales laid out as torch lays them out.
ScaledGemmProblem valid_problem(ScalingMode mode, index_t m, index_t n, index_t k) {
  ScaledGemmProblem p;
  p.a = row_major(DataType::kE4M3, m, k);
  p.b = column_major(DataType::kE4M3, k, n);
  p.scaling = mode;
  index_t const kb = (k + 127) / 128, nb = (n + 127) / 128;
  switch (mode) {
    case ScalingMode::kPerTensor:
      p.scale_a = {DataType::kF32, 1, 1, 1, 1};
      p.scale_b = {DataType::kF32, 1, 1, 1, 1};
      break;
    case ScalingMode::kRowWise:
      p.scale_a = {DataType::kF32, m, 1, 1, 1};  // torch.ones(M, 1)
      p.scale_b = {DataType::kF32, 1, n, n, 1};  // torch.ones(1, N)
      break;
    case ScalingMode::kBlockWise:
      p.scale_a = {DataType::kF32, m, kb, 1, m};    // torch.ones(Kb, M).t()
      p.scale_b = {DataType::kF32, kb, nb, 1, kb};  // torch.ones(Nb, Kb).t()
      break;
  }
  p.out_dtype = DataType::kBF16;
  return p;
}

void expect_ok(ScaledGemmProblem const& p, char const* what) {
  Status const s = check_scaled_gemm(p);
  EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
}

TEST(ScaledGemmProblem, ScaleShapesPerMode) {
  // per-tensor: one value covering the whole operand
  ScaleShape s = scale_a_shape(ScalingMode::kPerTensor, 300, 272);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.cols, 1);
  EXPECT_EQ(s.block_rows, 300);
  EXPECT_EQ(s.block_cols, 272);
  // row-wise: one per row of A, one per column of B
  s = scale_a_shape(ScalingMode::kRowWise, 300, 272);
  EXPECT_EQ(s.rows, 300);
  EXPECT_EQ(s.cols, 1);
  EXPECT_EQ(s.block_cols, 272);
  s = scale_b_shape(ScalingMode::kRowWise, 272, 144);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.cols, 144);
  EXPECT_EQ(s.block_rows, 272);
  // block-wise: 1 x 128 blocks of A and 128 x 128 blocks of B, a partial block counted whole
  s = scale_a_shape(ScalingMode::kBlockWise, 300, 272);
  EXPECT_EQ(s.rows, 300);
  EXPECT_EQ(s.cols, 3);  // 128 + 128 + 16
  EXPECT_EQ(s.block_rows, 1);
  EXPECT_EQ(s.block_cols, 128);
  s = scale_b_shape(ScalingMode::kBlockWise, 272, 144);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.cols, 2);  // 128 + 16
  EXPECT_EQ(s.block_rows, 128);
  EXPECT_EQ(s.block_cols, 128);
  s = scale_b_shape(ScalingMode::kBlockWise, 128, 128);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.cols, 1);
  // torch's layouts
  EXPECT_EQ(scale_a_strides(ScalingMode::kBlockWise, 300).row_stride, 1);
  EXPECT_EQ(scale_a_strides(ScalingMode::kBlockWise, 300).col_stride, 300);
  EXPECT_EQ(scale_b_strides(ScalingMode::kBlockWise, 272).row_stride, 1);
  EXPECT_EQ(scale_b_strides(ScalingMode::kBlockWise, 272).col_stride, 3);
  EXPECT_STREQ(name_of(ScalingMode::kBlockWise), "block-wise");
}

TEST(ScaledGemmProblem, AcceptsEveryMode) {
  for (ScalingMode mode : {ScalingMode::kPerTensor, ScalingMode::kRowWise, ScalingMode::kBlockWise}) {
    SCOPED_TRACE(name_of(mode));
    expect_ok(valid_problem(mode, 128, 128, 128), "128^3");
    expect_ok(valid_problem(mode, 1, 16, 16), "the smallest problem");
    expect_ok(valid_problem(mode, 3, 144, 144), "K and N not multiples of 128");
    expect_ok(valid_problem(mode, 1000, 4096, 7168), "a large problem");
    for (DataType out : {DataType::kBF16, DataType::kF16, DataType::kF32}) {
      ScaledGemmProblem p = valid_problem(mode, 64, 48, 32);
      p.out_dtype = out;
      expect_ok(p, name_of(out));
    }
    ScaledGemmProblem mixed = valid_problem(mode, 64, 48, 32);
    mixed.a.dtype = DataType::kE5M2;
    expect_ok(mixed, "e5m2 x e4m3");
    mixed = valid_problem(mode, 64, 48, 32);
    mixed.b.dtype = DataType::kE5M2;
    expect_ok(mixed, "e4m3 x e5m2");
    ScaledGemmProblem fast = valid_problem(mode, 64, 48, 32);
    fast.use_fast_accum = true;
    expect_ok(fast, "use_fast_accum");
  }
}

TEST(ScaledGemmProblem, AcceptsTorchLayoutVariants) {
  // Padded leading dimensions (multiples of 16).
  ScaledGemmProblem p = valid_problem(ScalingMode::kPerTensor, 64, 32, 48);
  p.a.row_stride = 64;
  p.b.col_stride = 80;
  expect_ok(p, "padded lda and ldb");
  // A single row: its row stride is never used.
  p = valid_problem(ScalingMode::kRowWise, 1, 32, 48);
  p.a.row_stride = 3;
  p.scale_a.row_stride = 7;
  expect_ok(p, "M = 1");
  // Block-wise with one K block: the stride along it is free (torch's check_size_stride).
  p = valid_problem(ScalingMode::kBlockWise, 64, 256, 128);
  p.scale_a.col_stride = 1;
  p.scale_b.row_stride = 5;
  expect_ok(p, "K = 128: one scale block along K");
  // Row-wise scale_b: its row stride is unused; scale_a's column stride too.
  p = valid_problem(ScalingMode::kRowWise, 64, 32, 48);
  p.scale_b.row_stride = 0;
  p.scale_a.col_stride = 0;
  expect_ok(p, "broadcast strides on size-1 dimensions");
  // Per-tensor scales as 0-d tensors.
  p = valid_problem(ScalingMode::kPerTensor, 64, 32, 48);
  p.scale_a = {DataType::kF32, 1, 1, 0, 0};
  expect_ok(p, "0-d scale");
}

TEST(ScaledGemmProblem, AcceptsTorchsOutputAndBiasCombinations) {
  for (DataType out : {DataType::kE4M3, DataType::kE5M2}) {
    ScaledGemmProblem p = valid_problem(ScalingMode::kPerTensor, 64, 32, 48);
    p.out_dtype = out;
    expect_ok(p, "fp8 output");
    p.scale_result = TensorDesc{DataType::kF32, 1, 1, 0, 0};
    expect_ok(p, "fp8 output with scale_result");
    for (DataType bias : {DataType::kBF16, DataType::kF16}) {  // an fp8 output takes either bias type
      p.bias = TensorDesc{bias, 1, 32, 32, 1};
      expect_ok(p, "fp8 output with a bias");
    }
  }
  for (ScalingMode mode : {ScalingMode::kPerTensor, ScalingMode::kRowWise, ScalingMode::kBlockWise}) {
    ScaledGemmProblem p = valid_problem(mode, 64, 32, 48);
    p.out_dtype = DataType::kBF16;
    p.bias = TensorDesc{DataType::kBF16, 1, 32, 32, 1};
    expect_ok(p, "bf16 output, bf16 bias");
    p.out_dtype = DataType::kF16;
    p.bias = TensorDesc{DataType::kF16, 32, 1, 1, 1};  // a column vector is contiguous too
    expect_ok(p, "fp16 output, fp16 bias");
  }
}

struct Refusal {
  std::string needle;  // what the message must say
  ScalingMode mode;
  StatusCode code;
  std::function<void(ScaledGemmProblem&)> spoil;
};

TEST(ScaledGemmProblem, NamesEveryRefusal) {
  using SM = ScalingMode;
  constexpr StatusCode kInvalid = StatusCode::kInvalidArgument;
  std::vector<Refusal> const cases = {
      // operands
      {"A is bfloat16 but a scaled GEMM multiplies float8_e4m3 or float8_e5m2", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a.dtype = DataType::kBF16; }},
      {"B is float16", SM::kPerTensor, kInvalid, [](ScaledGemmProblem& p) { p.b.dtype = DataType::kF16; }},
      {"both float8_e5m2", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a.dtype = p.b.dtype = DataType::kE5M2; }},
      {"B must have K = 64 rows", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.b = column_major(DataType::kE4M3, 80, 96); }},
      {"(M, N, K) = (0, 96, 64) has an extent below 1", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a.rows = 0; }},
      {"K = 40 is not a multiple of 16", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) {
         p.a = row_major(DataType::kE4M3, 32, 40);
         p.b = column_major(DataType::kE4M3, 40, 96);
       }},
      {"N = 100 is not a multiple of 16", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.b = column_major(DataType::kE4M3, 64, 100); }},
      {"must be row-major (strides (lda, 1)", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a = column_major(DataType::kE4M3, 32, 64); }},
      {"A (32 x 64) has strides (48, 1) but must be row-major", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a.row_stride = 48; }},
      {"must be column-major (strides (1, ldb)", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.b = row_major(DataType::kE4M3, 64, 96); }},
      {"pass B as w.t() for a contiguous N x K weight", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.b.col_stride = 32; }},
      {"A's row stride (lda) = 72 is not a multiple of 16", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.a.row_stride = 72; }},
      {"B's column stride (ldb) = 65 is not a multiple of 16", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.b.col_stride = 65; }},
      // scales
      {"scaling = 7 is not a ScalingMode", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.scaling = static_cast<ScalingMode>(7); }},
      {"scale_a is bfloat16 but scales are float32", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_a.dtype = DataType::kBF16; }},
      {"scale_b is float16 but scales are float32", SM::kBlockWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_b.dtype = DataType::kF16; }},
      {"per-tensor scaling takes one scale_a value but scale_a is 32 x 1", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_a = {DataType::kF32, 32, 1, 1, 1}; }},
      {"per-tensor scaling takes one scale_b value", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_b = {DataType::kF32, 1, 96, 96, 1}; }},
      {"row-wise scaling needs scale_a of 32 x 1 (one per row of A)", SM::kRowWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_a = {DataType::kF32, 1, 1, 1, 1}; }},
      {"row-wise scaling needs scale_b of 1 x 96 (one per column of B)", SM::kRowWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_b = {DataType::kF32, 96, 1, 1, 1}; }},
      {"scale_a (32 x 1) has strides (2, 1) but row-wise scaling reads it with strides (1, any)", SM::kRowWise,
       kInvalid, [](ScaledGemmProblem& p) { p.scale_a.row_stride = 2; }},
      {"scale_b (1 x 96) has strides (96, 2)", SM::kRowWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_b.col_stride = 2; }},
      {"block-wise scaling needs scale_a of 32 x 2 (one scale per 1 x 128 block of A", SM::kBlockWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_a = {DataType::kF32, 32, 1, 1, 32}; }},
      {"block-wise scaling needs scale_b of 2 x 2 (one scale per 128 x 128 block of B", SM::kBlockWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_b = {DataType::kF32, 2, 1, 1, 2}; }},
      {"scale_a (32 x 2) has strides (2, 1) but block-wise scaling reads it with strides (1, 32)", SM::kBlockWise,
       kInvalid, [](ScaledGemmProblem& p) { p.scale_a.row_stride = 2, p.scale_a.col_stride = 1; }},
      {"scale_a.t().contiguous().t()", SM::kBlockWise, kInvalid,
       [](ScaledGemmProblem& p) { p.scale_a.col_stride = 40; }},
      {"scale_b (2 x 2) has strides (2, 1) but block-wise scaling reads it with strides (1, 2)", SM::kBlockWise,
       kInvalid, [](ScaledGemmProblem& p) { p.scale_b.row_stride = 2, p.scale_b.col_stride = 1; }},
      // output
      {"out_dtype = tfloat32 is not an output type", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.out_dtype = DataType::kTF32; }},
      {"out_dtype = int32 is not an output type", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.out_dtype = DataType::kI32; }},
      {"out_dtype = float8_e4m3 with row-wise scaling: the scaled GEMM writes fp8 outputs with per-tensor scaling only",
       SM::kRowWise, StatusCode::kNotSupported, [](ScaledGemmProblem& p) { p.out_dtype = DataType::kE4M3; }},
      {"out_dtype = float8_e5m2 with block-wise scaling", SM::kBlockWise, StatusCode::kNotSupported,
       [](ScaledGemmProblem& p) { p.out_dtype = DataType::kE5M2; }},
      {"scale_result is given but out_dtype = bfloat16; scale_result scales fp8 outputs only", SM::kPerTensor,
       kInvalid, [](ScaledGemmProblem& p) { p.scale_result = TensorDesc{DataType::kF32, 1, 1, 0, 0}; }},
      {"scale_result must be one float32 value but is 1 x 1 bfloat16", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) {
         p.out_dtype = DataType::kE4M3;
         p.scale_result = TensorDesc{DataType::kBF16, 1, 1, 0, 0};
       }},
      {"scale_result must be one float32 value but is 2 x 1 float32", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) {
         p.out_dtype = DataType::kE4M3;
         p.scale_result = TensorDesc{DataType::kF32, 2, 1, 1, 1};
       }},
      // bias
      {"a bias is given but out_dtype = float32", SM::kRowWise, kInvalid,
       [](ScaledGemmProblem& p) {
         p.out_dtype = DataType::kF32;
         p.bias = TensorDesc{DataType::kBF16, 1, 96, 96, 1};
       }},
      {"bias is float32 but must be bfloat16 or float16 (bfloat16 for a bfloat16 output)", SM::kPerTensor,
       kInvalid, [](ScaledGemmProblem& p) { p.bias = TensorDesc{DataType::kF32, 1, 96, 96, 1}; }},
      {"bias is float16 but a bfloat16 output needs a bfloat16 bias", SM::kBlockWise, kInvalid,
       [](ScaledGemmProblem& p) { p.bias = TensorDesc{DataType::kF16, 1, 96, 96, 1}; }},
      {"bias is bfloat16 but a float16 output needs a float16 bias", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) {
         p.out_dtype = DataType::kF16;
         p.bias = TensorDesc{DataType::kBF16, 1, 96, 96, 1};
       }},
      {"bias has 64 elements but must have N = 96", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.bias = TensorDesc{DataType::kBF16, 1, 64, 64, 1}; }},
      {"bias (1 x 96) has strides (192, 2) but is read as N contiguous values", SM::kPerTensor, kInvalid,
       [](ScaledGemmProblem& p) { p.bias = TensorDesc{DataType::kBF16, 1, 96, 192, 2}; }},
  };
  for (Refusal const& c : cases) {
    // Block-wise starts from 2 x 2 blocks of B (K = 144, N = 160: both partial), so that every stride counts.
    ScaledGemmProblem p = c.mode == ScalingMode::kBlockWise ? valid_problem(c.mode, 32, 160, 144)
                                                            : valid_problem(c.mode, 32, 96, 64);
    ASSERT_TRUE(check_scaled_gemm(p).ok()) << c.needle << ": the starting problem must be valid";
    c.spoil(p);
    Status const s = check_scaled_gemm(p);
    EXPECT_FALSE(s.ok()) << "accepted: " << c.needle;
    EXPECT_EQ(s.code(), c.code) << s.to_string();
    EXPECT_NE(s.message().find(c.needle), std::string::npos)
        << "message lacks \"" << c.needle << "\":\n  " << s.message();
    EXPECT_EQ(s.message().rfind("scaled_gemm: ", 0), 0u) << s.message();
  }
}

}  // namespace
}  // namespace tilefuse::gemm
