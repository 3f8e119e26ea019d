// Element-wise operations of the epilogue tree, on float. Each is a struct with its arity and a
// static apply(); compute.h turns them into tree nodes. Comparisons return 1.0f or 0.0f.
#pragma once

#include <cuda/std/limits>

#include <tilefuse/core/math.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::epilogue::op {

// floor(a / b) of the integer parts of a and b (Python's //: rounds toward minus infinity). NaN when b
// is 0, either is NaN, or either is beyond 2^31 (no trap, no undefined conversion).
TILEFUSE_HOST_DEVICE inline float floor_div(float a, float b) {
  constexpr float kLimit = 2147483648.0f;
  constexpr float kNaN = cuda::std::numeric_limits<float>::quiet_NaN();
  if (!(a > -kLimit && a < kLimit && b > -kLimit && b < kLimit)) return kNaN;
  auto const x = static_cast<long long>(a);
  auto const y = static_cast<long long>(b);
  if (y == 0) return kNaN;
  long long q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return static_cast<float>(q);
}

#define TILEFUSE_UNARY_OP(Name, expr)                                       \
  struct Name {                                                             \
    static constexpr int kArity = 1;                                        \
    TILEFUSE_HOST_DEVICE static float apply(float x) { return (expr); }     \
  };
#define TILEFUSE_BINARY_OP(Name, expr)                                          \
  struct Name {                                                                 \
    static constexpr int kArity = 2;                                            \
    TILEFUSE_HOST_DEVICE static float apply(float a, float b) { return (expr); } \
  };

TILEFUSE_BINARY_OP(Add, a + b)
TILEFUSE_BINARY_OP(Sub, a - b)
TILEFUSE_BINARY_OP(Mul, a * b)
TILEFUSE_BINARY_OP(Div, a / b)
TILEFUSE_BINARY_OP(Min, math::min(a, b))
TILEFUSE_BINARY_OP(Max, math::max(a, b))
TILEFUSE_BINARY_OP(Less, a < b ? 1.0f : 0.0f)
TILEFUSE_BINARY_OP(LessEqual, a <= b ? 1.0f : 0.0f)
TILEFUSE_BINARY_OP(Greater, a > b ? 1.0f : 0.0f)
TILEFUSE_BINARY_OP(GreaterEqual, a >= b ? 1.0f : 0.0f)
TILEFUSE_BINARY_OP(Equal, a == b ? 1.0f : 0.0f)
TILEFUSE_BINARY_OP(NotEqual, a != b ? 1.0f : 0.0f)
// Integer quotient and remainder of whole numbers held in floats (coordinates, extents: exact below
// 2^24), computed in integers so the result is exact whatever division the compiler emits (a fast-math
// float division may round q - 1/b up to q).
TILEFUSE_BINARY_OP(FloorDiv, floor_div(a, b))
TILEFUSE_BINARY_OP(Mod, a - b * floor_div(a, b))
// leaky_relu(x, slope): x for x >= 0, slope * x below. NaN stays NaN.
TILEFUSE_BINARY_OP(LeakyRelu, a < 0.0f ? a * b : a)

TILEFUSE_UNARY_OP(Negate, -x)
TILEFUSE_UNARY_OP(Abs, math::abs(x))
TILEFUSE_UNARY_OP(Exp, math::exp(x))
TILEFUSE_UNARY_OP(Tanh, math::tanh(x))
// relu keeps NaN (like torch.relu) instead of turning it into 0.
TILEFUSE_UNARY_OP(Relu, x < 0.0f ? 0.0f : x)
TILEFUSE_UNARY_OP(Sigmoid, math::fast_reciprocal(1.0f + math::fast_exp(-x)))
TILEFUSE_UNARY_OP(Silu, x * math::fast_reciprocal(1.0f + math::fast_exp(-x)))
// gelu(x) = x * Phi(x), with Phi computed through erf (exact) or the tanh approximation.
TILEFUSE_UNARY_OP(GeluErf, 0.5f * x * (1.0f + math::erf(x * 0.70710678118654752f)))
// The tanh form uses 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)): one exp instead of a tanh; with
// -2u log2(e) = x (k0 + k1 x^2), one multiply, one FMA and one multiply before the ex2.
// NOTES: 0.5 x (1 + tanh.approx(u)), one MUFU op instead of two, made the fused bias+GELU+residual
// GEMM 1.5-3% faster but cancels in the negative tail: about 2.4e-4 |x| absolute error where
// |gelu(x)| is ~4e-3 (x = -3: ~18% of the value), far outside bf16's rounding. Not adopted
// (docs/notes/gemm_sm90.md, GELU through tanh.approx).
TILEFUSE_UNARY_OP(GeluTanh,
                  x * math::fast_reciprocal(
                          1.0f + math::fast_exp2(x * (-2.3022082f + -0.10294324f * (x * x)))))

#undef TILEFUSE_UNARY_OP
#undef TILEFUSE_BINARY_OP

// clamp(x, lo, hi) = min(max(x, lo), hi).
struct Clamp {
  static constexpr int kArity = 3;
  TILEFUSE_HOST_DEVICE static float apply(float x, float lo, float hi) {
    return math::min(math::max(x, lo), hi);
  }
};

// where(cond, a, b): a where cond is non-zero, b elsewhere.
struct Where {
  static constexpr int kArity = 3;
  TILEFUSE_HOST_DEVICE static float apply(float cond, float a, float b) { return cond != 0.0f ? a : b; }
};

}  // namespace tilefuse::epilogue::op
