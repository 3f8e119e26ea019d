// The calls of one round of a timed run (timing.cu: time_rounds): which implementation runs on which
// operand set, in which order. Host-only and free of CUDA, so tests/unit/bench checks it.
#pragma once

#include <cstddef>
#include <vector>

namespace tilefuse::bench {

struct RoundCall {
  std::size_t op;  // index into the round's implementations
  int set;         // operand set it runs on
};

// Round `round` of `ops` implementations over `num_sets` operand sets.
//   same sets (spread = false): every op on set round % num_sets, in order: ops that must see the same
//     operands (time_paired: a fused epilogue over the plain one on the same data);
//   spread: op j on set (round + j * num_sets / ops) % num_sets, forwards in even rounds and backwards in
//     odd ones: no op reads inputs another op has just brought into L2, and none always goes first.
//     NOTES (v129g): with every op on the same set, the second op of each round found its inputs in L2
//     (cuDNN's wgrad #0 0.0258 -> 0.0205 ms behind ours). With fewer sets than ops some ops share a set.
inline std::vector<RoundCall> round_calls(int round, std::size_t ops, int num_sets, bool spread) {
  std::vector<RoundCall> calls(ops);
  for (std::size_t j = 0; j < ops; ++j) {
    std::size_t const op = spread && round % 2 == 1 ? ops - 1 - j : j;
    int const offset = spread ? static_cast<int>(op * static_cast<std::size_t>(num_sets) / ops) : 0;
    calls[j] = RoundCall{op, (round + offset) % num_sets};
  }
  return calls;
}

}  // namespace tilefuse::bench
