// The unfused conv2d peer's element-wise kernel and the bias widening (see conv_elementwise.hpp):
// grid-stride loops over 8-element (16-byte) packs when the row length and pointers allow, one element
// at a time otherwise.
#include "conv_elementwise.hpp"

#include <algorithm>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/ops.h>

#include "cuda_check.hpp"

namespace tilefuse::bench {
namespace {

int constexpr kThreads = 256;
int constexpr kPack = 8;  // 8 x 16-bit = 16 bytes

template <class T>
struct alignas(16) Pack16 {
  T v[kPack];
};

// relu((y + bias) + residual) in float, as the fused tree evaluates it.
__device__ __forceinline__ float bias_residual_relu(float y, float bias, float residual) {
  return epilogue::op::Relu::apply((y + bias) + residual);
}

template <class T>
__global__ void bias_residual_relu_packed(T* y, T const* bias, T const* residual, std::int64_t packs,
                                          std::int64_t cols) {
  std::int64_t const step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += step) {
    std::int64_t const col = (i * kPack) % cols;  // cols % 8 == 0: a pack stays inside one row
    Pack16<T> out = reinterpret_cast<Pack16<T> const*>(y)[i];
    Pack16<T> const res = reinterpret_cast<Pack16<T> const*>(residual)[i];
    Pack16<T> const b = *reinterpret_cast<Pack16<T> const*>(bias + col);
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      out.v[j] = convert<T>(bias_residual_relu(to_float(out.v[j]), to_float(b.v[j]), to_float(res.v[j])));
    }
    reinterpret_cast<Pack16<T>*>(y)[i] = out;
  }
}

template <class T>
__global__ void bias_residual_relu_scalar(T* y, T const* bias, T const* residual, std::int64_t count,
                                          std::int64_t cols) {
  std::int64_t const step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += step) {
    y[i] = convert<T>(bias_residual_relu(to_float(y[i]), to_float(bias[i % cols]), to_float(residual[i])));
  }
}

template <class T>
__global__ void widen_kernel(T const* src, float* dst, std::int64_t count) {
  std::int64_t const i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) dst[i] = to_float(src[i]);
}

// A few waves of blocks over the SMs; the grid-stride loops cover the rest.
unsigned blocks_for(std::int64_t items) {
  static int const waves_of_blocks = [] {
    int device = 0, sms = 0;
    BENCH_CUDA_CHECK(cudaGetDevice(&device));
    BENCH_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms * 32;
  }();
  return static_cast<unsigned>(std::clamp<std::int64_t>((items + kThreads - 1) / kThreads, 1, waves_of_blocks));
}

template <class T>
void bias_residual_relu_typed(T* y, T const* bias, T const* residual, std::int64_t rows, std::int64_t cols,
                              cudaStream_t stream) {
  std::int64_t const count = rows * cols;
  auto const aligned = [](void const* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (cols % kPack == 0 && aligned(y) && aligned(bias) && aligned(residual)) {
    bias_residual_relu_packed<<<blocks_for(count / kPack), kThreads, 0, stream>>>(y, bias, residual, count / kPack,
                                                                                  cols);
  } else {
    bias_residual_relu_scalar<<<blocks_for(count), kThreads, 0, stream>>>(y, bias, residual, count, cols);
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void bias_residual_relu_inplace(void* y, void const* bias, void const* residual, DType dtype, std::int64_t rows,
                                std::int64_t cols, cudaStream_t stream) {
  if (dtype == DType::kBF16) {
    using T = bfloat16_t;
    bias_residual_relu_typed(static_cast<T*>(y), static_cast<T const*>(bias), static_cast<T const*>(residual), rows,
                             cols, stream);
  } else {
    using T = half_t;
    bias_residual_relu_typed(static_cast<T*>(y), static_cast<T const*>(bias), static_cast<T const*>(residual), rows,
                             cols, stream);
  }
}

void widen_to_float(void const* src, DType dtype, float* dst, std::int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  auto const blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  if (dtype == DType::kBF16) {
    widen_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<bfloat16_t const*>(src), dst, count);
  } else {
    widen_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<half_t const*>(src), dst, count);
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
}

void conv_elementwise_kernel_facts(std::vector<KernelFacts>& out) {
  out.push_back(facts_of("peer bias_residual_relu (bf16, 16-byte packs)",
                         reinterpret_cast<void const*>(&bias_residual_relu_packed<bfloat16_t>)));
}

}  // namespace tilefuse::bench
