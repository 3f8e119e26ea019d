// Device helpers of the epilogue's reductions: fill_strided_kernel writes a reduction's identity into
// its output before a kernel combines into it (`batches` runs of `length` floats, `batch_stride` apart);
// reduce_vector_kernel combines a vector of results into one value.
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

// out[0] = R's combination of in[0 .. length): one block (a multiple of 32 threads, at most 1024)
// reduces a vector of results to one value, e.g. the per-row amax of an epilogue's RowReduce to the
// tensor's amax.
template <class R>
__global__ void reduce_vector_kernel(float const* in, index_t length, float* out) {
  __shared__ float per_warp[32];
  float v = R::identity();
  for (index_t i = threadIdx.x; i < length; i += blockDim.x) v = R::combine(v, in[i]);
  for (int offset = 16; offset > 0; offset /= 2) v = R::combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? per_warp[threadIdx.x] : R::identity();
    for (int offset = 16; offset > 0; offset /= 2) v = R::combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (threadIdx.x == 0) *out = v;
  }
}

}  // namespace tilefuse::epilogue
