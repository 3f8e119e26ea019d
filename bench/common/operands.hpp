// Rotating operand sets: enough copies of A, B, D (and bias, C) that together they are larger than
// twice the L2 cache, so each timed call reads its inputs from DRAM as it would in a real model,
// instead of finding the previous call's data in L2. Each timed call uses the next set in rotation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "problems.hpp"

namespace tilefuse::bench {

// The device pointers of one set, with the packed strides of its problem.
struct GemmOperands {
  void const* a = nullptr;
  void const* b = nullptr;
  void* d = nullptr;
  void const* bias = nullptr;  // fused epilogue only: N elements, shared by the batch
  void const* c = nullptr;     // fused epilogue only: the residual, row-major M x N per batch entry
  PackedStrides strides{};
  void* output() const { return d; }
};

// Carves one set's tensors, in order, out of its allocation: each piece 256-byte aligned (what cudaMalloc
// gives, and what cuBLASLt's heuristics assume), a piece of 0 bytes null. The GEMM and conv pools share it.
class SetCarver {
 public:
  explicit SetCarver(unsigned char* base) : base_(base) {}
  void* take(std::size_t bytes);
  // The bytes of one set of pieces of these sizes (0: absent), each aligned.
  static std::size_t bytes_for(std::initializer_list<std::size_t> pieces);

 private:
  unsigned char* base_;
  std::size_t used_ = 0;
};

// Fills one set's tensor with random normal values (stddev 1) from the set's seed and the tensor's number;
// nothing for a null tensor (one the row does not read).
void fill_set_tensor(void const* data, DType dtype, std::int64_t elements, std::uint64_t set_seed, int tensor,
                     cudaStream_t stream);

// What a row's operand sets may take: nine tenths of the device's free memory after `reserve` bytes (the peers'
// and tilefuse's workspaces, the check's buffers), 0 where less is free.
std::size_t operand_memory_budget(std::size_t reserve);

// How many sets of bytes_per_set a row allocates: enough for 2 x l2_bytes, at least 2, at most 1024 and
// what memory_budget holds. Throws BenchError when not even one set fits.
std::size_t rotating_set_count(std::size_t bytes_per_set, std::int64_t l2_bytes, std::size_t memory_budget);

// The rotating sets of one row's operands (Operands: a struct of device pointers with output()), each set one
// allocation carved by SetCarver: at least 2, enough for 2 x l2_bytes, at most what fits in memory_budget bytes
// (and 1024). The GEMM and conv pools are this with their own carving and fills.
template <class Operands>
class RotatingSets {
 public:
  int size() const { return static_cast<int>(sets_.size()); }
  Operands const& operator[](int i) const { return sets_[static_cast<std::size_t>(i)]; }
  std::vector<Operands> const& sets() const { return sets_; }
  std::size_t bytes_per_set() const { return bytes_per_set_; }

  // Fills the output of set i with 0xFF bytes (NaN in bf16, fp16 and fp32): an element a kernel forgets to
  // write is then caught by the check.
  void poison_output(int i, cudaStream_t stream) const {
    BENCH_CUDA_CHECK(cudaMemsetAsync((*this)[i].output(), 0xff, output_bytes_, stream));
  }

 protected:
  // Allocates the sets and makes each one: make(carver, set seed) carves the set's tensors and fills its inputs.
  template <class Make>
  void build(std::size_t bytes_per_set, std::size_t output_bytes, std::int64_t l2_bytes, std::size_t memory_budget,
             std::uint64_t seed, cudaStream_t stream, Make&& make) {
    bytes_per_set_ = bytes_per_set;
    output_bytes_ = output_bytes;
    std::size_t const count = rotating_set_count(bytes_per_set_, l2_bytes, memory_budget);
    for (std::size_t s = 0; s < count; ++s) {
      memory_.emplace_back(bytes_per_set_);
      SetCarver carve(memory_.back().as<unsigned char>());
      sets_.push_back(make(carve, seed + 0x100 * s));
    }
    BENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  std::vector<DeviceBuffer> memory_;  // one allocation per set
  std::vector<Operands> sets_;
  std::size_t bytes_per_set_ = 0;
  std::size_t output_bytes_ = 0;
};

// Inputs random normal (stddev 1), a different seed per set and tensor; D is left unwritten.
class OperandPool : public RotatingSets<GemmOperands> {
 public:
  OperandPool(GemmProblem const& problem, std::int64_t l2_bytes, std::size_t memory_budget, std::uint64_t seed,
              cudaStream_t stream);
};

}  // namespace tilefuse::bench
