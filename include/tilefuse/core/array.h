// Array<T, N>: a fixed-size array that lives in registers on the device. Aligned to its size (up to 16
// bytes) so that an Array of 8 halves moves in one 16-byte load or store.
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse {

namespace detail {
TILEFUSE_HOST_DEVICE constexpr unsigned array_alignment(unsigned bytes, unsigned element_alignment) {
  unsigned a = 1;
  while (a * 2 <= bytes && a * 2 <= 16 && bytes % (a * 2) == 0) a *= 2;
  return a > element_alignment ? a : element_alignment;
}
}  // namespace detail

template <class T, int N>
struct alignas(detail::array_alignment(sizeof(T) * N, alignof(T))) Array {
  static_assert(N > 0, "Array needs at least one element");
  T elements[N];

  TILEFUSE_HOST_DEVICE static constexpr int size() { return N; }
  TILEFUSE_HOST_DEVICE constexpr T& operator[](int i) { return elements[i]; }
  TILEFUSE_HOST_DEVICE constexpr T const& operator[](int i) const { return elements[i]; }
  TILEFUSE_HOST_DEVICE constexpr T* data() { return elements; }
  TILEFUSE_HOST_DEVICE constexpr T const* data() const { return elements; }

  TILEFUSE_HOST_DEVICE constexpr void fill(T const& value) {
    for (int i = 0; i < N; ++i) elements[i] = value;
  }
  TILEFUSE_HOST_DEVICE static constexpr Array filled(T const& value) {
    Array a{};
    a.fill(value);
    return a;
  }
};

}  // namespace tilefuse
