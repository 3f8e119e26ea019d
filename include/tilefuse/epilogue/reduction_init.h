// Writes a reduction's identity into its output on the device before a kernel combines into it:
// `batches` runs of `length` floats, `batch_stride` apart.
#pragma once

#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::epilogue {

template <class T>
__global__ void fill_strided_kernel(T* data, index_t length, index_t batches, index_t batch_stride, T value) {
  index_t const total = length * batches;
  for (index_t i = index_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += index_t{gridDim.x} * blockDim.x) {
    data[(i / length) * batch_stride + i % length] = value;
  }
}

}  // namespace tilefuse::epilogue
