// Float math that compiles the same under nvcc, NVRTC and a plain host compiler. Device code gets
// CUDA's math functions (NVRTC declares them itself); host code gets <cmath>.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#endif

#include <tilefuse/core/platform.h>

namespace tilefuse::math {

TILEFUSE_HOST_DEVICE inline float exp(float x) { return ::expf(x); }
TILEFUSE_HOST_DEVICE inline float tanh(float x) { return ::tanhf(x); }
TILEFUSE_HOST_DEVICE inline float erf(float x) { return ::erff(x); }
TILEFUSE_HOST_DEVICE inline float abs(float x) { return ::fabsf(x); }
TILEFUSE_HOST_DEVICE inline bool isnan(float x) { return x != x; }

// exp and 1/x for the activations: on the device the hardware exp (ex2.approx) and reciprocal
// (rcp.approx), about 2 ulp each and two instructions instead of expf's and a division's dozens; on the
// host expf and 1/x. Results differ from the host's by a few float ulps, far below the bf16 or fp16
// rounding that follows. 1/inf is 0, so the activations saturate correctly.
// NOTES: __frcp_rn (correctly rounded) made the fused GELU epilogue 2.5x more expensive on an H200.
// The device forms flush denormal inputs and results to zero (.ftz): without it ptxas wraps each MUFU
// op in a range test and two rescaling multiplies (docs/notes/gemm_sm90.md, activation math). A denormal
// exp is below anything the activations add it to, and a reciprocal of 1 + e (e >= 0) is at most 1.
TILEFUSE_HOST_DEVICE inline float fast_exp2(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return ::exp2f(x);
#endif
}
TILEFUSE_HOST_DEVICE inline float fast_exp(float x) {
#if defined(__CUDA_ARCH__)
  return fast_exp2(x * 1.4426950408889634f);
#else
  return ::expf(x);
#endif
}
TILEFUSE_HOST_DEVICE inline float fast_reciprocal(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return 1.0f / x;
#endif
}
// NOTES: min/max propagate NaN (like PyTorch's maximum/minimum), unlike fminf/fmaxf which drop it:
// an amax that hides a NaN would give an FP8 recipe a silently wrong scale.
TILEFUSE_HOST_DEVICE inline float max(float a, float b) { return (a > b || isnan(a)) ? a : b; }
TILEFUSE_HOST_DEVICE inline float min(float a, float b) { return (a < b || isnan(a)) ? a : b; }

}  // namespace tilefuse::math
