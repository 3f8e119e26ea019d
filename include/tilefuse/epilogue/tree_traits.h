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
struct ReadsMemory;

template <class List>
struct AnyReadsMemory;

template <class... Nodes>
struct AnyReadsMemory<NodeList<Nodes...>> {
  static constexpr bool value = (ReadsMemory<Nodes>::value || ... || false);
};

// Whether the tree reads a tensor from global memory (a residual, a bias, a per-row scale): a kernel
// may then stage those loads in shared memory ahead of the visits (Node::load_async).
template <class Node>
struct ReadsMemory {
  static constexpr bool value = Node::kKind == NodeKind::kAuxLoad || Node::kKind == NodeKind::kRowBroadcast ||
                                Node::kKind == NodeKind::kColBroadcast ||
                                AnyReadsMemory<typename Node::Children>::value;
};

template <class Tree>
inline constexpr bool reads_memory = ReadsMemory<Tree>::value;

}  // namespace tilefuse::epilogue
