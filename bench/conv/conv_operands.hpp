// Rotating operand sets of a conv2d row: enough copies of the mode's two inputs, its output (and, fused,
// the bias and residual) that together they exceed twice the L2 cache, so every timed call reads its
// inputs from DRAM (as in operands.hpp for the GEMM). Each timed call uses the next set in rotation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "conv_problems.hpp"
#include "cuda_check.hpp"

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
};

class ConvOperandPool {
 public:
  // Sets: at least 2, enough for 2 x l2_bytes, at most what fits in memory_budget bytes (and 1024).
  // Inputs are random normal (stddev 1), a different seed per set and tensor; the output is unwritten.
  ConvOperandPool(ConvProblem const& problem, std::int64_t l2_bytes, std::size_t memory_budget, std::uint64_t seed,
                  cudaStream_t stream);

  int size() const { return static_cast<int>(sets_.size()); }
  ConvOperands const& operator[](int i) const { return sets_[static_cast<std::size_t>(i)]; }
  std::vector<ConvOperands> const& sets() const { return sets_; }
  std::size_t bytes_per_set() const { return bytes_per_set_; }

  // Fills the output of set i with 0xFF bytes (NaN in bf16 and fp16), so an element a kernel forgets to
  // write fails the check.
  void poison_output(int i, cudaStream_t stream) const;

 private:
  std::vector<DeviceBuffer> memory_;  // one allocation per set
  std::vector<ConvOperands> sets_;
  std::size_t bytes_per_set_ = 0;
  std::size_t out_bytes_ = 0;
};

}  // namespace tilefuse::bench
