// Element types and conversions between them, usable on host and device (nvcc, NVRTC, plain C++).
//
// The storage types are CUDA's own (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) so that tensors from PyTorch
// or cuBLAS can be used without copies; tfloat32_t is ours, because CUDA has no tf32 storage type.
// All narrowing conversions round to nearest even; FP8 conversions saturate to the largest finite value
// (the convention of FP8 training recipes), tf32 rounds to nearest with ties away from zero like the
// hardware's cvt.rna.tf32.f32.
#pragma once

#include <cuda/std/bit>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <tilefuse/core/platform.h>

namespace tilefuse {

using half_t = __half;
using bfloat16_t = __nv_bfloat16;
using float_e4m3_t = __nv_fp8_e4m3;
using float_e5m2_t = __nv_fp8_e5m2;

// Rounds a float to the 10 explicit mantissa bits tensor cores read in tf32 mode.
TILEFUSE_HOST_DEVICE constexpr float round_to_tf32(float x) {
  auto bits = cuda::std::bit_cast<cuda::std::uint32_t>(x);
  bool const finite = (bits & 0x7f800000u) != 0x7f800000u;
  if (finite) {
    bits += 0x1000u;  // half of the lowest kept bit: ties go away from zero
    bits &= 0xffffe000u;
  }
  return cuda::std::bit_cast<float>(bits);
}

// A float whose value is always representable in tf32 (19 bits: sign, 8 exponent, 10 mantissa).
struct tfloat32_t {
  float storage = 0.0f;

  tfloat32_t() = default;
  TILEFUSE_HOST_DEVICE explicit constexpr tfloat32_t(float x) : storage(round_to_tf32(x)) {}
  TILEFUSE_HOST_DEVICE explicit constexpr operator float() const { return storage; }
};

// ---- conversion to float (and double, for references) ----

TILEFUSE_HOST_DEVICE inline float to_float(float x) { return x; }
TILEFUSE_HOST_DEVICE inline float to_float(double x) { return static_cast<float>(x); }
TILEFUSE_HOST_DEVICE inline float to_float(int x) { return static_cast<float>(x); }
TILEFUSE_HOST_DEVICE inline float to_float(half_t x) { return __half2float(x); }
TILEFUSE_HOST_DEVICE inline float to_float(bfloat16_t x) { return __bfloat162float(x); }
TILEFUSE_HOST_DEVICE inline float to_float(float_e4m3_t x) { return static_cast<float>(x); }
TILEFUSE_HOST_DEVICE inline float to_float(float_e5m2_t x) { return static_cast<float>(x); }
TILEFUSE_HOST_DEVICE inline float to_float(tfloat32_t x) { return x.storage; }

// Every narrow type widens to double exactly through float.
template <class T>
TILEFUSE_HOST_DEVICE inline double to_double(T x) {
  if constexpr (cuda::std::is_same_v<T, double>) {
    return x;
  } else {
    return static_cast<double>(to_float(x));
  }
}

// ---- conversion from float or double, with the rounding documented above ----

template <class To>
struct FromWide;  // specialised below for every element type

template <>
struct FromWide<float> {
  TILEFUSE_HOST_DEVICE static float from(float x) { return x; }
  TILEFUSE_HOST_DEVICE static float from(double x) { return static_cast<float>(x); }
};
template <>
struct FromWide<double> {
  TILEFUSE_HOST_DEVICE static double from(float x) { return x; }
  TILEFUSE_HOST_DEVICE static double from(double x) { return x; }
};
template <>
struct FromWide<half_t> {
  TILEFUSE_HOST_DEVICE static half_t from(float x) { return __float2half_rn(x); }
  TILEFUSE_HOST_DEVICE static half_t from(double x) { return __double2half(x); }
};
template <>
struct FromWide<bfloat16_t> {
  TILEFUSE_HOST_DEVICE static bfloat16_t from(float x) { return __float2bfloat16_rn(x); }
  TILEFUSE_HOST_DEVICE static bfloat16_t from(double x) { return __double2bfloat16(x); }
};
template <>
struct FromWide<float_e4m3_t> {
  TILEFUSE_HOST_DEVICE static float_e4m3_t from(float x) {
    float_e4m3_t r;
    r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    return r;
  }
  TILEFUSE_HOST_DEVICE static float_e4m3_t from(double x) {
    float_e4m3_t r;
    r.__x = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    return r;
  }
};
template <>
struct FromWide<float_e5m2_t> {
  TILEFUSE_HOST_DEVICE static float_e5m2_t from(float x) {
    float_e5m2_t r;
    r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    return r;
  }
  TILEFUSE_HOST_DEVICE static float_e5m2_t from(double x) {
    float_e5m2_t r;
    r.__x = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    return r;
  }
};
template <>
struct FromWide<tfloat32_t> {
  TILEFUSE_HOST_DEVICE static tfloat32_t from(float x) { return tfloat32_t(x); }
  // NOTES: goes through float, so a double that sits within half a float ulp of a tf32 tie can round
  // twice. Only references convert double to tf32, and they compare with error bounds, not bits.
  TILEFUSE_HOST_DEVICE static tfloat32_t from(double x) { return tfloat32_t(static_cast<float>(x)); }
};

// convert<To>(x): the one conversion function of the library.
template <class To, class From>
TILEFUSE_HOST_DEVICE inline To convert(From x) {
  if constexpr (cuda::std::is_same_v<To, From>) {
    return x;
  } else if constexpr (cuda::std::is_same_v<From, double>) {
    return FromWide<To>::from(x);
  } else {
    return FromWide<To>::from(to_float(x));
  }
}

// Largest finite value of each element type (what FP8 saturation clamps to).
template <class T>
struct NumericLimits;
template <>
struct NumericLimits<float> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 3.40282347e+38f; }
};
template <>
struct NumericLimits<half_t> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 65504.0f; }
};
template <>
struct NumericLimits<bfloat16_t> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 3.38953139e+38f; }
};
template <>
struct NumericLimits<float_e4m3_t> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 448.0f; }
};
template <>
struct NumericLimits<float_e5m2_t> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 57344.0f; }
};
template <>
struct NumericLimits<tfloat32_t> {
  TILEFUSE_HOST_DEVICE static constexpr float max() { return 3.40116213e+38f; }
};

}  // namespace tilefuse
