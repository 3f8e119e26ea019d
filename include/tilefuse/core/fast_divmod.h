// Division by a runtime divisor that is fixed for a whole kernel, as a multiply-high and a shift
// (Granlund and Montgomery's round-up method): the divisor's constants are worked out once on the host,
// and each division on the device is two instructions instead of the ~20 of a general 32-bit
// division. For dividends below 2^31 (pixel and channel indices), exact for every divisor >= 1.
// For one thread's per-k-tile coordinate arithmetic on a critical path: the Hopper dgrad and wgrad
// producers use it under TILEFUSE_SM90_CONV_FAST_DIVMOD (conv/kernel/sm90_implicit_gemm.h; why:
// docs/notes/conv_sm90.md, v126).
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse {

struct FastDivmod {
  cuda::std::uint32_t divisor = 1;
  cuda::std::uint32_t multiplier = 0;  // floor(2^32 * (2^shift - divisor) / divisor) + 1
  cuda::std::uint32_t shift = 0;       // ceil(log2(divisor))

  // The constants for `d` (d >= 1; anything smaller is taken as 1).
  TILEFUSE_HOST_DEVICE static constexpr FastDivmod of(int d) {
    FastDivmod f;
    f.divisor = d < 1 ? 1u : static_cast<cuda::std::uint32_t>(d);
    while ((cuda::std::uint64_t{1} << f.shift) < f.divisor) ++f.shift;
    cuda::std::uint64_t const two32 = cuda::std::uint64_t{1} << 32;
    f.multiplier = static_cast<cuda::std::uint32_t>(two32 * ((cuda::std::uint64_t{1} << f.shift) - f.divisor) / f.divisor + 1);
    return f;
  }

  // n / divisor for 0 <= n < 2^31.
  TILEFUSE_HOST_DEVICE constexpr int div(int n) const {
    auto const u = static_cast<cuda::std::uint32_t>(n);
#if TILEFUSE_IS_DEVICE_CODE
    cuda::std::uint32_t const high = __umulhi(u, multiplier);
#else
    auto const high = static_cast<cuda::std::uint32_t>((static_cast<cuda::std::uint64_t>(u) * multiplier) >> 32);
#endif
    return static_cast<int>((high + u) >> shift);
  }

  // The quotient, and n - quotient * divisor in `remainder`.
  TILEFUSE_HOST_DEVICE constexpr int divmod(int n, int* remainder) const {
    int const q = div(n);
    *remainder = n - q * static_cast<int>(divisor);
    return q;
  }
};

}  // namespace tilefuse
