// The element-wise kernels of the unfused peers: bias + GELU(tanh) in place, and the residual add.
// They use 16-byte loads and stores where alignment allows, so the unfused peers are as fast as
// separate kernels can be and the fused comparison is fair.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "kernel_facts.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

// d[r, c] = gelu_tanh(d[r, c] + bias[c]) for a packed row-major rows x cols matrix (rows = M * batch:
// the bias is shared by the batch). GELU is tilefuse's own op::GeluTanh, so the work equals the fused one.
void bias_gelu_inplace(void* d, void const* bias, DType dtype, std::int64_t rows, std::int64_t cols,
                       cudaStream_t stream);

// d[i] = d[i] + c[i] for i < count.
void residual_add_inplace(void* d, void const* c, DType dtype, std::int64_t count, cudaStream_t stream);

// The kernels' resource use (registers, local memory) for the SASS facts table.
void elementwise_kernel_facts(std::vector<KernelFacts>& out);

}  // namespace tilefuse::bench
