// Element types: rounding of every narrowing conversion (ties included), FP8 saturation, NaN and inf.
#include <gtest/gtest.h>

#include <cmath>

#include <tilefuse/core/data_type.h>
#include <tilefuse/core/numeric_types.h>

namespace tilefuse {
namespace {

float f(auto x) { return to_float(x); }

TEST(NumericTypes, HalfRoundsToNearestEven) {
  EXPECT_EQ(f(convert<half_t>(1.0f + std::ldexp(1.0f, -11))), 1.0f);  // tie, down to even
  EXPECT_EQ(f(convert<half_t>(1.0f + 3 * std::ldexp(1.0f, -11))), 1.0f + std::ldexp(1.0f, -9));  // tie, up to even
  EXPECT_EQ(f(convert<half_t>(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20))), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_TRUE(std::isinf(f(convert<half_t>(70000.0f))));  // fp16 overflows to inf, as IEEE says
  EXPECT_EQ(f(convert<half_t>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))), 1.0f + std::ldexp(1.0f, -10))
      << "from double: no double rounding through float";
}

TEST(NumericTypes, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(f(convert<bfloat16_t>(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(f(convert<bfloat16_t>(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(f(convert<bfloat16_t>(-2.0f - std::ldexp(1.0f, -6))), -2.0f - std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(f(convert<bfloat16_t>(NAN))));
}

TEST(NumericTypes, Fp8RoundsAndSaturates) {
  EXPECT_EQ(f(convert<float_e4m3_t>(1.0625f)), 1.0f);  // tie, to even
  EXPECT_EQ(f(convert<float_e4m3_t>(1.1875f)), 1.25f);  // tie, to even
  EXPECT_EQ(f(convert<float_e4m3_t>(500.0f)), 448.0f);
  EXPECT_EQ(f(convert<float_e4m3_t>(-1.0e9f)), -448.0f);
  EXPECT_EQ(f(convert<float_e4m3_t>(INFINITY)), 448.0f);  // satfinite: inf saturates too
  EXPECT_TRUE(std::isnan(f(convert<float_e4m3_t>(NAN))));
  EXPECT_EQ(f(convert<float_e5m2_t>(1.0e6f)), 57344.0f);
  EXPECT_EQ(f(convert<float_e5m2_t>(1.125f)), 1.0f);  // tie, to even (ulp 0.25)
  EXPECT_EQ(f(convert<float_e5m2_t>(1.375f)), 1.5f);
  EXPECT_EQ(NumericLimits<float_e4m3_t>::max(), 448.0f);
  EXPECT_EQ(NumericLimits<float_e5m2_t>::max(), 57344.0f);
}

TEST(NumericTypes, Tf32RoundsHalfwayAwayFromZero) {
  float const one_ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f + one_ulp);
  EXPECT_EQ(round_to_tf32(-(1.0f + std::ldexp(1.0f, -11))), -(1.0f + one_ulp));
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23)), 1.0f);
  EXPECT_EQ(round_to_tf32(3.0f), 3.0f);
  EXPECT_TRUE(std::isinf(round_to_tf32(INFINITY)));
  EXPECT_TRUE(std::isnan(round_to_tf32(NAN)));
  EXPECT_EQ(f(convert<tfloat32_t>(1.0f + std::ldexp(1.0f, -11))), 1.0f + one_ulp);
  static_assert(round_to_tf32(2.0f) == 2.0f, "usable in constant expressions");
}

TEST(NumericTypes, IntegersUpToTheMantissaRoundTripExactly) {
  for (int i = -2048; i <= 2048; ++i) EXPECT_EQ(f(convert<half_t>(static_cast<float>(i))), i);
  for (int i = -256; i <= 256; ++i) EXPECT_EQ(f(convert<bfloat16_t>(static_cast<float>(i))), i);
  for (int i = -16; i <= 16; ++i) EXPECT_EQ(f(convert<float_e4m3_t>(static_cast<float>(i))), i);
  EXPECT_EQ(to_double(convert<bfloat16_t>(3.0)), 3.0);
}

TEST(NumericTypes, DataTypeNamesAndSizes) {
  EXPECT_STREQ(name_of(data_type_of<bfloat16_t>), "bfloat16");
  EXPECT_STREQ(name_of(data_type_of<float_e4m3_t>), "float8_e4m3");
  EXPECT_EQ(size_in_bytes(data_type_of<half_t>), 2);
  EXPECT_EQ(size_in_bytes(data_type_of<float_e5m2_t>), 1);
  EXPECT_EQ(size_in_bytes(DataType::kF64), 8);
  EXPECT_EQ(data_type_of<long double>, DataType::kUnknown);
}

}  // namespace
}  // namespace tilefuse
