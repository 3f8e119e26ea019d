// Rotating operand sets of a conv2d row: enough copies of the mode's two inputs, its output (and, fused,
// the bias and residual) that together they exceed twice the L2 cache, so every timed call reads its
// inputs from DRAM (as in operands.hpp for the GEMM). Each timed call uses the next set in rotation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "conv_problems.hpp"
#include "operands.hpp"  // RotatingSets

namespace tilefuse::bench {

// The device pointers of one set; the inputs a mode does not read are null.
struct ConvOperands {
  void const* x = nullptr;           // fprop, wgrad: (N, H, W, C)
  void const* w = nullptr;           // fprop, dgrad: (K, R, S, C)
  void const* dy = nullptr;          // dgrad, wgrad: (N, P, Q, K)
  void* out = nullptr;               // y, dx or dw: the output matrix, packed row-major
  void const* bias = nullptr;        // fused: K values in the dtype (tilefuse, the element-wise peer)
  void const* bias_float = nullptr;  // fused: the same K values in float (for cuDNN's fused call)
  void const* residual = nullptr;    // fused: (N, P, Q, K)
  void* output() const { return out; }
};

// Inputs random normal (stddev 1), a different seed per set and tensor; the output is left unwritten.
class ConvOperandPool : public RotatingSets<ConvOperands> {
 public:
  ConvOperandPool(ConvProblem const& problem, std::int64_t l2_bytes, std::size_t memory_budget, std::uint64_t seed,
                  cudaStream_t stream);
};

}  // namespace tilefuse::bench
