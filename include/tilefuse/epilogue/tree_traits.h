// Compile-time facts about an epilogue tree that kernels use to shape their epilogue loops.
#pragma once

#include <tilefuse/epilogue/fragment.h>

namespace tilefuse::epilogue {

template <class Node>
struct LoadsAuxiliary;

template <class List>
struct AnyLoadsAuxiliary;

template <class... Nodes>
struct AnyLoadsAuxiliary<NodeList<Nodes...>> {
  static constexpr bool value = (LoadsAuxiliary<Nodes>::value || ... || false);
};

// Whether the tree reads a matrix-shaped input (an AuxLoad: a residual, C): its visits then wait on
// global loads, and a kernel may prefer wider visits (fewer serialized round trips).
template <class Node>
struct LoadsAuxiliary {
  static constexpr bool value = Node::kKind == NodeKind::kAuxLoad || AnyLoadsAuxiliary<typename Node::Children>::value;
};

template <class Tree>
inline constexpr bool loads_auxiliary = LoadsAuxiliary<Tree>::value;

template <class Node>
struct LoadsGlobal;

template <class List>
struct AnyLoadsGlobal;

template <class... Nodes>
struct AnyLoadsGlobal<NodeList<Nodes...>> {
  static constexpr bool value = (LoadsGlobal<Nodes>::value || ... || false);
};

// Whether any node's load() reads global memory (a residual, a bias or other broadcast vector, a scalar
// that may come from a pointer): kernels then issue a fragment's loads ahead of the previous stores.
template <class Node>
struct LoadsGlobal {
  static constexpr bool value = Node::kKind == NodeKind::kAuxLoad || Node::kKind == NodeKind::kRowBroadcast ||
                                Node::kKind == NodeKind::kColBroadcast || Node::kKind == NodeKind::kScalar ||
                                AnyLoadsGlobal<typename Node::Children>::value;
};

template <class Tree>
inline constexpr bool loads_global = LoadsGlobal<Tree>::value;

}  // namespace tilefuse::epilogue
