// Element-wise kernels of the unfused peers (see elementwise.hpp): grid-stride loops over 8-element
// (16-byte) packs when the row length and pointers allow it, one element at a time otherwise.
#include "elementwise.hpp"

#include <algorithm>

#include <tilefuse/core/numeric_types.h>
#include <tilefuse/epilogue/ops.h>

#include "cuda_check.hpp"

namespace tilefuse::bench {
namespace {

int constexpr kThreads = 256;
int constexpr kPack = 8;

template <class T>
struct alignas(16) Pack {
  T v[kPack];
};

__device__ __forceinline__ float gelu(float x) { return epilogue::op::GeluTanh::apply(x); }

template <class T>
__global__ void bias_gelu_packed(T* d, T const* bias, std::int64_t packs, std::int64_t cols) {
  std::int64_t const stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
    std::int64_t const col = (i * kPack) % cols;  // cols % 8 == 0: a pack never crosses a row
    Pack<T> x = reinterpret_cast<Pack<T> const*>(d)[i];
    Pack<T> const b = *reinterpret_cast<Pack<T> const*>(bias + col);
#pragma unroll
    for (int j = 0; j < kPack; ++j) x.v[j] = convert<T>(gelu(to_float(x.v[j]) + to_float(b.v[j])));
    reinterpret_cast<Pack<T>*>(d)[i] = x;
  }
}

template <class T>
__global__ void bias_gelu_scalar(T* d, T const* bias, std::int64_t count, std::int64_t cols) {
  std::int64_t const stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    d[i] = convert<T>(gelu(to_float(d[i]) + to_float(bias[i % cols])));
  }
}

template <class T>
__global__ void residual_add_packed(T* d, T const* c, std::int64_t packs) {
  std::int64_t const stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
    Pack<T> x = reinterpret_cast<Pack<T> const*>(d)[i];
    Pack<T> const y = reinterpret_cast<Pack<T> const*>(c)[i];
#pragma unroll
    for (int j = 0; j < kPack; ++j) x.v[j] = convert<T>(to_float(x.v[j]) + to_float(y.v[j]));
    reinterpret_cast<Pack<T>*>(d)[i] = x;
  }
}

template <class T>
__global__ void residual_add_scalar(T* d, T const* c, std::int64_t count) {
  std::int64_t const stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    d[i] = convert<T>(to_float(d[i]) + to_float(c[i]));
  }
}

// Enough blocks to fill the GPU several times over; the grid-stride loops do the rest.
unsigned grid_for(std::int64_t work) {
  static int const sm_count = [] {
    int device = 0, count = 0;
    BENCH_CUDA_CHECK(cudaGetDevice(&device));
    BENCH_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  std::int64_t const blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, std::int64_t{sm_count} * 32));
}

bool aligned16(void const* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// The packs are 8 elements of 16 bits; the fused epilogue is benchmarked in bf16 / fp16 only.
void require_16_bit(DType dtype, char const* kernel) {
  if (dtype != DType::kBF16 && dtype != DType::kFP16) {
    throw BenchError(std::string(kernel) + " is built for bf16 and fp16, not " + name_of(dtype));
  }
}

template <class T>
void bias_gelu_typed(T* d, T const* bias, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  std::int64_t const count = rows * cols;
  if (cols % kPack == 0 && aligned16(d) && aligned16(bias)) {
    bias_gelu_packed<<<grid_for(count / kPack), kThreads, 0, stream>>>(d, bias, count / kPack, cols);
  } else {
    bias_gelu_scalar<<<grid_for(count), kThreads, 0, stream>>>(d, bias, count, cols);
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void residual_add_typed(T* d, T const* c, std::int64_t count, cudaStream_t stream) {
  if (count % kPack == 0 && aligned16(d) && aligned16(c)) {
    residual_add_packed<<<grid_for(count / kPack), kThreads, 0, stream>>>(d, c, count / kPack);
  } else {
    residual_add_scalar<<<grid_for(count), kThreads, 0, stream>>>(d, c, count);
  }
  BENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void bias_gelu_inplace(void* d, void const* bias, DType dtype, std::int64_t rows, std::int64_t cols,
                       cudaStream_t stream) {
  require_16_bit(dtype, "bias_gelu_inplace");
  if (dtype == DType::kBF16) {
    bias_gelu_typed(static_cast<bfloat16_t*>(d), static_cast<bfloat16_t const*>(bias), rows, cols, stream);
  } else {
    bias_gelu_typed(static_cast<half_t*>(d), static_cast<half_t const*>(bias), rows, cols, stream);
  }
}

void residual_add_inplace(void* d, void const* c, DType dtype, std::int64_t count, cudaStream_t stream) {
  require_16_bit(dtype, "residual_add_inplace");
  if (dtype == DType::kBF16) {
    residual_add_typed(static_cast<bfloat16_t*>(d), static_cast<bfloat16_t const*>(c), count, stream);
  } else {
    residual_add_typed(static_cast<half_t*>(d), static_cast<half_t const*>(c), count, stream);
  }
}

void elementwise_kernel_facts(std::vector<KernelFacts>& out) {
  out.push_back(facts_of("peer bias_gelu (bf16, 16-byte packs)",
                         reinterpret_cast<void const*>(&bias_gelu_packed<bfloat16_t>)));
  out.push_back(facts_of("peer residual_add (bf16, 16-byte packs)",
                         reinterpret_cast<void const*>(&residual_add_packed<bfloat16_t>)));
}

}  // namespace tilefuse::bench
