// Applies a whole epilogue tree to an accumulator tensor on the host, vector by vector exactly as a
// kernel's threads do: the reference every kernel's epilogue is checked against, and the CPU path of
// the quickstart.
#pragma once

#include <algorithm>

#include <tilefuse/core/status.hpp>
#include <tilefuse/core/tensor_ref.h>
#include <tilefuse/epilogue/arguments.hpp>
#include <tilefuse/epilogue/evaluate.h>
#include <tilefuse/epilogue/tree_walk.hpp>

namespace tilefuse::epilogue {

// Writes each reduction's identity into its output (host memory), as a device op does before launch.
template <class Tree>
void initialize_reductions_host(typename Tree::Params& params, ProblemShape const& shape) {
  for_each_node<Tree>(params, [&]<class Node>(typename Node::Params& p) {
    constexpr NodeKind kind = Node::kKind;
    if constexpr (kind == NodeKind::kRowReduce || kind == NodeKind::kColReduce) {
      index_t const length = kind == NodeKind::kRowReduce ? shape.rows : shape.cols;
      for (index_t b = 0; b < shape.batch; ++b) {
        std::fill_n(p.data + b * p.batch_stride, length, Node::Reduction::identity());
      }
    }
  });
}

// Visits every output element in vectors of V consecutive columns (the last one of a row partial).
template <class Tree, int V = 8, class AccRef>
void apply_host(typename Tree::Params const& params, AccRef acc, ProblemShape const& shape) {
  for (index_t b = 0; b < shape.batch; ++b) {
    for (index_t r = 0; r < shape.rows; ++r) {
      for (index_t c = 0; c < shape.cols; c += V) {
        Fragment<V> f;
        f.row = r;
        f.col = c;
        f.batch = b;
        f.valid = static_cast<int>(std::min<index_t>(V, shape.cols - c));
        for (int i = 0; i < V; ++i) f.acc[i] = i < f.valid ? to_float(acc.at(r, c + i, b)) : 0.0f;
        evaluate<Tree>(params, f);
      }
    }
  }
}

// Binds the arguments, initialises reductions and applies the tree: the whole host epilogue.
template <class Tree, int V = 8, class AccRef>
Status run_host(EpilogueArguments<Tree> const& args, AccRef acc, ProblemShape const& shape) {
  typename Tree::Params params;
  TILEFUSE_RETURN_IF_ERROR(args.bind(shape, &params));
  initialize_reductions_host<Tree>(params, shape);
  apply_host<Tree, V>(params, acc, shape);
  return {};
}

}  // namespace tilefuse::epilogue
