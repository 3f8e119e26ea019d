// Tensor map validation: the cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col rules from cuda.h,
// each failure naming the field, its index and value, and what to change.
#include <tilefuse/runtime/tensor_map.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace tilefuse {
namespace {

constexpr int kMaxRank = 5;
constexpr int kMinIm2colRank = 3;
constexpr int kMinInterleavedRank = 3;
constexpr std::uint64_t kMaxGlobalDim = std::uint64_t{1} << 32;
constexpr std::uint64_t kGlobalStrideLimit = std::uint64_t{1} << 40;  // strides must be below this
constexpr std::uint64_t kStrideAlignment = 16;
constexpr std::uint64_t kInterleave32Alignment = 32;
constexpr std::uintptr_t kAddressAlignment = 16;
constexpr std::uintptr_t kTensorMapAlignment = 64;
constexpr std::uint32_t kMaxBoxDim = 256;
constexpr std::uint64_t kMaxIm2colBoxBytes = 233472;
constexpr std::uint32_t kBoxInnerBytesMultiple = 16;
constexpr std::uint32_t kMaxElementStride = 8;
constexpr std::uint32_t kMaxChannelsPerPixel = 256;
constexpr std::uint32_t kMaxPixelsPerColumn = 1024;

bool is_packed(CUtensorMapDataType t) {
  return t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B || t == CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B ||
         t == CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B;
}

bool is_floating_point(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return true;
    default: return false;
  }
}

// Short element names for advice such as "(8 bfloat16 elements)".
char const* element_name(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return "1-byte";
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: return "uint16";
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: return "uint32";
    case CU_TENSOR_MAP_DATA_TYPE_INT32: return "int32";
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: return "uint64";
    case CU_TENSOR_MAP_DATA_TYPE_INT64: return "int64";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: return "half";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: return "float";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return "double";
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return "bfloat16";
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return "tfloat32";
    default: return "unknown";
  }
}

// Bytes of the span a swizzle mode permutes within; 0 for no swizzle.
std::uint32_t swizzle_span_bytes(CUtensorMapSwizzle s) {
  switch (s) {
    case CU_TENSOR_MAP_SWIZZLE_32B: return 32;
    case CU_TENSOR_MAP_SWIZZLE_64B: return 64;
    case CU_TENSOR_MAP_SWIZZLE_128B:
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B:
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B:
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B: return 128;
    default: return 0;
  }
}

// The enums arrive from callers as plain integers in disguise (e.g. from Python), so range-check them.
template <class Enum>
bool in_enum_range(Enum value, Enum last) {
  return static_cast<int>(value) >= 0 && static_cast<int>(value) <= static_cast<int>(last);
}

// Prints an enumerator as "NAME" or, for a value outside the enum, as its number.
template <class Enum>
std::string enum_text(Enum value) {
  char const* name = name_of(value);
  if (std::string(name) != "unknown") return name;
  return std::to_string(static_cast<int>(value));
}

// The rules tiled and im2col tensor maps share. `what` starts every message ("tensor map" or
// "im2col tensor map"). Args is TensorMapTiledArgs or TensorMapIm2colArgs: same field names.
template <class Args>
Status check_common(Args const& a, char const* what, int min_rank) {
  if (!in_enum_range(a.data_type, CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)) {
    return invalid_argument(what, " data_type = ", static_cast<int>(a.data_type),
                            " is not a CUtensorMapDataType value: pass a CU_TENSOR_MAP_DATA_TYPE_* "
                            "enumerator (tensor_map_data_type() maps a tilefuse DataType)");
  }
  if (is_packed(a.data_type)) {
    return not_supported(what, " data_type = ", name_of(a.data_type),
                         " is a packed sub-byte type, which no tilefuse kernel reads through TMA: "
                         "use CU_TENSOR_MAP_DATA_TYPE_UINT8 or a wider type");
  }
  if (!in_enum_range(a.interleave, CU_TENSOR_MAP_INTERLEAVE_32B)) {
    return invalid_argument(what, " interleave = ", static_cast<int>(a.interleave),
                            " is not a CUtensorMapInterleave value: use "
                            "CU_TENSOR_MAP_INTERLEAVE_NONE for an ordinary layout");
  }
  if (!in_enum_range(a.swizzle, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)) {
    return invalid_argument(what, " swizzle = ", static_cast<int>(a.swizzle),
                            " is not a CUtensorMapSwizzle value: use CU_TENSOR_MAP_SWIZZLE_NONE, "
                            "_32B, _64B or _128B");
  }
  if (a.swizzle == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B || a.swizzle == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B ||
      a.swizzle == CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) {
    return not_supported(what, " swizzle = ", name_of(a.swizzle),
                         ": the 128-byte atom swizzles are refused by the Hopper driver; use "
                         "CU_TENSOR_MAP_SWIZZLE_128B");
  }
  if (!in_enum_range(a.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_256B)) {
    return invalid_argument(what, " l2_promotion = ", static_cast<int>(a.l2_promotion),
                            " is not a CUtensorMapL2promotion value: use "
                            "CU_TENSOR_MAP_L2_PROMOTION_NONE or _L2_64B, _L2_128B, _L2_256B");
  }
  if (!in_enum_range(a.oob_fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)) {
    return invalid_argument(what, " oob_fill = ", static_cast<int>(a.oob_fill),
                            " is not a CUtensorMapFloatOOBfill value: use "
                            "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE to read zeros out of bounds");
  }
  if (a.rank < min_rank || a.rank > kMaxRank) {
    return invalid_argument(
        what, " rank = ", a.rank, " is outside [", min_rank, ", ", kMaxRank, "]: ",
        min_rank == kMinIm2colRank
            ? "im2col needs at least {C, W, N}; add a unit spatial dimension for a 1-D convolution, "
              "and use the non-TMA kernel above 3 spatial dimensions"
            : "TMA addresses at most 5 dimensions; merge dimensions that are contiguous with each "
              "other, or use the non-TMA kernel");
  }
  if (a.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && a.rank < kMinInterleavedRank) {
    return invalid_argument(what, " rank = ", a.rank, " with interleave = ", name_of(a.interleave),
                            ": interleaved layouts (e.g. NC/8HWC8) need rank >= 3; use "
                            "CU_TENSOR_MAP_INTERLEAVE_NONE for a plain matrix");
  }
  if (a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B && a.swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    return invalid_argument(what, " swizzle = ", enum_text(a.swizzle),
                            " with interleave = CU_TENSOR_MAP_INTERLEAVE_32B: a 32-byte interleave "
                            "requires swizzle = CU_TENSOR_MAP_SWIZZLE_32B");
  }
  if (a.oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_floating_point(a.data_type)) {
    return invalid_argument(what, " oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA with "
                            "data_type = ", name_of(a.data_type),
                            ": the NaN fill is only for floating-point types; use "
                            "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (zeros)");
  }

  bool const interleave32 = a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B;
  if (a.global_address == nullptr) {
    return invalid_argument(what, " global_address is null: pass the device address of the "
                            "tensor's first element");
  }
  std::uintptr_t const address_alignment = interleave32 ? kInterleave32Alignment : kAddressAlignment;
  if (reinterpret_cast<std::uintptr_t>(a.global_address) % address_alignment != 0) {
    return misaligned(what, " global_address = ", a.global_address, " is not ", address_alignment,
                      "-byte aligned", interleave32 ? " (required with interleave = 32B)" : "",
                      ": start the tensor on a ", address_alignment,
                      "-byte boundary (cudaMalloc returns 256-byte aligned memory; keep offsets "
                      "into it a multiple of ", address_alignment, " bytes), or use the non-TMA kernel");
  }

  for (int i = 0; i < a.rank; ++i) {
    if (a.global_dim[i] == 0) {
      return invalid_argument(what, " global_dim[", i, "] = 0 is outside [1, 2^32]: a tensor with "
                              "an empty dimension has nothing to copy; skip the operation");
    }
    if (a.global_dim[i] > kMaxGlobalDim) {
      return invalid_argument(what, " global_dim[", i, "] = ", a.global_dim[i],
                              " is outside [1, 2^32]: split the tensor along dimension ", i,
                              " over several tensor maps");
    }
  }

  int const elem_bytes = tensor_map_element_bytes(a.data_type);
  std::uint64_t const stride_multiple = interleave32 ? kInterleave32Alignment : kStrideAlignment;
  for (int i = 0; i + 1 < a.rank; ++i) {
    std::uint64_t const stride = a.global_strides[i];
    // A zero stride (a broadcast dimension) is accepted: the driver encodes it.
    if (stride % stride_multiple != 0) {
      return misaligned(what, " global_strides[", i, "] = ", stride, " bytes is not a multiple of ",
                        stride_multiple, interleave32 ? " (required with interleave = 32B)" : "",
                        ": pad the leading dimension to a multiple of ", stride_multiple,
                        " bytes (", stride_multiple / static_cast<std::uint64_t>(elem_bytes), " ",
                        element_name(a.data_type), " elements) or use the non-TMA kernel");
    }
    if (stride >= kGlobalStrideLimit) {
      return invalid_argument(what, " global_strides[", i, "] = ", stride,
                              " bytes is not below 2^40: split the tensor along dimension ", i + 1,
                              " over several tensor maps");
    }
  }

  for (int i = 0; i < a.rank; ++i) {
    std::uint32_t const s = a.element_strides[i];
    if (s < 1 || s > kMaxElementStride) {
      return invalid_argument(what, " element_strides[", i, "] = ", s, " is outside [1, ",
                              kMaxElementStride, "]: use 1 to copy every element; a traversal "
                              "stride above 8 needs the non-TMA kernel");
    }
  }
  return Status::success();
}

// With no interleave, a swizzle permutes 16-byte chunks within a span of 32, 64 or 128 bytes, so
// one row of the box (its innermost extent) must fit in that span.
Status check_swizzle_span(char const* what, CUtensorMapInterleave interleave,
                          CUtensorMapSwizzle swizzle, CUtensorMapDataType data_type,
                          char const* inner_field, std::uint32_t inner_elements) {
  std::uint32_t const span = swizzle_span_bytes(swizzle);
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || span == 0) return Status::success();
  auto const elem_bytes = static_cast<std::uint64_t>(tensor_map_element_bytes(data_type));
  std::uint64_t const inner_bytes = inner_elements * elem_bytes;
  if (inner_bytes <= span) return Status::success();
  return invalid_argument(what, " ", inner_field, " = ", inner_elements, " ",
                          element_name(data_type), " elements (", inner_bytes,
                          " bytes) exceeds the ", span, "-byte span of swizzle = ", name_of(swizzle),
                          ": use at most ", span / elem_bytes,
                          " elements per box row (split the tile into several boxes)",
                          span < 128 ? ", or a wider swizzle" : "");
}

// TMA moves whole 16-byte chunks: the innermost extent of a box (box_dim[0], or an im2col pixel's
// channels) must be a multiple of 16 bytes.
Status check_inner_bytes(char const* what, char const* field, std::uint32_t elements, CUtensorMapDataType data_type) {
  auto const elem_bytes = static_cast<std::uint64_t>(tensor_map_element_bytes(data_type));
  std::uint64_t const inner_bytes = elements * elem_bytes;
  if (inner_bytes % kBoxInnerBytesMultiple == 0) return Status::success();
  return invalid_argument(what, " ", field, " = ", elements, " ", element_name(data_type), " elements (",
                          inner_bytes, " bytes) is not a multiple of ", kBoxInnerBytesMultiple,
                          " bytes: TMA moves whole 16-byte chunks; use a multiple of ",
                          kBoxInnerBytesMultiple / elem_bytes, " elements");
}

void print_array(std::ostream& out, char const* name, auto const* values, int count) {
  out << ' ' << name << "={";
  for (int i = 0; i < count; ++i) out << (i ? ", " : "") << values[i];
  out << '}';
}

template <class Args>
void print_common_head(std::ostream& out, Args const& a) {
  int const n = std::clamp(a.rank, 0, kMaxRank);
  out << "data_type=" << enum_text(a.data_type) << " rank=" << a.rank
      << " global_address=" << a.global_address;
  print_array(out, "global_dim", a.global_dim, n);
  print_array(out, "global_strides", a.global_strides, std::max(n - 1, 0));
}

template <class Args>
void print_common_tail(std::ostream& out, Args const& a) {
  print_array(out, "element_strides", a.element_strides, std::clamp(a.rank, 0, kMaxRank));
  out << " interleave=" << enum_text(a.interleave) << " swizzle=" << enum_text(a.swizzle)
      << " l2_promotion=" << enum_text(a.l2_promotion) << " oob_fill=" << enum_text(a.oob_fill);
}

}  // namespace

Status validate(TensorMapTiledArgs const& a) {
  constexpr char const* kWhat = "tensor map";
  TILEFUSE_RETURN_IF_ERROR(check_common(a, kWhat, 1));
  int const elem_bytes = tensor_map_element_bytes(a.data_type);
  for (int i = 0; i < a.rank; ++i) {
    if (a.box_dim[i] < 1 || a.box_dim[i] > kMaxBoxDim) {
      return invalid_argument(kWhat, " box_dim[", i, "] = ", a.box_dim[i], " is outside [1, ",
                              kMaxBoxDim, "]: use a smaller tile along dimension ", i,
                              ", or issue several TMA copies per tile");
    }
  }
  // cuda.h states this only without interleave; the driver enforces it with interleave too.
  TILEFUSE_RETURN_IF_ERROR(check_inner_bytes(kWhat, "box_dim[0]", a.box_dim[0], a.data_type));
  return check_swizzle_span(kWhat, a.interleave, a.swizzle, a.data_type, "box_dim[0]", a.box_dim[0]);
}

Status validate(TensorMapIm2colArgs const& a) {
  constexpr char const* kWhat = "im2col tensor map";
  TILEFUSE_RETURN_IF_ERROR(check_common(a, kWhat, kMinIm2colRank));

  // Corner offsets get fewer bits as the number of spatial dimensions grows.
  int const spatial = a.rank - 2;
  int const corner_bits = spatial == 1 ? 16 : spatial == 2 ? 8 : 5;
  int const corner_min = -(1 << (corner_bits - 1));
  int const corner_max = (1 << (corner_bits - 1)) - 1;
  for (int j = 0; j < spatial; ++j) {
    for (int upper = 0; upper < 2; ++upper) {
      int const value = upper ? a.pixel_box_upper_corner[j] : a.pixel_box_lower_corner[j];
      if (value < corner_min || value > corner_max) {
        return invalid_argument(kWhat, " ", upper ? "pixel_box_upper_corner[" : "pixel_box_lower_corner[",
                                j, "] = ", value, " is outside [", corner_min, ", ", corner_max,
                                "] (the range for rank ", a.rank, "): the padding or filter extent "
                                "is too large for TMA im2col; use the non-TMA kernel");
      }
    }
    // The box runs from lower (offset from the first pixel) to dim - 1 + upper (offset from the last).
    auto const dim = static_cast<std::int64_t>(a.global_dim[j + 1]);
    std::int64_t const extent = dim + a.pixel_box_upper_corner[j] - a.pixel_box_lower_corner[j];
    if (extent < 1) {
      return invalid_argument(kWhat, " pixel box is empty along global_dim[", j + 1, "] = ", dim,
                              ": pixel_box_lower_corner[", j, "] = ", a.pixel_box_lower_corner[j],
                              " and pixel_box_upper_corner[", j, "] = ", a.pixel_box_upper_corner[j],
                              " leave ", extent, " pixels; the dilated filter is larger than the "
                              "padded input, so check the padding");
    }
  }
  if (a.channels_per_pixel < 1 || a.channels_per_pixel > kMaxChannelsPerPixel) {
    return invalid_argument(kWhat, " channels_per_pixel = ", a.channels_per_pixel, " is outside [1, ",
                            kMaxChannelsPerPixel, "]: copy at most 256 channels at a time (split "
                            "the channel tile)");
  }
  if (a.pixels_per_column < 1 || a.pixels_per_column > kMaxPixelsPerColumn) {
    return invalid_argument(kWhat, " pixels_per_column = ", a.pixels_per_column, " is outside [1, ",
                            kMaxPixelsPerColumn, "]: use a smaller output-pixel (M) tile");
  }
  TILEFUSE_RETURN_IF_ERROR(check_inner_bytes(kWhat, "channels_per_pixel", a.channels_per_pixel, a.data_type));
  // Measured on an H200's driver: an im2col box of more than 228 KiB is refused, exactly at this size.
  std::uint64_t const box_bytes = std::uint64_t{a.channels_per_pixel} * a.pixels_per_column *
                                  static_cast<std::uint64_t>(tensor_map_element_bytes(a.data_type));
  if (box_bytes > kMaxIm2colBoxBytes) {
    return invalid_argument(kWhat, " channels_per_pixel = ", a.channels_per_pixel, " x pixels_per_column = ",
                            a.pixels_per_column, " loads ", box_bytes, " bytes, more than the ", kMaxIm2colBoxBytes,
                            " bytes (228 KiB) one im2col copy may move: use a smaller pixel or channel tile");
  }
  return check_swizzle_span(kWhat, a.interleave, a.swizzle, a.data_type, "channels_per_pixel",
                            a.channels_per_pixel);
}

Status make_tensor_map_tiled(TensorMapTiledArgs const& args, CUtensorMap* out) {
  if (out == nullptr) {
    return invalid_argument("make_tensor_map_tiled: out is null: pass the CUtensorMap to fill");
  }
  if (reinterpret_cast<std::uintptr_t>(out) % kTensorMapAlignment != 0) {
    return misaligned("make_tensor_map_tiled: out = ", static_cast<void*>(out),
                      " is not 64-byte aligned: use a CUtensorMap object (alignas(128)), not a "
                      "cast byte buffer");
  }
  TILEFUSE_RETURN_IF_ERROR(validate(args));
  return host_adapter().encode_tensor_map_tiled(args, out);
}

Status make_tensor_map_im2col(TensorMapIm2colArgs const& args, CUtensorMap* out) {
  if (out == nullptr) {
    return invalid_argument("make_tensor_map_im2col: out is null: pass the CUtensorMap to fill");
  }
  if (reinterpret_cast<std::uintptr_t>(out) % kTensorMapAlignment != 0) {
    return misaligned("make_tensor_map_im2col: out = ", static_cast<void*>(out),
                      " is not 64-byte aligned: use a CUtensorMap object (alignas(128)), not a "
                      "cast byte buffer");
  }
  TILEFUSE_RETURN_IF_ERROR(validate(args));
  return host_adapter().encode_tensor_map_im2col(args, out);
}

TensorMapTiledArgs tiled_args_2d(CUtensorMapDataType data_type, void* base, std::uint64_t rows,
                                 std::uint64_t cols, std::uint64_t row_stride_bytes,
                                 std::uint32_t box_rows, std::uint32_t box_cols,
                                 CUtensorMapSwizzle swizzle) {
  TensorMapTiledArgs a;
  a.data_type = data_type;
  a.rank = 2;
  a.global_address = base;
  a.global_dim[0] = cols;
  a.global_dim[1] = rows;
  a.global_strides[0] = row_stride_bytes;
  a.box_dim[0] = box_cols;
  a.box_dim[1] = box_rows;
  a.element_strides[0] = 1;
  a.element_strides[1] = 1;
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  a.swizzle = swizzle;
  // Tiles walk along the rows, so the next box's bytes are usually adjacent: fetch wide L2 sectors.
  a.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  // Zeros past the edges let a partial tile feed the MMA without masking.
  a.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return a;
}

int tensor_map_element_bytes(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return 8;
    default: return 0;
  }
}

std::optional<CUtensorMapDataType> tensor_map_data_type(DataType t) {
  switch (t) {
    case DataType::kF16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DataType::kBF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DataType::kE4M3:
    case DataType::kE5M2:
    case DataType::kI8: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DataType::kTF32: return CU_TENSOR_MAP_DATA_TYPE_TFLOAT32;
    case DataType::kF32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DataType::kF64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case DataType::kI32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    default: return std::nullopt;
  }
}

char const* name_of(CUtensorMapDataType value) {
  switch (value) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: return "CU_TENSOR_MAP_DATA_TYPE_UINT8";
    case CU_TENSOR_MAP_DATA_TYPE_UINT16: return "CU_TENSOR_MAP_DATA_TYPE_UINT16";
    case CU_TENSOR_MAP_DATA_TYPE_UINT32: return "CU_TENSOR_MAP_DATA_TYPE_UINT32";
    case CU_TENSOR_MAP_DATA_TYPE_INT32: return "CU_TENSOR_MAP_DATA_TYPE_INT32";
    case CU_TENSOR_MAP_DATA_TYPE_UINT64: return "CU_TENSOR_MAP_DATA_TYPE_UINT64";
    case CU_TENSOR_MAP_DATA_TYPE_INT64: return "CU_TENSOR_MAP_DATA_TYPE_INT64";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT64";
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16: return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ";
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: return "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32";
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ: return "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ";
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B: return "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B";
    case CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B: return "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B";
    case CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B: return "CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B";
  }
  return "unknown";
}

char const* name_of(CUtensorMapInterleave value) {
  switch (value) {
    case CU_TENSOR_MAP_INTERLEAVE_NONE: return "CU_TENSOR_MAP_INTERLEAVE_NONE";
    case CU_TENSOR_MAP_INTERLEAVE_16B: return "CU_TENSOR_MAP_INTERLEAVE_16B";
    case CU_TENSOR_MAP_INTERLEAVE_32B: return "CU_TENSOR_MAP_INTERLEAVE_32B";
  }
  return "unknown";
}

char const* name_of(CUtensorMapSwizzle value) {
  switch (value) {
    case CU_TENSOR_MAP_SWIZZLE_NONE: return "CU_TENSOR_MAP_SWIZZLE_NONE";
    case CU_TENSOR_MAP_SWIZZLE_32B: return "CU_TENSOR_MAP_SWIZZLE_32B";
    case CU_TENSOR_MAP_SWIZZLE_64B: return "CU_TENSOR_MAP_SWIZZLE_64B";
    case CU_TENSOR_MAP_SWIZZLE_128B: return "CU_TENSOR_MAP_SWIZZLE_128B";
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B: return "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B";
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B: return "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B";
    case CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B: return "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B";
  }
  return "unknown";
}

char const* name_of(CUtensorMapL2promotion value) {
  switch (value) {
    case CU_TENSOR_MAP_L2_PROMOTION_NONE: return "CU_TENSOR_MAP_L2_PROMOTION_NONE";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_64B: return "CU_TENSOR_MAP_L2_PROMOTION_L2_64B";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_128B: return "CU_TENSOR_MAP_L2_PROMOTION_L2_128B";
    case CU_TENSOR_MAP_L2_PROMOTION_L2_256B: return "CU_TENSOR_MAP_L2_PROMOTION_L2_256B";
  }
  return "unknown";
}

char const* name_of(CUtensorMapFloatOOBfill value) {
  switch (value) {
    case CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: return "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE";
    case CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA:
      return "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA";
  }
  return "unknown";
}

std::string to_string(TensorMapTiledArgs const& a) {
  std::ostringstream out;
  print_common_head(out, a);
  print_array(out, "box_dim", a.box_dim, std::clamp(a.rank, 0, kMaxRank));
  print_common_tail(out, a);
  return out.str();
}

std::string to_string(TensorMapIm2colArgs const& a) {
  std::ostringstream out;
  print_common_head(out, a);
  int const spatial = std::clamp(a.rank - 2, 0, 3);
  print_array(out, "pixel_box_lower_corner", a.pixel_box_lower_corner, spatial);
  print_array(out, "pixel_box_upper_corner", a.pixel_box_upper_corner, spatial);
  out << " channels_per_pixel=" << a.channels_per_pixel
      << " pixels_per_column=" << a.pixels_per_column;
  print_common_tail(out, a);
  return out.str();
}

}  // namespace tilefuse
