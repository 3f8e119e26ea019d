// FastDivmod against the hardware's division: every divisor up to 2000 and the extents a convolution
// has (image areas, widths), on dividends near multiples of the divisor, near 2^31 and at random.
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include <tilefuse/core/fast_divmod.h>

namespace tilefuse {
namespace {

void expect_exact(int d, int n) {
  FastDivmod const f = FastDivmod::of(d);
  int r = -1;
  int const q = f.divmod(n, &r);
  ASSERT_EQ(q, n / d) << "n = " << n << ", d = " << d;
  ASSERT_EQ(r, n % d) << "n = " << n << ", d = " << d;
}

TEST(FastDivmod, SmallDivisorsAroundTheirMultiples) {
  for (int d = 1; d <= 2000; ++d) {
    for (int k : {0, 1, 2, 7, 1000, 65535}) {
      for (int delta : {-1, 0, 1}) {
        long long const n = static_cast<long long>(k) * d + delta;
        if (n >= 0 && n < (1ll << 31)) expect_exact(d, static_cast<int>(n));
      }
    }
  }
}

TEST(FastDivmod, ConvolutionExtentsAtRandomAndNearTheTop) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dividend(0, 0x7fffffff);
  for (int d : {3, 7, 14, 28, 49, 56, 196, 784, 3136, 4096, 12544, 65536, 200704, 1 << 20, 0x7fffffff}) {
    for (int i = 0; i < 20000; ++i) expect_exact(d, dividend(rng));
    for (int n = 0x7fffffff; n > 0x7fffffff - 1000; --n) expect_exact(d, n);
  }
}

TEST(FastDivmod, ConstantsAreWorkedOutAtCompileTime) {
  constexpr FastDivmod f = FastDivmod::of(49);
  static_assert(f.div(48) == 0 && f.div(49) == 1 && f.div(3136) == 64, "49 divides exactly");
  EXPECT_EQ(FastDivmod::of(0).div(5), 5) << "a divisor below 1 is taken as 1";
}

}  // namespace
}  // namespace tilefuse
