// Every node has three steps, each applied to the whole subtree below it:
//   load(p, f)              reads them, as stored (Node::Loaded<V>: a residual stays bf16);
//   load_async(p, f, into)  the same into shared memory, by cp.async where the vector allows (the
//                           Hopper kernel stages chunks of loads ahead of their visits this way);
//   visit(p, f, loaded)     converts, computes and stores, from what load read and nothing else.
// evaluate.h runs load and visit in one go.
//
// What an epilogue node sees: a short vector of consecutive output elements of one row, with the
// coordinate of its first element. Kernels stage the accumulator tile so that each thread owns such
// vectors (16-byte loads and stores of C, bias and D); the host driver walks the output the same way.
#pragma once

#include <tilefuse/core/array.h>
#include <tilefuse/core/coord.h>
#include <tilefuse/core/platform.h>

namespace tilefuse::epilogue {

// V consecutive elements (row, col + i), i < V, of output matrix `batch`.
template <int V>
struct Fragment {
  Array<float, V> acc;  // the accumulator, converted to the compute type
  index_t row = 0;
  index_t col = 0;  // column of element 0
  index_t batch = 0;
  int valid = V;  // elements [0, valid) lie inside the output; the rest are padding and never stored
};

// True when `ptr` may be read or written as one Array<T, V> (one vector instruction).
template <class T, int V>
TILEFUSE_HOST_DEVICE inline bool is_vector_aligned(T const* ptr) {
  return reinterpret_cast<unsigned long long>(ptr) % alignof(Array<T, V>) == 0;
}

// The kind of each node: lets host code (argument binding, validation) treat nodes generically.
enum class NodeKind {
  kAcc,
  kScalar,
  kConstant,
  kRowBroadcast,
  kColBroadcast,
  kAuxLoad,
  kCoordinate,
  kCompute,
  kStore,
  kRowReduce,
  kColReduce,
};

// The child node types of a node, for generic tree walks.
template <class... Nodes>
struct NodeList {
  static constexpr int kSize = sizeof...(Nodes);
};

}  // namespace tilefuse::epilogue
