// Named shape lists for `tilefuse-bench gemm --preset NAME`.
//
// issue3: the shapes of shared/workloads/gemm_shapes.json plus odd shapes that exercise partial tiles and
// unaligned leading dimensions, with epilogue none in every requested dtype and layout (default bf16, tn);
// then 8192^3 and 4096^3 with bias + GELU(tanh) + residual in bf16 tn, the one fused instantiation.
//
// issue38-wide: the wider set of issue 38 (bf16 tn, epilogue none): a few rows (m = 1 to 16: decode steps,
// classifier heads), tiny m x n with a very long k, very short k on a large m x n, odd k that leaves rows
// unaligned, and ViT-B/16's linears at batch 8 (1576 tokens: a few waves of tiles, where the backend's chooser
// met them).
//
// issue3-tf32: issue 3's fp32-input row: 8192^3 and 4096^3, tf32 (fp32 in memory), tn, epilogue none,
// against cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32. The dtype and layout are pinned: tn is the one
// tf32 instantiation.
#include <array>

#include "problems.hpp"

namespace tilefuse::bench {
namespace {

struct Shape {
  std::int64_t m, n, k;
};

constexpr std::array kIssue3Plain = {
    Shape{8192, 8192, 8192},  Shape{4096, 4096, 4096},  Shape{2048, 2048, 2048}, Shape{4096, 14336, 4096},
    Shape{8192, 8192, 1024},  Shape{128, 8192, 8192},   Shape{16384, 8192, 1024},
    // odd shapes: partial tiles in every dimension, leading dimensions that are not multiples of 8
    Shape{4095, 4097, 4093},  Shape{1000, 1000, 1000},  Shape{127, 255, 8191},
};
constexpr std::array kIssue3Fused = {Shape{8192, 8192, 8192}, Shape{4096, 4096, 4096}};
constexpr std::array kIssue3Tf32 = {Shape{8192, 8192, 8192}, Shape{4096, 4096, 4096}};
constexpr std::array kIssue38Wide = {
    Shape{1, 4096, 4096},   Shape{1, 8192, 8192},    Shape{4, 14336, 4096},  Shape{8, 4096, 4096},
    Shape{8, 1000, 768},    Shape{16, 4096, 4096},   Shape{197, 768, 3072},  Shape{197, 3072, 768},
    Shape{256, 256, 16384}, Shape{64, 64, 65536},    Shape{8192, 8192, 64},  Shape{4096, 4096, 32},
    Shape{2048, 2047, 2047}, Shape{513, 1025, 4097}, Shape{12, 4096, 4096},  Shape{1576, 3072, 768},
    Shape{1576, 768, 3072}, Shape{1576, 2304, 768},
};

std::vector<GemmProblem> issue3_tf32_problems(int split_k) {
  std::vector<GemmProblem> problems;
  for (Shape s : kIssue3Tf32) {
    problems.push_back(
        GemmProblem{s.m, s.n, s.k, 1, DType::kTF32, OperandLayout{true, false}, EpilogueKind::kNone, split_k});
  }
  return problems;
}

}  // namespace

std::vector<std::string> preset_names() { return {"issue3", "issue3-tf32", "issue38-wide"}; }

bool preset_pins_dtype_and_layout(std::string_view name) { return name == "issue3-tf32" || name == "issue38-wide"; }

std::optional<std::vector<GemmProblem>> preset_problems(std::string_view name, PresetOptions const& options) {
  if (name == "issue3-tf32") return issue3_tf32_problems(options.split_k);
  if (name == "issue38-wide") {
    std::vector<GemmProblem> problems;
    for (Shape s : kIssue38Wide) {
      problems.push_back(
          GemmProblem{s.m, s.n, s.k, 1, DType::kBF16, OperandLayout{true, false}, EpilogueKind::kNone, options.split_k});
    }
    return problems;
  }
  if (name != "issue3") return std::nullopt;
  std::vector<GemmProblem> problems;
  for (DType dtype : options.dtypes) {
    for (OperandLayout layout : options.layouts) {
      for (Shape s : kIssue3Plain) {
        problems.push_back(GemmProblem{s.m, s.n, s.k, 1, dtype, layout, EpilogueKind::kNone, options.split_k});
      }
    }
  }
  for (Shape s : kIssue3Fused) {
    problems.push_back(GemmProblem{s.m, s.n, s.k, 1, DType::kBF16, OperandLayout{true, false},
                                   EpilogueKind::kBiasGeluResidual, options.split_k});
  }
  return problems;
}

}  // namespace tilefuse::bench
