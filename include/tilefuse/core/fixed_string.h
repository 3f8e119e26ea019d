// A string literal usable as a template argument: how epilogue leaves get their names ("bias", "alpha").
#pragma once

#include <tilefuse/core/platform.h>

namespace tilefuse {

template <unsigned N>
struct FixedString {
  char chars[N] = {};

  TILEFUSE_HOST_DEVICE constexpr FixedString(char const (&text)[N]) {
    for (unsigned i = 0; i < N; ++i) chars[i] = text[i];
  }
  // Length without the terminating zero.
  TILEFUSE_HOST_DEVICE static constexpr unsigned size() { return N - 1; }
  TILEFUSE_HOST_DEVICE constexpr char const* c_str() const { return chars; }
};

}  // namespace tilefuse
