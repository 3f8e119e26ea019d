// FloorDiv and Mod: Python's // and % on whole numbers held in floats, computed in integers so that
// coordinates near a multiple never round to the wrong quotient; NaN (never a trap) for bad divisors.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <tilefuse/epilogue/ops.h>

namespace tilefuse::epilogue {
namespace {

TEST(EpilogueIntegerOps, MatchPythonFloorDivisionAndModulo) {
  for (int a = -40; a <= 40; ++a) {
    for (int b : {-7, -3, -1, 1, 2, 5, 9}) {
      int q = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      int const r = a - b * q;
      EXPECT_EQ(op::FloorDiv::apply(float(a), float(b)), float(q)) << a << " // " << b;
      EXPECT_EQ(op::Mod::apply(float(a), float(b)), float(r)) << a << " % " << b;
    }
  }
}

TEST(EpilogueIntegerOps, ExactJustBelowMultiplesOfLargeExtents) {
  // The rows a conv epilogue meets: just below a multiple of P*Q or Q must floor down, up to 2^24.
  for (float extent : {3136.0f, 12544.0f, 200704.0f, 4194305.0f}) {
    for (float k : {1.0f, 2.0f, 3.0f}) {
      float const row = k * extent - 1.0f;
      if (row >= 16777216.0f) continue;
      EXPECT_EQ(op::FloorDiv::apply(row, extent), k - 1.0f) << row << " // " << extent;
      EXPECT_EQ(op::Mod::apply(row, extent), extent - 1.0f) << row << " % " << extent;
    }
  }
}

TEST(EpilogueIntegerOps, BadDivisorsGiveNaN) {
  EXPECT_TRUE(std::isnan(op::FloorDiv::apply(5.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(op::Mod::apply(5.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(op::FloorDiv::apply(std::numeric_limits<float>::quiet_NaN(), 3.0f)));
  EXPECT_TRUE(std::isnan(op::Mod::apply(7.0f, std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(op::FloorDiv::apply(1e20f, 3.0f)));
}

}  // namespace
}  // namespace tilefuse::epilogue
