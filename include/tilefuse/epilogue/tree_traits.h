// Compile-time facts about an epilogue tree that kernels use to shape their epilogue loops.
#pragma once

#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

template <class Node, NodeKind... Kinds>
struct HasNodeOfKind;

template <class List, NodeKind... Kinds>
struct AnyHasNodeOfKind;

template <class... Nodes, NodeKind... Kinds>
struct AnyHasNodeOfKind<NodeList<Nodes...>, Kinds...> {
  static constexpr bool value = (HasNodeOfKind<Nodes, Kinds...>::value || ... || false);
};

// Whether the tree has a node of one of `Kinds`, at its root or below.
template <class Node, NodeKind... Kinds>
struct HasNodeOfKind {
  static constexpr bool value =
      ((Node::kKind == Kinds) || ...) || AnyHasNodeOfKind<typename Node::Children, Kinds...>::value;
};

// Whether the tree reads a matrix-shaped input (an AuxLoad: a residual, C): its visits then wait on
// global loads, and a kernel may prefer wider visits (fewer serialized round trips).
template <class Tree>
inline constexpr bool loads_auxiliary = HasNodeOfKind<Tree, NodeKind::kAuxLoad>::value;

// Whether the tree reads a tensor from global memory (a residual, a bias, a per-row scale): a kernel
// may then stage those loads in shared memory ahead of the visits (Node::load_async).
template <class Tree>
inline constexpr bool reads_memory =
    HasNodeOfKind<Tree, NodeKind::kAuxLoad, NodeKind::kRowBroadcast, NodeKind::kColBroadcast>::value;

}  // namespace tilefuse::epilogue
