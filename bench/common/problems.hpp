// What one benchmark row measures: a GEMM problem (shape, element type, operand layouts, epilogue,
// split-k), its FLOP and minimal byte counts, and the named shape lists (presets).
//
// Layout names follow the BLAS letters for the two operands of D = A * B, A first:
//   t = row-major ("transposed" from BLAS's column-major view), n = column-major.
//   tn: A row-major (M x K, K contiguous), B column-major (K x N, K contiguous): both K-major.
//   nn: A column-major, B column-major.   nt: A column-major, B row-major.   tt: both row-major.
// D (and the residual C) are always row-major M x N.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilefuse::bench {

// kTF32: A, B and D are fp32 (float) in memory; the GEMM runs on tf32 tensor cores (inputs rounded to
// tf32's 10-bit mantissa, fp32 accumulation), as cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32.
enum class DType { kBF16, kFP16, kTF32 };
enum class EpilogueKind { kNone, kBiasGeluResidual };

struct OperandLayout {
  bool a_row_major = true;
  bool b_row_major = false;
  friend bool operator==(OperandLayout, OperandLayout) = default;
};

struct GemmProblem {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  DType dtype = DType::kBF16;
  OperandLayout layout{};
  EpilogueKind epilogue = EpilogueKind::kNone;
  int split_k = 1;
};

// Leading dimensions and batch strides (elements) of the packed operands of a problem.
struct PackedStrides {
  std::int64_t lda, ldb, ldd;
  std::int64_t batch_stride_a, batch_stride_b, batch_stride_d;
};
PackedStrides packed_strides(GemmProblem const& p);

// 2 * M * N * K * batch: the multiply-adds only (the epilogue's few FLOPs per output are not counted).
double gemm_flops(GemmProblem const& p);
// The bytes a perfect kernel must move: read A and B once, write D once; with the fused epilogue also
// read the bias vector (shared by the batch) and the residual C once.
double minimal_bytes(GemmProblem const& p);
std::int64_t element_bytes(DType t);  // in memory: 2 for bf16 and fp16, 4 for tf32 (stored as float)

char const* name_of(DType t);
char const* name_of(EpilogueKind e);
std::string name_of(OperandLayout l);
// "4096x4096x4096" or "4096x4096x4096x8" (batch last).
std::string shape_name(GemmProblem const& p);

std::optional<DType> parse_dtype(std::string_view s);
std::optional<EpilogueKind> parse_epilogue(std::string_view s);
std::optional<OperandLayout> parse_layout(std::string_view s);

// The four layouts, in the order "tn", "nn", "nt", "tt".
std::vector<OperandLayout> all_layouts();

// Named shape lists. Each problem's dtype and layout are filled in by the caller's choices, except
// where a preset pins them (see presets.cpp).
struct PresetOptions {
  std::vector<DType> dtypes;           // applied to the preset's plain (epilogue none) shapes
  std::vector<OperandLayout> layouts;  // likewise
  int split_k = 1;
};
std::optional<std::vector<GemmProblem>> preset_problems(std::string_view name, PresetOptions const& options);
std::vector<std::string> preset_names();
// True for a preset whose every problem has a fixed dtype and layout (issue3-tf32): --dtype and --layout
// would be ignored, so the command line refuses them.
bool preset_pins_dtype_and_layout(std::string_view name);

}  // namespace tilefuse::bench
