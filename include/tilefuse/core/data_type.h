// Run-time names for element types: what the runtime and Python use to check a pointer's type.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/core/platform.h>

namespace tilefuse {

enum class DataType : cuda::std::uint8_t {
  kUnknown,
  kF16,
  kBF16,
  kE4M3,
  kE5M2,
  kTF32,
  kF32,
  kF64,
  kI8,
  kI32,
};

TILEFUSE_HOST_DEVICE constexpr char const* name_of(DataType t) {
  switch (t) {
    case DataType::kF16: return "float16";
    case DataType::kBF16: return "bfloat16";
    case DataType::kE4M3: return "float8_e4m3";
    case DataType::kE5M2: return "float8_e5m2";
    case DataType::kTF32: return "tfloat32";
    case DataType::kF32: return "float32";
    case DataType::kF64: return "float64";
    case DataType::kI8: return "int8";
    case DataType::kI32: return "int32";
    default: return "unknown";
  }
}

TILEFUSE_HOST_DEVICE constexpr int size_in_bytes(DataType t) {
  switch (t) {
    case DataType::kE4M3:
    case DataType::kE5M2:
    case DataType::kI8: return 1;
    case DataType::kF16:
    case DataType::kBF16: return 2;
    case DataType::kTF32:
    case DataType::kF32:
    case DataType::kI32: return 4;
    case DataType::kF64: return 8;
    default: return 0;
  }
}

// data_type_of<T>: the DataType of a C++ element type (kUnknown when it has none).
template <class T>
inline constexpr DataType data_type_of = DataType::kUnknown;
template <> inline constexpr DataType data_type_of<half_t> = DataType::kF16;
template <> inline constexpr DataType data_type_of<bfloat16_t> = DataType::kBF16;
template <> inline constexpr DataType data_type_of<float_e4m3_t> = DataType::kE4M3;
template <> inline constexpr DataType data_type_of<float_e5m2_t> = DataType::kE5M2;
template <> inline constexpr DataType data_type_of<tfloat32_t> = DataType::kTF32;
template <> inline constexpr DataType data_type_of<float> = DataType::kF32;
template <> inline constexpr DataType data_type_of<double> = DataType::kF64;
template <> inline constexpr DataType data_type_of<cuda::std::int8_t> = DataType::kI8;
template <> inline constexpr DataType data_type_of<cuda::std::int32_t> = DataType::kI32;

}  // namespace tilefuse
