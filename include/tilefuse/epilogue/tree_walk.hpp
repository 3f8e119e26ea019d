// Generic walks over an epilogue tree, on the host: over its node types (to list argument names) and
// over its Params (to bind arguments). Node code stays free of this machinery.
#pragma once

#include <cuda/std/tuple>
#include <string>
#include <utility>

#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

// Calls f.template operator()<Node>() for every node of the tree, parents before children.
template <class Node, class F>
void for_each_node_type(F&& f) {
  f.template operator()<Node>();
  [&]<class... Kids>(NodeList<Kids...>) { (for_each_node_type<Kids>(f), ...); }(typename Node::Children{});
}

// Calls f.template operator()<Node>(params) for every node with its Params, parents before children.
template <class Node, class Params, class F>
void for_each_node(Params& params, F&& f) {
  f.template operator()<Node>(params);
  if constexpr (Node::Children::kSize > 0) {
    [&]<class... Kids>(NodeList<Kids...>) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (for_each_node<Kids>(cuda::std::get<I>(params.children), f), ...);
      }(std::index_sequence_for<Kids...>{});
    }(typename Node::Children{});
  }
}

// True for the nodes that take a run-time argument by name.
template <class Node>
constexpr bool is_named_node() {
  constexpr NodeKind k = Node::kKind;
  return k == NodeKind::kScalar || k == NodeKind::kRowBroadcast || k == NodeKind::kColBroadcast ||
         k == NodeKind::kAuxLoad || k == NodeKind::kStore || k == NodeKind::kRowReduce ||
         k == NodeKind::kColReduce;
}

// The name of a named node ("bias").
template <class Node>
std::string node_name() {
  return Node::kName.chars().text;
}

// True when any node of the tree reads the element's coordinate (Row, Col, Batch).
template <class Tree>
bool uses_coordinates() {
  bool found = false;
  for_each_node_type<Tree>([&]<class Node>() { found = found || Node::kKind == NodeKind::kCoordinate; });
  return found;
}

}  // namespace tilefuse::epilogue
