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
struct ReadsTensors;

template <class List>
struct AnyReadsTensors;

template <class... Nodes>
struct AnyReadsTensors<NodeList<Nodes...>> {
  static constexpr bool value = (ReadsTensors<Nodes>::value || ... || false);
};

// Whether the tree reads a tensor input (a residual, a bias or another broadcast vector): its epilogue
// then waits on global memory, which the Hopper GEMM's tile choice takes into account.
template <class Node>
struct ReadsTensors {
  static constexpr bool value = Node::kKind == NodeKind::kAuxLoad || Node::kKind == NodeKind::kRowBroadcast ||
                                Node::kKind == NodeKind::kColBroadcast || AnyReadsTensors<typename Node::Children>::value;
};

template <class Tree>
inline constexpr bool reads_tensors = ReadsTensors<Tree>::value;

}  // namespace tilefuse::epilogue
