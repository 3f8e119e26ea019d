// Compile-time facts about an epilogue tree that kernels use to shape their epilogue loops.
#pragma once

#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/epilogue/sinks.h>

#include <cuda/std/type_traits>

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
// may then stage those loads in shared memory ahead of the visits (Node::load_async). Its loads then
// depend on the element; what is left (Acc, constants, coordinates, math, Scalars) loads the same
// values everywhere, and a kernel may load them once per tile.
template <class Tree>
inline constexpr bool reads_memory =
    HasNodeOfKind<Tree, NodeKind::kAuxLoad, NodeKind::kRowBroadcast, NodeKind::kColBroadcast>::value;

// Whether the tree has no sink (a store or a reduction) at its root or below: it computes each
// element from the accumulator, the coordinate and inputs read at that element, and writes nothing,
// so a kernel may evaluate it in whatever register layout its accumulators have.
template <class Tree>
inline constexpr bool is_elementwise =
    !HasNodeOfKind<Tree, NodeKind::kStore, NodeKind::kRowReduce, NodeKind::kColReduce>::value;

// Whether the tree is one row-major Store of 16-bit D over an elementwise input (a bare GEMM,
// `relu(acc + bias) + residual`): a kernel may then evaluate the input in registers and stage only the
// 16-bit results. kLoadsPerElement: whether that input's loads depend on the element.
template <class Tree>
struct Stores16BitOfElementwise : cuda::std::false_type {};

template <NodeName Name, class T, class Input>
struct Stores16BitOfElementwise<Store<Name, T, Input, RowMajor>>
    : cuda::std::bool_constant<sizeof(T) == 2 && is_elementwise<Input>> {
  using InputNode = Input;
  static constexpr bool kLoadsPerElement = reads_memory<Input>;
};

template <class Tree>
inline constexpr bool stores_16bit_of_elementwise = Stores16BitOfElementwise<Tree>::value;

}  // namespace tilefuse::epilogue
