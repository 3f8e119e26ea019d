// TMA tensor maps: host-side checks of the cuTensorMapEncode* requirements, so a bad shape or stride
// fails with a sentence naming the field instead of the driver's bare CUDA_ERROR_INVALID_VALUE.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <tilefuse/core/data_type.h>
#include <tilefuse/core/status.hpp>
#include <tilefuse/runtime/host_adapter.hpp>

namespace tilefuse {

// The rules documented for cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col in cuda.h. Returns the
// first broken rule. Where the driver is stricter than its text (seen with driver 580 on an H200),
// so is this: the innermost box extent must be a multiple of 16 bytes with any interleave and for
// im2col's channels_per_pixel too, an im2col box may hold at most 228 KiB (an sm_90 SM's shared
// memory), and the 128B_ATOM_* swizzles are kNotSupported (sm_90 refuses them). The packed sub-byte types (CU_TENSOR_MAP_DATA_TYPE_16U4_*, 16U6_*) are kNotSupported: no
// tilefuse kernel reads them. A null global_address is refused although the driver encodes it.
Status validate(TensorMapTiledArgs const& args);
Status validate(TensorMapIm2colArgs const& args);

// validate(args), then host_adapter().encode_tensor_map_*(args, out): every adapter gets checked
// arguments. `out` must be 64-byte aligned (a CUtensorMap object is).
Status make_tensor_map_tiled(TensorMapTiledArgs const& args, CUtensorMap* out);
Status make_tensor_map_im2col(TensorMapIm2colArgs const& args, CUtensorMap* out);

// A row-major matrix (cols contiguous, rows row_stride_bytes apart) copied in boxes of
// box_rows x box_cols: rank 2, global_dim = {cols, rows}, box_dim = {box_cols, box_rows}, unit
// element strides, no interleave, L2 promotion 256B, out-of-bounds elements read as zero.
TensorMapTiledArgs tiled_args_2d(CUtensorMapDataType data_type, void* base, std::uint64_t rows,
                                 std::uint64_t cols, std::uint64_t row_stride_bytes,
                                 std::uint32_t box_rows, std::uint32_t box_cols,
                                 CUtensorMapSwizzle swizzle);

// Bytes per element; 0 for the packed sub-byte types and for values that are not a data type.
int tensor_map_element_bytes(CUtensorMapDataType data_type);

// The tensor map type that carries a tilefuse element type (fp8 and int8 travel as UINT8: TMA only
// moves bytes); nullopt for DataType::kUnknown.
std::optional<CUtensorMapDataType> tensor_map_data_type(DataType data_type);

// Enumerator names as spelled in cuda.h ("CU_TENSOR_MAP_SWIZZLE_128B"), or "unknown".
char const* name_of(CUtensorMapDataType value);
char const* name_of(CUtensorMapInterleave value);
char const* name_of(CUtensorMapSwizzle value);
char const* name_of(CUtensorMapL2promotion value);
char const* name_of(CUtensorMapFloatOOBfill value);

// Every field used, on one line, for messages: "data_type=CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 rank=2 ...".
std::string to_string(TensorMapTiledArgs const& args);
std::string to_string(TensorMapIm2colArgs const& args);

}  // namespace tilefuse
