// Problem descriptions: strides, FLOP and byte counts, names and their parsing.
#include "problems.hpp"

#include <sstream>

namespace tilefuse::bench {

PackedStrides packed_strides(GemmProblem const& p) {
  PackedStrides s{};
  s.lda = p.layout.a_row_major ? p.k : p.m;
  s.ldb = p.layout.b_row_major ? p.n : p.k;
  s.ldd = p.n;
  s.batch_stride_a = p.m * p.k;
  s.batch_stride_b = p.k * p.n;
  s.batch_stride_d = p.m * p.n;
  return s;
}

std::int64_t element_bytes(DType t) { return t == DType::kTF32 ? 4 : 2; }

double gemm_flops(GemmProblem const& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
         static_cast<double>(p.batch);
}

double minimal_bytes(GemmProblem const& p) {
  double const e = static_cast<double>(element_bytes(p.dtype));
  double const b = static_cast<double>(p.batch);
  double const m = static_cast<double>(p.m), n = static_cast<double>(p.n), k = static_cast<double>(p.k);
  double bytes = e * b * (m * k + k * n + m * n);
  if (p.epilogue == EpilogueKind::kBiasGeluResidual) bytes += e * (n + b * m * n);
  return bytes;
}

char const* name_of(DType t) {
  switch (t) {
    case DType::kBF16: return "bf16";
    case DType::kFP16: return "fp16";
    case DType::kTF32: return "tf32";
  }
  return "unknown";
}

char const* name_of(EpilogueKind e) { return e == EpilogueKind::kNone ? "none" : "bias_gelu_residual"; }

std::string name_of(OperandLayout l) {
  return std::string(1, l.a_row_major ? 't' : 'n') + std::string(1, l.b_row_major ? 't' : 'n');
}

std::string shape_name(GemmProblem const& p) {
  std::ostringstream out;
  out << p.m << 'x' << p.n << 'x' << p.k;
  if (p.batch != 1) out << 'x' << p.batch;
  return out.str();
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "bf16" || s == "bfloat16") return DType::kBF16;
  if (s == "fp16" || s == "f16" || s == "half" || s == "float16") return DType::kFP16;
  if (s == "tf32") return DType::kTF32;
  return std::nullopt;
}

std::optional<EpilogueKind> parse_epilogue(std::string_view s) {
  if (s == "none") return EpilogueKind::kNone;
  if (s == "bias_gelu_residual") return EpilogueKind::kBiasGeluResidual;
  return std::nullopt;
}

std::optional<OperandLayout> parse_layout(std::string_view s) {
  if (s.size() != 2) return std::nullopt;
  auto letter = [](char c) -> std::optional<bool> {
    if (c == 't' || c == 'T') return true;
    if (c == 'n' || c == 'N') return false;
    return std::nullopt;
  };
  auto const a = letter(s[0]);
  auto const b = letter(s[1]);
  if (!a || !b) return std::nullopt;
  return OperandLayout{*a, *b};
}

std::vector<OperandLayout> all_layouts() {
  return {OperandLayout{true, false}, OperandLayout{false, false}, OperandLayout{false, true},
          OperandLayout{true, true}};
}

}  // namespace tilefuse::bench
