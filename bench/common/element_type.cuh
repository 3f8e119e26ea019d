// The element type each DType keeps in device memory, for the benchmark's own kernels (random fill,
// reference, gather): with_element_type calls body(T{}) with T = bfloat16_t, half_t or float (tf32 is
// stored as fp32; only the tensor cores read it as tf32). One switch, so a new DType cannot silently
// take another type's branch.
#pragma once

#include <utility>

#include <tilefuse/core/numeric_types.h>

#include "cuda_check.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

template <class Body>
decltype(auto) with_element_type(DType dtype, Body&& body) {
  switch (dtype) {
    case DType::kBF16: return std::forward<Body>(body)(bfloat16_t{});
    case DType::kFP16: return std::forward<Body>(body)(half_t{});
    case DType::kTF32: return std::forward<Body>(body)(float{});
  }
  throw BenchError("unknown DType " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace tilefuse::bench
