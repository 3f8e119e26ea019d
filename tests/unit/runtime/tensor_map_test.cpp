// Tensor map validation: one passing case per shape family and one failing case per documented rule,
// each checking that the message names the field, its index and its value.
#include <tilefuse/runtime/tensor_map.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace tilefuse {
namespace {

// validate() never dereferences the address, so any suitably aligned value will do.
void* fake_address(std::uintptr_t offset = 0) {
  return reinterpret_cast<void*>(std::uintptr_t{1} << 20 | offset);
}

// A 128 x 256 row-major bf16 matrix read in 64 x 64 boxes with the 128-byte swizzle.
TensorMapTiledArgs bf16_matrix() {
  return tiled_args_2d(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, fake_address(), 128, 256, 512, 64, 64,
                       CU_TENSOR_MAP_SWIZZLE_128B);
}

// A rank-3 NC/8HWC8-style half tensor with a 32-byte interleave (which forces the 32B swizzle).
TensorMapTiledArgs interleaved32_tensor() {
  TensorMapTiledArgs a;
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  a.rank = 3;
  a.global_address = fake_address();
  a.global_dim[0] = 16;
  a.global_dim[1] = 64;
  a.global_dim[2] = 4;
  a.global_strides[0] = 32;
  a.global_strides[1] = 32 * 64;
  a.box_dim[0] = 16;
  a.box_dim[1] = 32;
  a.box_dim[2] = 1;
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  return a;
}

// NHWC half activations, N = 8, H = W = 32, C = 64, read for a 3x3 filter with padding 1.
TensorMapIm2colArgs nhwc_half() {
  TensorMapIm2colArgs a;
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  a.rank = 4;
  a.global_address = fake_address();
  a.global_dim[0] = 64;  // C
  a.global_dim[1] = 32;  // W
  a.global_dim[2] = 32;  // H
  a.global_dim[3] = 8;   // N
  a.global_strides[0] = 64 * 2;
  a.global_strides[1] = 32 * 64 * 2;
  a.global_strides[2] = 32 * 32 * 64 * 2;
  a.pixel_box_lower_corner[0] = -1;
  a.pixel_box_lower_corner[1] = -1;
  a.pixel_box_upper_corner[0] = -1;
  a.pixel_box_upper_corner[1] = -1;
  a.channels_per_pixel = 64;
  a.pixels_per_column = 128;
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  a.l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  return a;
}

// Passes when `status` failed with `code` and its message contains every piece.
::testing::AssertionResult fails_with(Status const& status, StatusCode code,
                                      std::initializer_list<char const*> pieces) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected a failure, got success";
  if (status.code() != code) {
    return ::testing::AssertionFailure() << "expected code " << name_of(code) << ", got "
                                         << status.to_string();
  }
  for (char const* piece : pieces) {
    if (status.message().find(piece) == std::string::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << piece << "\": " << status.message();
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult passes(Status const& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.to_string();
}

// ---- valid arguments ----

TEST(TensorMapTiled, ValidBf16MatrixPasses) { EXPECT_TRUE(passes(validate(bf16_matrix()))); }

TEST(TensorMapTiled, TiledArgs2dFillsRowMajorFields) {
  TensorMapTiledArgs const a = tiled_args_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, fake_address(), 100,
                                             40, 96, 32, 8, CU_TENSOR_MAP_SWIZZLE_NONE);
  EXPECT_EQ(a.data_type, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.global_address, fake_address());
  EXPECT_EQ(a.global_dim[0], 40u);  // columns are the contiguous dimension
  EXPECT_EQ(a.global_dim[1], 100u);
  EXPECT_EQ(a.global_strides[0], 96u);
  EXPECT_EQ(a.box_dim[0], 8u);
  EXPECT_EQ(a.box_dim[1], 32u);
  EXPECT_EQ(a.element_strides[0], 1u);
  EXPECT_EQ(a.element_strides[1], 1u);
  EXPECT_EQ(a.interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(a.swizzle, CU_TENSOR_MAP_SWIZZLE_NONE);
  EXPECT_EQ(a.oob_fill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  EXPECT_TRUE(passes(validate(a)));
}

TEST(TensorMapTiled, EveryRankFrom1To5Passes) {
  for (int rank = 1; rank <= 5; ++rank) {
    TensorMapTiledArgs a;
    a.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    a.rank = rank;
    a.global_address = fake_address();
    for (int i = 0; i < rank; ++i) {
      a.global_dim[i] = 16;
      a.box_dim[i] = 4;
    }
    for (int i = 0; i + 1 < rank; ++i) a.global_strides[i] = 64u << (4 * i);
    EXPECT_TRUE(passes(validate(a))) << "rank " << rank;
  }
}

TEST(TensorMapTiled, EveryByteSizedDataTypePasses) {
  for (int t = CU_TENSOR_MAP_DATA_TYPE_UINT8; t <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ; ++t) {
    auto const type = static_cast<CUtensorMapDataType>(t);
    TensorMapTiledArgs a = bf16_matrix();
    a.data_type = type;
    a.box_dim[0] = 128 / tensor_map_element_bytes(type);  // exactly the 128-byte swizzle span
    EXPECT_TRUE(passes(validate(a))) << name_of(type);
  }
}

TEST(TensorMapTiled, EntriesBeyondRankAreIgnored) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_dim[2] = 0;
  a.global_strides[1] = 7;
  a.box_dim[3] = 999;
  a.element_strides[4] = 0;
  EXPECT_TRUE(passes(validate(a)));
}

TEST(TensorMapTiled, BoundaryValuesPass) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_dim[1] = std::uint64_t{1} << 32;
  a.global_strides[0] = (std::uint64_t{1} << 40) - 16;
  a.box_dim[1] = 256;
  a.element_strides[1] = 8;
  EXPECT_TRUE(passes(validate(a)));
  EXPECT_TRUE(passes(validate(interleaved32_tensor())));
}

// ---- data type and enums ----

TEST(TensorMapTiled, UnknownDataTypeFails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.data_type = static_cast<CUtensorMapDataType>(99);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"data_type = 99"}));
}

TEST(TensorMapTiled, PackedSubByteDataTypeIsNotSupported) {
  TensorMapTiledArgs a = bf16_matrix();
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kNotSupported,
                         {"data_type = CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B"}));
}

TEST(TensorMapTiled, OutOfRangeEnumsFail) {
  TensorMapTiledArgs a = bf16_matrix();
  a.interleave = static_cast<CUtensorMapInterleave>(3);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"interleave = 3"}));
  a = bf16_matrix();
  a.swizzle = static_cast<CUtensorMapSwizzle>(7);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"swizzle = 7"}));
  a = bf16_matrix();
  a.l2_promotion = static_cast<CUtensorMapL2promotion>(4);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"l2_promotion = 4"}));
  a = bf16_matrix();
  a.oob_fill = static_cast<CUtensorMapFloatOOBfill>(-1);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"oob_fill = -1"}));
}

TEST(TensorMapTiled, NanOutOfBoundsFillNeedsAFloatType) {
  TensorMapTiledArgs a = bf16_matrix();
  a.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  EXPECT_TRUE(passes(validate(a)));
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_INT32;
  a.box_dim[0] = 32;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA",
                          "data_type = CU_TENSOR_MAP_DATA_TYPE_INT32"}));
}

// ---- rank ----

TEST(TensorMapTiled, RankOutside1To5Fails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.rank = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"rank = 0", "[1, 5]"}));
  a.rank = 6;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"rank = 6", "[1, 5]"}));
}

TEST(TensorMapTiled, InterleaveNeedsRankAtLeast3) {
  TensorMapTiledArgs a = bf16_matrix();
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"rank = 2", "interleave = CU_TENSOR_MAP_INTERLEAVE_16B"}));
}

// ---- global address ----

TEST(TensorMapTiled, NullGlobalAddressFails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_address = nullptr;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"global_address is null"}));
}

TEST(TensorMapTiled, GlobalAddressNot16ByteAlignedFails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_address = fake_address(8);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kMisaligned,
                         {"global_address = 0x100008", "16-byte aligned"}));
}

TEST(TensorMapTiled, Interleave32NeedsA32ByteAlignedAddress) {
  TensorMapTiledArgs a = interleaved32_tensor();
  a.global_address = fake_address(16);
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kMisaligned,
                         {"global_address = 0x100010", "32-byte aligned"}));
}

// ---- global dims ----

TEST(TensorMapTiled, ZeroGlobalDimFails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_dim[1] = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"global_dim[1] = 0"}));
}

TEST(TensorMapTiled, GlobalDimAbove2To32Fails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_dim[0] = (std::uint64_t{1} << 32) + 1;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"global_dim[0] = 4294967297", "[1, 2^32]"}));
}

// ---- global strides ----

TEST(TensorMapTiled, StrideNotMultipleOf16FailsWithAdvice) {
  TensorMapTiledArgs a;
  a.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  a.rank = 3;
  a.global_address = fake_address();
  a.global_dim[0] = 32;
  a.global_dim[1] = 16;
  a.global_dim[2] = 4;
  a.global_strides[0] = 64;
  a.global_strides[1] = 1000;
  a.box_dim[0] = 32;
  a.box_dim[1] = 8;
  a.box_dim[2] = 1;
  Status const s = validate(a);
  EXPECT_EQ(s.code(), StatusCode::kMisaligned);
  EXPECT_EQ(s.message(),
            "tensor map global_strides[1] = 1000 bytes is not a multiple of 16: pad the leading "
            "dimension to a multiple of 16 bytes (8 half elements) or use the non-TMA kernel");
}

// The driver encodes a zero stride (a broadcast dimension), so validation must not refuse it.
TEST(TensorMapTiled, ZeroStridePasses) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_strides[0] = 0;
  EXPECT_TRUE(passes(validate(a)));
}

TEST(TensorMapTiled, StrideOf2To40Fails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.global_strides[0] = std::uint64_t{1} << 40;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"global_strides[0] = 1099511627776", "2^40"}));
}

TEST(TensorMapTiled, Interleave32NeedsStridesMultipleOf32) {
  TensorMapTiledArgs a = interleaved32_tensor();
  a.global_strides[1] = 32 * 64 + 16;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kMisaligned,
                         {"global_strides[1] = 2064", "multiple of 32"}));
}

// ---- box and element strides ----

TEST(TensorMapTiled, BoxDimOutside1To256Fails) {
  TensorMapTiledArgs a = bf16_matrix();
  a.box_dim[1] = 257;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"box_dim[1] = 257", "[1, 256]"}));
  a.box_dim[1] = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"box_dim[1] = 0"}));
}

TEST(TensorMapTiled, InnerBoxBytesMustBeAMultipleOf16) {
  TensorMapTiledArgs a = bf16_matrix();
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  a.box_dim[0] = 12;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"box_dim[0] = 12", "24 bytes", "multiple of 16"}));
}

// cuda.h only states the rule without interleave, but the driver refuses such boxes with it too.
TEST(TensorMapTiled, InnerBoxBytesRuleAlsoAppliesWithInterleave) {
  TensorMapTiledArgs a = interleaved32_tensor();
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  a.box_dim[0] = 8;
  EXPECT_TRUE(passes(validate(a)));
  a.box_dim[0] = 12;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"box_dim[0] = 12", "24 bytes"}));
}

TEST(TensorMapTiled, ElementStridesOutside1To8Fail) {
  TensorMapTiledArgs a = bf16_matrix();
  a.element_strides[1] = 9;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"element_strides[1] = 9", "[1, 8]"}));
  a.element_strides[1] = 1;
  a.element_strides[0] = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"element_strides[0] = 0"}));
}

// ---- swizzle ----

TEST(TensorMapTiled, InnerBoxMustFitTheSwizzleSpan) {
  struct Case {
    CUtensorMapSwizzle swizzle;
    std::uint32_t span_bytes;
    char const* name;
  };
  for (Case const c : {Case{CU_TENSOR_MAP_SWIZZLE_32B, 32, "CU_TENSOR_MAP_SWIZZLE_32B"},
                       Case{CU_TENSOR_MAP_SWIZZLE_64B, 64, "CU_TENSOR_MAP_SWIZZLE_64B"},
                       Case{CU_TENSOR_MAP_SWIZZLE_128B, 128, "CU_TENSOR_MAP_SWIZZLE_128B"}}) {
    TensorMapTiledArgs a = bf16_matrix();
    a.swizzle = c.swizzle;
    a.box_dim[0] = c.span_bytes / 2;
    EXPECT_TRUE(passes(validate(a))) << c.name;
    a.box_dim[0] = c.span_bytes / 2 + 8;
    std::string const value = "box_dim[0] = " + std::to_string(a.box_dim[0]);
    std::string const bytes = std::to_string(a.box_dim[0] * 2) + " bytes";
    EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                           {value.c_str(), bytes.c_str(), c.name}));
  }
}

TEST(TensorMapTiled, SwizzleSpanRuleDoesNotApplyWithInterleave) {
  TensorMapTiledArgs a = interleaved32_tensor();
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  a.box_dim[0] = 64;  // 128 bytes, more than the 32-byte span
  EXPECT_TRUE(passes(validate(a)));
}

TEST(TensorMapTiled, AtomSwizzlesAreNotSupported) {
  for (auto swizzle : {CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B, CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
                       CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B}) {
    TensorMapTiledArgs a = bf16_matrix();
    a.swizzle = swizzle;
    std::string const expected = std::string("swizzle = ") + name_of(swizzle);
    EXPECT_TRUE(fails_with(validate(a), StatusCode::kNotSupported, {expected.c_str()}));
  }
}

TEST(TensorMapTiled, Interleave32NeedsSwizzle32) {
  TensorMapTiledArgs a = interleaved32_tensor();
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"swizzle = CU_TENSOR_MAP_SWIZZLE_64B", "CU_TENSOR_MAP_INTERLEAVE_32B"}));
}

// ---- im2col ----

TEST(TensorMapIm2col, ValidNhwcHalfPasses) { EXPECT_TRUE(passes(validate(nhwc_half()))); }

TEST(TensorMapIm2col, RankOutside3To5Fails) {
  TensorMapIm2colArgs a = nhwc_half();
  a.rank = 2;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"im2col tensor map rank = 2", "[3, 5]"}));
  a.rank = 6;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"rank = 6"}));
}

TEST(TensorMapIm2col, SharedRulesApply) {
  TensorMapIm2colArgs a = nhwc_half();
  a.global_strides[0] = 72;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kMisaligned,
                         {"im2col tensor map global_strides[0] = 72"}));
  a = nhwc_half();
  a.element_strides[2] = 9;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"element_strides[2] = 9"}));
}

TEST(TensorMapIm2col, CornerRangesDependOnRank) {
  TensorMapIm2colArgs a = nhwc_half();  // rank 4: [-128, 127]
  a.pixel_box_lower_corner[1] = -128;
  a.pixel_box_upper_corner[1] = 127;
  EXPECT_TRUE(passes(validate(a)));
  a.pixel_box_lower_corner[1] = -129;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"pixel_box_lower_corner[1] = -129", "[-128, 127]"}));
  a.pixel_box_lower_corner[1] = -1;
  a.pixel_box_upper_corner[1] = 128;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"pixel_box_upper_corner[1] = 128"}));

  TensorMapIm2colArgs a3 = nhwc_half();  // rank 3: one offset in [-32768, 32767]
  a3.rank = 3;
  a3.global_dim[2] = 8;
  a3.pixel_box_lower_corner[0] = -32768;
  EXPECT_TRUE(passes(validate(a3)));
  a3.pixel_box_lower_corner[0] = -32769;
  EXPECT_TRUE(fails_with(validate(a3), StatusCode::kInvalidArgument,
                         {"pixel_box_lower_corner[0] = -32769", "[-32768, 32767]"}));

  TensorMapIm2colArgs a5 = nhwc_half();  // rank 5: three offsets in [-16, 15]
  a5.rank = 5;
  a5.global_dim[3] = 4;
  a5.global_dim[4] = 2;
  a5.global_strides[3] = a5.global_strides[2] * 4;
  a5.pixel_box_upper_corner[2] = 15;
  EXPECT_TRUE(passes(validate(a5)));
  a5.pixel_box_upper_corner[2] = 16;
  EXPECT_TRUE(fails_with(validate(a5), StatusCode::kInvalidArgument,
                         {"pixel_box_upper_corner[2] = 16", "[-16, 15]"}));
}

TEST(TensorMapIm2col, EmptyPixelBoxFails) {
  TensorMapIm2colArgs a = nhwc_half();
  a.global_dim[1] = 3;
  a.pixel_box_lower_corner[0] = 0;
  a.pixel_box_upper_corner[0] = -3;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"global_dim[1] = 3", "pixel_box_lower_corner[0] = 0",
                          "pixel_box_upper_corner[0] = -3"}));
  a.pixel_box_upper_corner[0] = -2;  // one pixel left
  EXPECT_TRUE(passes(validate(a)));
}

TEST(TensorMapIm2col, ChannelsPerPixelOutside1To256Fails) {
  TensorMapIm2colArgs a = nhwc_half();
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  a.channels_per_pixel = 256;
  EXPECT_TRUE(passes(validate(a)));
  a.channels_per_pixel = 257;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"channels_per_pixel = 257", "[1, 256]"}));
  a.channels_per_pixel = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"channels_per_pixel = 0"}));
}

TEST(TensorMapIm2col, PixelsPerColumnOutside1To1024Fails) {
  TensorMapIm2colArgs a = nhwc_half();
  a.pixels_per_column = 1024;
  EXPECT_TRUE(passes(validate(a)));
  a.pixels_per_column = 1025;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"pixels_per_column = 1025", "[1, 1024]"}));
  a.pixels_per_column = 0;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument, {"pixels_per_column = 0"}));
}

TEST(TensorMapIm2col, ChannelBytesMustBeAMultipleOf16) {
  TensorMapIm2colArgs a = nhwc_half();
  a.channels_per_pixel = 8;
  EXPECT_TRUE(passes(validate(a)));
  a.channels_per_pixel = 12;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"channels_per_pixel = 12", "24 bytes", "multiple of 16"}));
}

TEST(TensorMapIm2col, BoxMayLoadAtMost228KiB) {
  TensorMapIm2colArgs a = nhwc_half();
  a.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  a.channels_per_pixel = 128;
  a.pixels_per_column = 912;  // 233472 bytes
  EXPECT_TRUE(passes(validate(a)));
  a.pixels_per_column = 913;
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"channels_per_pixel = 128", "pixels_per_column = 913", "233728 bytes"}));
}

TEST(TensorMapIm2col, ChannelsMustFitTheSwizzleSpan) {
  TensorMapIm2colArgs a = nhwc_half();
  a.channels_per_pixel = 128;  // 256 bytes of half
  EXPECT_TRUE(fails_with(validate(a), StatusCode::kInvalidArgument,
                         {"channels_per_pixel = 128", "256 bytes", "CU_TENSOR_MAP_SWIZZLE_128B"}));
}

// ---- helpers ----

TEST(TensorMapHelpers, ElementBytes) {
  EXPECT_EQ(tensor_map_element_bytes(CU_TENSOR_MAP_DATA_TYPE_UINT8), 1);
  EXPECT_EQ(tensor_map_element_bytes(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16), 2);
  EXPECT_EQ(tensor_map_element_bytes(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ), 4);
  EXPECT_EQ(tensor_map_element_bytes(CU_TENSOR_MAP_DATA_TYPE_FLOAT64), 8);
  EXPECT_EQ(tensor_map_element_bytes(CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B), 0);
}

TEST(TensorMapHelpers, DataTypeMappingKeepsElementSize) {
  for (DataType t : {DataType::kF16, DataType::kBF16, DataType::kE4M3, DataType::kE5M2,
                     DataType::kTF32, DataType::kF32, DataType::kF64, DataType::kI8,
                     DataType::kI32}) {
    auto const mapped = tensor_map_data_type(t);
    ASSERT_TRUE(mapped.has_value()) << name_of(t);
    EXPECT_EQ(tensor_map_element_bytes(*mapped), size_in_bytes(t)) << name_of(t);
  }
  EXPECT_EQ(tensor_map_data_type(DataType::kBF16), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_FALSE(tensor_map_data_type(DataType::kUnknown).has_value());
}

TEST(TensorMapHelpers, ToStringListsTheUsedFields) {
  std::string const s = to_string(bf16_matrix());
  EXPECT_NE(s.find("data_type=CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"), std::string::npos) << s;
  EXPECT_NE(s.find("global_dim={256, 128}"), std::string::npos) << s;
  EXPECT_NE(s.find("global_strides={512}"), std::string::npos) << s;
  EXPECT_NE(s.find("box_dim={64, 64}"), std::string::npos) << s;
  EXPECT_NE(s.find("swizzle=CU_TENSOR_MAP_SWIZZLE_128B"), std::string::npos) << s;
  std::string const im2col = to_string(nhwc_half());
  EXPECT_NE(im2col.find("pixel_box_lower_corner={-1, -1}"), std::string::npos) << im2col;
  EXPECT_NE(im2col.find("channels_per_pixel=64"), std::string::npos) << im2col;
}

}  // namespace
}  // namespace tilefuse
