// NodeName: a short string literal usable as a template argument, which is how epilogue leaves and
// sinks get their names: Scalar<"alpha">, RowBroadcast<"bias", half_t>.
//
// NOTES: the characters live in four 64-bit words, not a char array. nvcc's host stubs spell every
// template argument of a kernel back out as C++, and a class argument with an array member comes out
// in a form the host compiler rejects; four integers come out as NodeName{w0, w1, w2, w3}, which the
// second constructor accepts. Hence also the 32-character limit.
#pragma once

#include <cuda/std/cstdint>

#include <tilefuse/core/platform.h>

namespace tilefuse::epilogue {

struct NodeName {
  static constexpr int kMaxLength = 32;
  cuda::std::uint64_t w0 = 0, w1 = 0, w2 = 0, w3 = 0;

  template <unsigned N>
  TILEFUSE_HOST_DEVICE constexpr NodeName(char const (&text)[N]) {
    static_assert(N - 1 <= kMaxLength, "epilogue argument names are at most 32 characters");
    for (unsigned i = 0; i + 1 < N; ++i) word(i / 8) |= cuda::std::uint64_t(static_cast<unsigned char>(text[i])) << (8 * (i % 8));
  }
  TILEFUSE_HOST_DEVICE constexpr NodeName(cuda::std::uint64_t a, cuda::std::uint64_t b, cuda::std::uint64_t c,
                                          cuda::std::uint64_t d)
      : w0(a), w1(b), w2(c), w3(d) {}

  TILEFUSE_HOST_DEVICE constexpr char at(int i) const {
    cuda::std::uint64_t const w = i < 8 ? w0 : i < 16 ? w1 : i < 24 ? w2 : w3;
    return static_cast<char>((w >> (8 * (i % 8))) & 0xff);
  }
  TILEFUSE_HOST_DEVICE constexpr int size() const {
    int n = 0;
    while (n < kMaxLength && at(n) != '\0') ++n;
    return n;
  }

  // The characters with a terminating zero, for printing.
  struct Chars {
    char text[kMaxLength + 1] = {};
  };
  TILEFUSE_HOST_DEVICE constexpr Chars chars() const {
    Chars c;
    for (int i = 0; i < size(); ++i) c.text[i] = at(i);
    return c;
  }

 private:
  TILEFUSE_HOST_DEVICE constexpr cuda::std::uint64_t& word(unsigned i) { return i == 0 ? w0 : i == 1 ? w1 : i == 2 ? w2 : w3; }
};

}  // namespace tilefuse::epilogue
