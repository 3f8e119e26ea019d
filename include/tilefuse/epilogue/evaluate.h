// evaluate<Tree>(params, f): a fragment's loads and visit in one go, for kernels and drivers that do
// not issue loads ahead of stores (see compute.h for the three steps of a node).
#pragma once

#include <tilefuse/core/array.h>
#include <tilefuse/core/platform.h>
#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

template <class Tree, int V>
TILEFUSE_HOST_DEVICE inline Array<float, V> evaluate(typename Tree::Params const& params, Fragment<V> const& f) {
  return Tree::visit(params, f, Tree::load(params, f));
}

}  // namespace tilefuse::epilogue
