// The element-wise kernel of the unfused conv2d peer (cuDNN conv, then this): y = relu(y + bias[k] +
// residual) in one pass, with 16-byte loads and stores where alignment allows, so the unfused peer is
// as fast as one separate kernel can be. Also the bias conversion cuDNN's fused call may need.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "kernel_facts.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

// y[r, c] = relu(y[r, c] + bias[c] + residual[r, c]) for a packed row-major rows x cols matrix, in float
// and rounded once, the order tilefuse's Relu<Add<Add<Acc, bias>, residual>> uses.
void bias_residual_relu_inplace(void* y, void const* bias, void const* residual, DType dtype, std::int64_t rows,
                                std::int64_t cols, cudaStream_t stream);

// dst[i] = float(src[i]) for i < count.
void widen_to_float(void const* src, DType dtype, float* dst, std::int64_t count, cudaStream_t stream);

// The element-wise peer's resource use for the SASS facts table.
void conv_elementwise_kernel_facts(std::vector<KernelFacts>& out);

}  // namespace tilefuse::bench
