// Allocation and random initialisation of the rotating operand sets.
#include "operands.hpp"

#include <algorithm>

#include "random_fill.hpp"

namespace tilefuse::bench {
namespace {

constexpr std::size_t kAlignment = 256;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

void* SetCarver::take(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = base_ + used_;
  used_ += aligned(bytes);
  return p;
}

std::size_t SetCarver::bytes_for(std::initializer_list<std::size_t> pieces) {
  std::size_t total = 0;
  for (std::size_t b : pieces) total += aligned(b);
  return total;
}

void fill_set_tensor(void const* data, DType dtype, std::int64_t elements, std::uint64_t set_seed, int tensor,
                     cudaStream_t stream) {
  if (data != nullptr) fill_normal(const_cast<void*>(data), dtype, elements, set_seed + tensor, 1.0f, stream);
}

std::size_t operand_memory_budget(std::size_t reserve) {
  std::size_t free = 0, total = 0;
  BENCH_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free > reserve ? (free - reserve) / 10 * 9 : 0;
}

std::size_t rotating_set_count(std::size_t bytes_per_set, std::int64_t l2_bytes, std::size_t memory_budget) {
  std::size_t const wanted =
      (2 * static_cast<std::size_t>(std::max<std::int64_t>(l2_bytes, 0)) + bytes_per_set - 1) / bytes_per_set;
  std::size_t count = std::clamp<std::size_t>(wanted, 2, 1024);
  count = std::min(count, memory_budget / bytes_per_set);
  if (count == 0) {
    throw BenchError("one operand set needs " + std::to_string(bytes_per_set >> 20) + " MiB, more than the " +
                     std::to_string(memory_budget >> 20) + " MiB this run may use");
  }
  return count;
}

OperandPool::OperandPool(GemmProblem const& p, std::int64_t l2_bytes, std::size_t memory_budget, std::uint64_t seed,
                         cudaStream_t stream) {
  auto const e = static_cast<std::size_t>(element_bytes(p.dtype));
  auto const batch = static_cast<std::size_t>(p.batch);
  auto const m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
  bool const fused = p.epilogue == EpilogueKind::kBiasGeluResidual;

  std::size_t const a_bytes = e * batch * m * k;
  std::size_t const b_bytes = e * batch * k * n;
  std::size_t const d_bytes = e * batch * m * n;
  std::size_t const bias_bytes = fused ? e * n : 0;
  std::size_t const c_bytes = fused ? e * batch * m * n : 0;
  PackedStrides const strides = packed_strides(p);
  build(SetCarver::bytes_for({a_bytes, b_bytes, d_bytes, bias_bytes, c_bytes}), d_bytes, l2_bytes, memory_budget, seed,
        stream, [&](SetCarver& carve, std::uint64_t set_seed) {
          GemmOperands ops;
          ops.a = carve.take(a_bytes);
          ops.b = carve.take(b_bytes);
          ops.d = carve.take(d_bytes);
          ops.bias = carve.take(bias_bytes);
          ops.c = carve.take(c_bytes);
          ops.strides = strides;
          fill_set_tensor(ops.a, p.dtype, p.batch * p.m * p.k, set_seed, 1, stream);
          fill_set_tensor(ops.b, p.dtype, p.batch * p.k * p.n, set_seed, 2, stream);
          fill_set_tensor(ops.bias, p.dtype, p.n, set_seed, 3, stream);
          fill_set_tensor(ops.c, p.dtype, p.batch * p.m * p.n, set_seed, 4, stream);
          return ops;
        });
}

}  // namespace tilefuse::bench
