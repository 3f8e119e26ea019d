// Random normal inputs, generated on the device: benchmarks never run on zeros or patterned values
// (tensor-core power, and so clocks, depend on the data).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "problems.hpp"

namespace tilefuse::bench {

// data[i] = stddev * z_i with z_i ~ N(0, 1), a pure function of (seed, i): the same seed gives the
// same tensor on every GPU and run. Rounded to the element type (tf32: stored as float, not rounded).
void fill_normal(void* data, DType dtype, std::int64_t count, std::uint64_t seed, float stddev,
                 cudaStream_t stream);

}  // namespace tilefuse::bench
