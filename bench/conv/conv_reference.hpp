// The conv2d correctness guard's reference: the output matrix of a conv2d row in float64 at sampled
// coordinates, computed straight from the inputs by direct convolution (one warp per sample; no cuDNN,
// no tilefuse, and not the implicit-GEMM mapping tilefuse's kernels use). The comparison itself is the
// GEMM bench's (reference_check.hpp): the same error metrics and tolerances.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "conv_operands.hpp"
#include "conv_problems.hpp"
#include "reference_check.hpp"

namespace tilefuse::bench {

// The samples: choose_samples(1, rows, cols, count, seed) over the mode's output matrix. With the fused
// epilogue the reference is relu(conv + bias[k] + residual).
SampledReference conv_sampled_reference(ConvProblem const& problem, ConvOperands const& ops, int count,
                                        std::uint64_t seed, cudaStream_t stream);

}  // namespace tilefuse::bench
