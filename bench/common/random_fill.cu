// Normal random numbers without curand: a 64-bit hash of (seed, index) gives two 24-bit uniforms,
// and Box-Muller turns them into one standard normal value.
#include "random_fill.hpp"

#include <algorithm>

#include <tilefuse/core/numeric_types.h>

#include "cuda_check.hpp"
#include "element_type.cuh"

namespace tilefuse::bench {
namespace {

// A 64-bit finalizer with full avalanche (the SplitMix64 output function).
__device__ __forceinline__ std::uint64_t hash64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_normal_kernel(T* data, std::int64_t count, std::uint64_t seed, float stddev) {
  std::int64_t const stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    std::uint64_t const h = hash64(seed ^ hash64(static_cast<std::uint64_t>(i)));
    // u1 in (0, 1] so that log(u1) is finite; u2 in [0, 1).
    float const u1 = (static_cast<float>(h >> 40) + 1.0f) * 0x1.0p-24f;
    float const u2 = static_cast<float>(h & 0xffffffull) * 0x1.0p-24f;
    float const z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    data[i] = convert<T>(stddev * z);
  }
}

}  // namespace

void fill_normal(void* data, DType dtype, std::int64_t count, std::uint64_t seed, float stddev,
                 cudaStream_t stream) {
  if (count <= 0) return;
  int constexpr kThreads = 256;
  std::int64_t const blocks = std::min<std::int64_t>((count + kThreads - 1) / kThreads, 65536);
  with_element_type(dtype, [&](auto element) {
    using T = decltype(element);
    fill_normal_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<T*>(data), count, seed,
                                                                              stddev);
  });
  BENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tilefuse::bench
